#include "experiments/config/run_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <span>
#include <sstream>
#include <thread>

#include "experiments/config/aggregation_registry.h"
#include "experiments/config/config_error.h"
#include "experiments/config/data_source.h"
#include "experiments/config/factories.h"
#include "experiments/config/memory_budget.h"
#include "experiments/config/optimizer_reader.h"
#include "experiments/config/requirements.h"
#include "models/base/random_stream.h"
#include "sim/regrouping.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::experiments {

std::unique_ptr<sim::SimulatedCluster> RunPlan::make_cluster(std::uint64_t delay_seed) const {
  return std::make_unique<sim::SimulatedCluster>(make_delays(),
                                                 scheme.rule,
                                                 stragglers,
                                                 delay_seed,
                                                 network,
                                                 sim::regrouping_of(*scheme.code),
                                                 collective);
}

std::unique_ptr<sim::Optimizer> RunPlan::make_optimizer() const {
  Eigen::VectorXd x0 = initial_point.size() > 0
                           ? initial_point
                           : Eigen::VectorXd::Zero(objective ? objective->dimension() : 0);
  switch (optimizer) {
    case OptimizerKind::kGd:
      return std::make_unique<sim::GradientDescent>(std::move(x0), step, schedule, momentum);
    case OptimizerKind::kNesterov:
      return std::make_unique<sim::Nesterov>(std::move(x0), step, 0.0, schedule);
    case OptimizerKind::kErasureHeadAgd:
      return std::make_unique<sim::ReferenceAgd>(std::move(x0), step, schedule);
  }
  return nullptr;
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(fmt::format("{}: cannot open config file: it is a folder", path.string()));
  }
  // Regular files only: /dev/zero would read without end, a FIFO would block until a writer.
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw ConfigError(fmt::format(
        "{}: cannot open config file: not a regular file; expected a JSON file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot open config file", path.string()));
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxConfigBytes) {
    throw ConfigError(fmt::format(
        "{}: config file too large; got {} bytes; expected at most {} bytes (data belongs in a "
        "data file named by /data/path)",
        path.string(),
        size,
        kMaxConfigBytes));
  }
  // Read at most one byte past the cap: a file that grows while read is refused too.
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (text.size() <= kMaxConfigBytes && in.read(chunk.data(), chunk.size()).gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError(
        fmt::format("{}: config file too large; got more than {} bytes; expected at "
                    "most {} bytes",
                    path.string(),
                    kMaxConfigBytes,
                    kMaxConfigBytes));
  }
  return parse_json(text, path.string());
}

RunPlan plan_run_file(const std::filesystem::path& path, std::optional<int> mpi_worker) {
  const nlohmann::json config = read_json_file(path);
  return plan_run(config, path.string(), path.parent_path(), PlanOptions{.mpi_worker = mpi_worker});
}

namespace {

/// Whether the config names a backend whose workers are processes of their own (traits.mpi):
/// read before the data, whose loading depends on it; the backend object itself is validated
/// later.
bool backend_is_mpi(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("backend") || !config["backend"].is_object() ||
      !config["backend"].contains("kind") || !config["backend"]["kind"].is_string()) {
    return false;
  }
  const auto row = find_backend(config["backend"]["kind"].get<std::string>());
  return row && row->traits.mpi;
}

/// Largest "workers" (and "partitions"): 2^30, the largest n of the speedup-against-n study;
/// above 10^7 only delay-only runs of compact codes fit in memory (the budget says which).
constexpr std::int64_t kMaxWorkers = std::int64_t{1} << 30;

/// The row of `table` named by `key` (the selector: "kind" or "rule").
template <typename Factory>
const FactoryRow<Factory>& pick(JsonReader& reader,
                                std::string_view key,
                                std::string_view what,
                                const std::vector<FactoryRow<Factory>>& table,
                                const std::optional<std::string>& fallback = std::nullopt) {
  const std::string name = reader.choice(key, what, names_of(table), fallback);
  for (const auto& row : table) {
    if (row.name == name) {
      return row;
    }
  }
  reader.fail(key, "internal: factory table out of sync");
}

/// Default decoder: exact when the rule waits for a decodable set (all, decodable, or first_r
/// with r ≥ n − s for a code tolerating s stragglers), least squares otherwise.
sim::DecoderKind default_decoder(const sim::StoppingRule& rule, const codes::GradientCode& code) {
  const std::optional<sim::StoppingShape> shape = rule.shape();
  if (!shape) {
    return sim::DecoderKind::kOptimal;
  }
  if (shape->kind == sim::RuleKind::kAll || shape->kind == sim::RuleKind::kDecodable) {
    return sim::DecoderKind::kExact;
  }
  const int s = code.structure().stragglers_tolerated;
  if (shape->kind == sim::RuleKind::kFirstR && s > 0 && shape->r >= code.workers() - s) {
    return sim::DecoderKind::kExact;
  }
  return sim::DecoderKind::kOptimal;
}

/// Group-erasure probability q of the plan's scheme from the theory module (closed forms for
/// FRC / uncoded under first_r, deadline and first_r_or_decodable; numerical for other delay
/// models). Nullopt where q is undefined (codes that do not decode by groups).
std::optional<double> scheme_erasure_probability(const RunPlan& plan) {
  std::string why;
  const auto scheme = sim::describe_scheme(plan.scheme, &why);
  if (!scheme || scheme->code == sim::CodeFamily::kCyclic) {
    return std::nullopt;
  }
  const auto delays = plan.make_delays();
  const double q = sim::predict_iteration_time(*scheme, *delays).q;
  return std::isnan(q) ? std::nullopt : std::optional<double>(q);
}

/// Before the code is built: refuses a code whose matrices would not fit in memory (key
/// /workers) and, with data, an expander code whose k = 2n/d exceeds the training rows (building
/// its random graph for 10⁷ workers takes minutes before the row check would fire).
void check_code_size(const nlohmann::json& config,
                     JsonReader& root,
                     JsonReader& code_reader,
                     const ClusterShape& shape,
                     const LoadedData& data) {
  const nlohmann::json& code = config["code"];
  const std::string kind = code["kind"].get<std::string>();
  // A d beyond the workers is the code's own error (reported at /code/d when it is built): the
  // estimate uses at most n, so this check never preempts that message.
  const double d =
      std::min(code.contains("d") && code["d"].is_number() ? code["d"].get<double>() : 0.0,
               static_cast<double>(shape.workers));
  const CodeFootprint footprint =
      code_footprint(kind, shape.workers, shape.partitions, d, shape.compact);
  if (!footprint.partitions_formula.empty() && (data.train || data.partial) && code.contains("d") &&
      code["d"].is_number_integer()) {
    const auto di = code["d"].get<std::int64_t>();
    if (di >= 1 && di <= shape.workers &&
        footprint.partitions == std::floor(footprint.partitions) &&
        footprint.partitions > static_cast<double>(data.train_rows())) {
      code_reader.fail_value("d",
                             fmt::format("more partitions than training rows (k = {} = {})",
                                         footprint.partitions_formula,
                                         static_cast<std::int64_t>(footprint.partitions)),
                             di,
                             fmt::format("at most the {} training rows", data.train_rows()));
    }
  }
  require_memory(root, "workers", fmt::format("code '{}'", kind), footprint.bytes, shape.workers);
}

/// The top-level counts and the data (first: the partition count is checked against its rows).
LoadedData read_header_and_data(JsonReader& root,
                                RunPlan& plan,
                                const std::string& file,
                                const std::filesystem::path& base_dir,
                                const std::optional<SetupCache::Data>& cached,
                                std::optional<int> mpi_worker,
                                bool mpi_run) {
  plan.name = root.string("name", std::filesystem::path(file).stem().string());
  plan.seed = static_cast<std::uint64_t>(root.integer("seed", 1, 0));
  plan.data_seed = static_cast<std::uint64_t>(
      root.integer("data_seed", static_cast<std::int64_t>(plan.seed), 0));
  plan.workers = static_cast<int>(root.integer("workers", std::nullopt, 1, kMaxWorkers));
  plan.partitions = static_cast<int>(root.integer("partitions", plan.workers, 1, kMaxWorkers));
  plan.threads = static_cast<int>(root.integer("threads", hardware_cores(), 1, thread_cap()));
  if (!root.has("data")) {
    root.fail("data", "missing required key; expected an object, or null for a delay-only run");
  }
  LoadedData data;
  if (root.is_null("data")) {
    (void)root.raw("data");
  } else if (cached) {
    // Validated when it was loaded: the same data object, seed and folder give the same bytes.
    (void)root.object("data");
    root.merge("data", cached->resolved);
    data.train = cached->train;
    data.test = cached->test;
  } else {
    JsonReader data_reader = root.object("data");
    // An MPI worker of an mpi run loads only its own partitions' rows (after the code).
    const bool partial = mpi_run && mpi_worker && *mpi_worker >= 0 && *mpi_worker < plan.workers;
    data = load_data(data_reader, base_dir, plan.data_seed, partial);
    root.merge("data", data_reader);
  }
  return data;
}

/// The code, its decoder, the stopping rule and the rescale; returns the rule's and the code's
/// requirements, checked once the whole config is read.
std::vector<Declaration> read_scheme(const nlohmann::json& config,
                                     JsonReader& root,
                                     RunPlan& plan,
                                     const std::string& file,
                                     const LoadedData& data,
                                     bool delay_only,
                                     const std::filesystem::path& base_dir) {
  JsonReader code_reader = root.object("code");
  // A delay-only run never decodes: its group codes keep no per-worker arrays, unless the rule
  // sends partition by partition (multi_message and drop_compute read every worker's support).
  const bool per_partition = config.contains("stopping") && config["stopping"].is_object() &&
                             config["stopping"].contains("rule") &&
                             (config["stopping"]["rule"] == "multi_message" ||
                              config["stopping"]["rule"] == "drop_compute");
  const ClusterShape shape{file,
                           plan.workers,
                           plan.partitions,
                           root.has("partitions"),
                           derive_seed(plan.seed, static_cast<std::uint64_t>(Stream::kCode)),
                           delay_only && !per_partition,
                           config.contains("delay") ? config["delay"] : nlohmann::json(),
                           base_dir};
  const auto& code_row = pick(code_reader, "kind", "code", code_factories());
  check_code_size(config, root, code_reader, shape, data);
  // The decoder key belongs to the scheme, not to a code's own parameters: read it first.
  std::optional<std::string> decoder_name;
  if (code_reader.has("decoder")) {
    decoder_name = code_reader.choice("decoder", "decoder", {"exact", "one_step", "optimal"}, {});
  }
  plan.scheme.code = code_row.make(code_reader, shape);
  code_reader.finish(keys_of(code_row, kCodeKeys));
  root.merge("code", code_reader);
  plan.partitions = plan.scheme.code->partitions();

  JsonReader stopping_reader = root.object("stopping");
  const auto rules = stopping_factories();
  const auto& rule_row = pick(stopping_reader, "rule", "stopping rule", rules, {});
  plan.scheme.rule = rule_row.make(stopping_reader, plan.scheme.code);
  stopping_reader.finish(keys_of(rule_row, kStoppingKeys));
  root.merge("stopping", stopping_reader);
  if (decoder_name) {
    plan.scheme.decoder = *decoder_name == "exact"      ? sim::DecoderKind::kExact
                          : *decoder_name == "one_step" ? sim::DecoderKind::kOneStep
                                                        : sim::DecoderKind::kOptimal;
  } else {
    plan.scheme.decoder = default_decoder(*plan.scheme.rule, *plan.scheme.code);
  }

  const auto rescale = root.choice("rescale", "rescale", {"empirical", "expected", "none"}, "none");
  plan.scheme.rescale = rescale == "expected"    ? codes::Rescale::kExpected
                        : rescale == "empirical" ? codes::Rescale::kEmpirical
                                                 : codes::Rescale::kNone;
  return {declaration_of(rule_row, "/stopping/rule", "the {} rule"),
          declaration_of(code_row, "/code/kind", "code '{}'")};
}

/// The delay model, then q for the expected rescale (which needs the delays), then the
/// straggler policy. Returns the delay row's declaration (a time-varying model needs the
/// simulated clock).
Declaration read_delays(JsonReader& root, RunPlan& plan, const std::filesystem::path& base_dir) {
  JsonReader delay_reader = root.object("delay");
  const auto& delay_row = pick(delay_reader, "kind", "delay model", delay_factories());
  sim::WorkerLoads loads;
  loads.workers = plan.scheme.code->workers();
  if (const auto uniform = plan.scheme.code->uniform_load()) {
    loads.uniform = *uniform;
    if (delay_row.name != "shifted_exponential") {
      // Only the shifted exponential keeps uniform loads compact; the others take one per worker.
      require_memory(
          root,
          "workers",
          fmt::format("delay model '{}' (its per-worker loads and parameters)", delay_row.name),
          32.0 * loads.workers,
          loads.workers);
    }
  } else {
    loads.per_worker = plan.scheme.code->loads();
  }
  plan.make_delays = delay_row.make(delay_reader, loads, base_dir);
  delay_reader.finish(keys_of(delay_row, kDelayKeys));
  root.merge("delay", delay_reader);

  if (plan.scheme.rescale == codes::Rescale::kExpected) {
    const std::string rescale = "expected";
    const auto q = scheme_erasure_probability(plan);
    if (!q) {
      root.fail_value("rescale",
                      "no group-erasure probability for this code and rule",
                      rescale,
                      "a frc or uncoded code, or rescale 'none' or 'empirical'");
    }
    if (*q >= 1.0) {
      root.fail_value("rescale",
                      fmt::format("every group is erased (q = {})", *q),
                      rescale,
                      "a rule that hears some group");
    }
    plan.scheme.erasure_probability = *q;
  }

  const auto policy =
      root.choice("stragglers", "straggler policy", {"cancel", "drain", "finish"}, "cancel");
  plan.stragglers = policy == "finish"  ? sim::StragglerPolicy::kFinish
                    : policy == "drain" ? sim::StragglerPolicy::kDrain
                                        : sim::StragglerPolicy::kCancel;
  return declaration_of(delay_row, "/delay/kind", "delay model '{}'");
}

/// "sampler": auto (order statistics where exact), workers, or order_statistics (refused, with the
/// reason, where it is not exact). Runs with data draw every worker. A delay-only run on the worker
/// sampler is checked against the memory limit for its per-worker buffers.
void read_sampler(JsonReader& root, RunPlan& plan, bool delay_only) {
  const auto sampler =
      root.choice("sampler", "sampler", {"auto", "order_statistics", "workers"}, "auto");
  std::optional<std::string> why;
  if (!delay_only) {
    why = "a run with data computes every worker's gradient, so it draws every worker's delay";
  } else if (!plan.network.is_free()) {
    why = "a network turns each worker's compute end into an arrival, so every worker is drawn";
  } else if (plan.collective) {
    why = fmt::format("the {} all-reduce needs every rank's compute end, so every worker is drawn",
                      plan.aggregation);
  } else {
    why = sim::order_statistics_unavailable(
        *plan.make_delays(), *plan.scheme.rule, *plan.scheme.code, plan.stragglers);
  }
  if (sampler == "order_statistics" && why) {
    root.fail_value(
        "sampler", *why, sampler, "\"workers\" or \"auto\" (order statistics need i.i.d. workers)");
  }
  plan.sampler =
      sampler != "workers" && !why ? sim::Sampler::kOrderStatistics : sim::Sampler::kWorkers;
  if (delay_only && plan.sampler == sim::Sampler::kWorkers) {
    // delays, selection scratch (and arrivals and busy times under finish), 8 bytes each.
    const double per_worker = plan.stragglers == sim::StragglerPolicy::kFinish ? 40.0 : 24.0;
    require_memory(
        root,
        "workers",
        why ? fmt::format("the worker sampler ({})", *why) : std::string("the worker sampler"),
        per_worker * plan.workers,
        plan.workers);
  }
}

/// The loss and the training (and test) objectives; a delay-only run has no loss key.
void read_loss(JsonReader& root, RunPlan& plan, LoadedData& data, bool delay_only) {
  if (delay_only) {
    if (root.has("loss")) {
      root.fail("loss", "unknown key; a delay-only run (\"data\": null) has no loss");
    }
    return;
  }
  JsonReader loss_reader = root.object("loss");
  const auto& loss_row = pick(loss_reader, "kind", "loss", loss_factories());
  const double l2 = loss_reader.number("l2", 0.0, 0.0);
  const models::LabelValues labels = label_summary(data);
  const double data_classes = labels.highest + 1.0;
  const auto loss = loss_row.make(
      loss_reader, data_classes >= 0.0 && data_classes <= 1e9 ? static_cast<int>(data_classes) : 0);
  loss_reader.finish(keys_of(loss_row, kLossKeys));
  root.merge("loss", loss_reader);
  if (loss->traits().binary_labels) {
    require_binary_labels(data, root);
  }
  if (loss->traits().classes > 0) {
    require_class_labels(labels, loss->traits().classes, loss_reader);
  }
  if (plan.partitions > data.train_rows()) {
    root.fail_value("partitions",
                    "more partitions than training rows",
                    plan.partitions,
                    fmt::format("at most the {} training rows", data.train_rows()));
  }
  // The training loop keeps every partition's gradient (features × partitions, twice).
  const auto parameters = static_cast<double>(loss->parameter_count(data.train->dimension()));
  require_memory(root,
                 "partitions",
                 fmt::format("the partition gradients ({} {} x {} partitions)",
                             parameters,
                             loss->traits().scalar_margin ? "features" : "parameters",
                             plan.partitions),
                 16.0 * parameters * plan.partitions,
                 plan.partitions);
  plan.initial_point = loss->initial_point(
      data.train->dimension(), derive_seed(plan.seed, static_cast<std::uint64_t>(Stream::kInit)));
  if (data.held) {
    plan.objective = std::make_shared<models::Objective>(models::Objective::held_partitions(
        data.train, loss, l2, plan.partitions, data.train_rows(), *data.held));
    return;  // a worker needs no test set
  }
  plan.objective = std::make_shared<models::Objective>(data.train, loss, l2, plan.partitions);
  if (data.test && data.test->rows() > 0) {
    plan.test_objective = std::make_shared<models::Objective>(data.test, loss, l2, 1);
  }
}

/// The optional "network" block (docs/model.md §3 "Communication"): latency (0), bandwidth
/// (bytes/s; absent: infinite), serial (false), and the message size: p · value_bytes (8) with
/// data, message_bytes (0) for a delay-only run. Only the simulated clock applies it.
void read_network(JsonReader& root, RunPlan& plan, bool delay_only) {
  root.allow("network");
  if (!root.has("network")) {
    return;
  }
  JsonReader reader = root.object("network");
  sim::NetworkOptions& net = plan.network;
  net.latency = reader.number("latency", 0.0, 0.0);
  if (reader.has("bandwidth")) {
    net.bandwidth = reader.positive("bandwidth", std::nullopt);
  }
  net.serial = reader.boolean("serial", false);
  if (delay_only) {
    if (reader.has("value_bytes")) {
      reader.fail("value_bytes",
                  "a delay-only run (\"data\": null) has no model dimension p; set message_bytes");
    }
    if (reader.has("bandwidth") && !reader.has("message_bytes")) {
      reader.fail("message_bytes",
                  "missing required key: a delay-only run (\"data\": null) with a bandwidth needs "
                  "the message size in bytes; expected a number >= 0");
    }
    net.message_bytes = reader.number("message_bytes", 0.0, 0.0);
  } else {
    if (reader.has("message_bytes")) {
      reader.fail("message_bytes",
                  "with data the message size is p * value_bytes (the model's dimension times "
                  "the bytes of one value); set value_bytes instead");
    }
    const auto value_bytes = reader.integer("value_bytes", 8, 1, 64);
    net.message_bytes =
        static_cast<double>(plan.objective->dimension()) * static_cast<double>(value_bytes);
  }
  reader.finish({"bandwidth", "latency", delay_only ? "message_bytes" : "value_bytes", "serial"});
  root.merge("network", reader);
  // q of `rescale: expected` was computed without the network: right for rules that stop on the
  // order of arrivals (the link keeps the order of compute ends), wrong for a deadline.
  const auto shape = plan.scheme.rule->shape();
  if (plan.scheme.rescale == codes::Rescale::kExpected && !net.is_free() &&
      (!shape || shape->kind == sim::RuleKind::kDeadline)) {
    root.fail_value("rescale",
                    "rescale 'expected' with a network needs a rule that stops on the order of "
                    "arrivals (the network changes who meets a deadline)",
                    "expected",
                    "'none' or 'empirical', or a first_r, all or decodable rule");
  }
  if (plan.backend.traits.real_time) {
    const std::string& kind = plan.backend.name;
    root.fail_value("network",
                    fmt::format("a network model applies to the simulated clock only (the {} "
                                "backend's messages take their real time)",
                                kind),
                    kind,
                    fmt::format("backend {}, or no \"network\" block",
                                quoted_names(backend_factories(), [](const BackendRow& row) {
                                  return !row.traits.real_time && row.unavailable.empty();
                                })));
  }
}

/// The backend object (absent: the simulated clock) through its row of the backend table: the
/// row's availability and traits first, then its own keys.
void read_backend(JsonReader& root, RunPlan& plan, bool delay_only) {
  root.allow("backend");
  const nlohmann::json absent = nlohmann::json::object();
  JsonReader reader = root.has("backend")
                          ? root.object("backend")
                          : JsonReader(absent, root.file(), root.pointer_of("backend"));
  const std::vector<BackendRow> rows = backend_factories();
  std::vector<std::string> names;
  names.reserve(rows.size());
  for (const auto& row : rows) {
    names.push_back(row.name);
  }
  const std::string kind = reader.choice("kind", "backend", names, kDefaultBackend);
  const auto row =
      std::find_if(rows.begin(), rows.end(), [&](const BackendRow& r) { return r.name == kind; });
  if (!row->unavailable.empty()) {
    reader.fail_value(
        "kind",
        fmt::format("the {} backend is {}", kind, row->unavailable),
        kind,
        quoted_names(rows, [](const BackendRow& r) { return r.unavailable.empty(); }));
  }
  if (delay_only && !row->traits.runs_delay_only) {
    reader.fail_value("kind",
                      fmt::format("the {} backend computes gradients and needs data", kind),
                      kind,
                      fmt::format("{} for a delay-only run (\"data\": null)",
                                  quoted_names(rows, [](const BackendRow& r) {
                                    return r.traits.runs_delay_only && r.unavailable.empty();
                                  })));
  }
  plan.backend_setup = row->make(reader, BackendContext{plan.workers});
  reader.finish(keys_of(*row, kBackendKeys));
  if (root.has("backend")) {
    root.merge("backend", reader);
  }
  plan.backend = *row;
}

/// The optional "aggregation" block (docs/model.md §3 "Aggregation") through its row of the
/// aggregation table; absent: the parameter server, and nothing is added to the resolved config.
/// Returns the row's declaration (what a collective requires of the run).
Declaration read_aggregation(JsonReader& root, RunPlan& plan) {
  root.allow("aggregation");
  const nlohmann::json absent = nlohmann::json::object();
  JsonReader reader = root.has("aggregation")
                          ? root.object("aggregation")
                          : JsonReader(absent, root.file(), root.pointer_of("aggregation"));
  const std::vector<AggregationRow> rows = aggregation_factories();
  std::vector<std::string> names;
  names.reserve(rows.size());
  for (const auto& row : rows) {
    names.push_back(row.name);
  }
  const std::string kind = reader.choice("kind", "aggregation", names, kDefaultAggregation);
  const auto row = std::find_if(
      rows.begin(), rows.end(), [&](const AggregationRow& r) { return r.name == kind; });
  const AggregationContext context{plan.workers, plan.objective ? plan.objective->dimension() : 0};
  if (const auto spec = row->make(reader, context)) {
    plan.collective = sim::CollectiveAggregation{spec->options, nullptr, spec->message_bytes};
  }
  reader.finish(keys_of(*row, kAggregationKeys));
  if (root.has("aggregation")) {
    root.merge("aggregation", reader);
  }
  plan.aggregation = kind;
  return declaration_of(*row, "/aggregation/kind", "the {} aggregation");
}

/// The collective's schedule, once the combinations are accepted: over the model's dimension
/// with data (8 bytes an element), else over timing_elements with the message size spread
/// evenly. Refuses (at /workers) a schedule or buffers beyond the memory limit.
void build_collective(JsonReader& root, RunPlan& plan) {
  if (!plan.collective) {
    return;
  }
  sim::CollectiveAggregation& c = *plan.collective;
  const double n = plan.workers;
  // At most 2·n² transfers (ring, direct: 2n(n − 1)); the others take fewer.
  require_memory(root,
                 "workers",
                 fmt::format("the {} schedule (up to 2 n^2 transfers)", plan.aggregation),
                 2.0 * n * n * static_cast<double>(sizeof(sim::collectives::Transfer)),
                 plan.workers);
  Eigen::Index elements = 0;
  if (plan.delay_only()) {
    elements = timing_elements(plan.workers);
    c.bytes_per_element = c.bytes_per_element / static_cast<double>(elements);
  } else {
    elements = plan.objective->dimension();
    // One buffer per rank, and the copy a round reads from.
    require_memory(root,
                   "workers",
                   fmt::format("the {} buffers (one model vector per worker)", plan.aggregation),
                   16.0 * n * static_cast<double>(elements),
                   plan.workers);
    c.bytes_per_element = 8.0;
  }
  c.schedule = std::make_shared<const sim::collectives::Schedule>(
      sim::collectives::build_schedule(c.options, plan.workers, elements));
}

/// The combinations of rule, code, backend and aggregation that the reader of each block cannot
/// see: what their rows require of the run (`declared`: the rule's, the code's and the delay's,
/// then the backend's and `aggregation`); then the update rule of an asynchronous run.
void check_combinations(const nlohmann::json& config,
                        const std::string& file,
                        RunPlan& plan,
                        std::vector<Declaration> declared,
                        Declaration aggregation) {
  declared.push_back(declaration_of(plan.backend, "/backend/kind", "the {} backend"));
  declared.push_back(std::move(aggregation));
  check_requirements(declared, plan, config, file);
  // The mpi backend's "allreduce" says how a collective's contributions are reduced.
  const nlohmann::json backend = config.value("backend", nlohmann::json::object());
  if (!plan.collective && backend.is_object() && backend.contains("allreduce")) {
    throw ConfigError(
        fmt::format("{}:/backend/allreduce: the mpi backend's allreduce needs a collective "
                    "aggregation; got {}; expected an \"aggregation\" block naming a collective, "
                    "or no \"allreduce\" with the parameter server",
                    file,
                    backend["allreduce"].dump()));
  }
  plan.update = plan.scheme.rule->update_shape();
  if (plan.update && plan.update->mode == sim::UpdateMode::kMindFlayer) {
    // A worker whose cut-off is below its shortest delay abandons every attempt: with no worker
    // able to deliver, the run would never make an update.
    const auto delays = plan.make_delays();
    bool anyone = delays->time_varying();
    for (int i = 0; i < delays->workers() && !anyone; ++i) {
      anyone = delays->cdf(i, plan.update->cutoffs[static_cast<std::size_t>(i)]) > 0.0;
    }
    if (!anyone) {
      throw ConfigError(fmt::format(
          "{}:/stopping/cutoffs: no worker can finish a computation within its cut-off (every "
          "cut-off is below the worker's shortest delay, {} s for worker 0); expected cut-offs "
          "above the delays' lower bounds",
          file,
          delays->lower_bound(0)));
    }
  }
}

// The key of a data set in the setup cache: everything its bytes depend on (the loss kind too:
// logistic maps labels in place).
std::string data_cache_key(const nlohmann::json& config, const std::filesystem::path& base_dir) {
  const nlohmann::json loss = config.contains("loss") ? config["loss"] : nlohmann::json();
  return nlohmann::json{config["data"],
                        config.contains("data_seed") ? config["data_seed"]
                        : config.contains("seed")    ? config["seed"]
                                                     : nlohmann::json(),
                        base_dir.string(),
                        loss.is_object() && loss.contains("kind") ? loss["kind"] : nlohmann::json()}
      .dump();
}

// The partitions an MPI worker holds, sorted and distinct.
std::vector<int> held_partitions(const codes::GradientCode& code, int worker) {
  const std::span<const int> support = code.support(worker);
  std::vector<int> held(support.begin(), support.end());
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  return held;
}

bool is_simulated_backend(const nlohmann::json& config) {
  return !(config.is_object() && config.contains("backend") && config["backend"].is_object() &&
           config["backend"].contains("kind") && config["backend"]["kind"] != "simulated");
}

}  // namespace

int hardware_cores() { return static_cast<int>(std::max(1U, std::thread::hardware_concurrency())); }

int thread_cap() { return std::max(kMinThreadCap, kThreadsPerCore * hardware_cores()); }

std::unique_lock<std::mutex> SetupCache::loading(const std::string& key) {
  std::mutex* key_mutex = nullptr;
  {
    const std::lock_guard lock(mutex_);
    std::unique_ptr<std::mutex>& slot = loading_[key];
    if (!slot) {
      slot = std::make_unique<std::mutex>();
    }
    key_mutex = slot.get();
  }
  return std::unique_lock(*key_mutex);
}

std::optional<SetupCache::Data> SetupCache::data(const std::string& key) {
  const std::lock_guard lock(mutex_);
  const auto found = data_.find(key);
  if (found == data_.end()) {
    return std::nullopt;
  }
  Data out{found->second.train.lock(),
           found->second.test.lock(),
           found->second.resolved,
           found->second.memory};
  if (!out.train || (found->second.has_test && !out.test)) {
    data_.erase(found);  // no plan holds it any more: load again
    return std::nullopt;
  }
  return out;
}

void SetupCache::store_data(const std::string& key, const Data& data) {
  const std::lock_guard lock(mutex_);
  data_[key] = Entry{data.train, data.test, data.test != nullptr, data.resolved, data.memory};
}

std::optional<double> SetupCache::smoothness(const std::string& key) {
  const std::lock_guard lock(mutex_);
  const auto found = smoothness_.find(key);
  return found == smoothness_.end() ? std::nullopt : std::optional<double>(found->second);
}

void SetupCache::store_smoothness(const std::string& key, double beta) {
  const std::lock_guard lock(mutex_);
  smoothness_[key] = beta;
}

namespace {

/// A plan's look-up of its data set in the setup cache.
struct CachedData {
  std::string key;                       ///< data_cache_key; empty: the cache is not used
  std::optional<SetupCache::Data> data;  ///< the stored data set (nullopt: a miss)
  std::unique_lock<std::mutex> loading;  ///< on a miss, held until the plan stores it
};

CachedData look_up_data(const nlohmann::json& config,
                        const std::filesystem::path& base_dir,
                        const PlanOptions& options) {
  CachedData out;
  if (options.setup == nullptr || options.mpi_worker || !config.is_object() ||
      !config.contains("data") || !config["data"].is_object()) {
    return out;
  }
  out.key = data_cache_key(config, base_dir);
  out.loading = options.setup->loading(out.key);
  out.data = options.setup->data(out.key);
  if (out.data) {
    out.loading.unlock();
  }
  return out;
}

/// plan.resolved: the config with every default filled in, as the summary records it.
void record_resolved(const JsonReader& root, RunPlan& plan) {
  plan.resolved = root.resolved();
  plan.resolved.erase("threads");
  if (!root.has("data_seed")) {
    // The default (the seed) is not written out: a config without the key keeps its bytes.
    plan.resolved.erase("data_seed");
  }
  plan.resolved["partitions"] = plan.partitions;
  if (!root.has("backend")) {
    plan.resolved["backend"] = {{"kind", kDefaultBackend}};
  }
}

}  // namespace

RunPlan plan_run(const nlohmann::json& config,
                 const std::string& file,
                 const std::filesystem::path& base_dir,
                 const PlanOptions& options) {
  const std::optional<int>& mpi_worker = options.mpi_worker;
  JsonReader root(config, file, "");
  // Every estimate of this run (data, code and decoder, partition gradients) counts against
  // one limit.
  const MemoryLedgerScope ledger;
  RunPlan plan;
  CachedData lookup = look_up_data(config, base_dir, options);
  const std::string& data_key = lookup.key;
  const std::optional<SetupCache::Data>& cached = lookup.data;
  LoadedData data =
      read_header_and_data(root, plan, file, base_dir, cached, mpi_worker, backend_is_mpi(config));
  if (cached) {
    // The run holds the sweep's copy: its estimate counts as a run alone counts it.
    note_memory("the data sets", cached->memory);
  }
  plan.data_memory = memory_planned();
  plan.f_star_cache = options.f_star_cache;
  if (options.max_threads > 0) {
    plan.threads = std::min(plan.threads, options.max_threads);
  }
  const bool delay_only = root.is_null("data");
  auto declared = read_scheme(config, root, plan, file, data, delay_only, base_dir);
  declared.push_back(read_delays(root, plan, base_dir));
  if (data.partial) {
    // The worker's own partitions, now that the code is known.
    load_held_partitions(data, plan.partitions, held_partitions(*plan.scheme.code, *mpi_worker));
  }
  read_loss(root, plan, data, delay_only);
  if (options.setup != nullptr && !data_key.empty() && !cached && data.train) {
    // Stored after read_loss, whose label mapping is the last write to the data.
    options.setup->store_data(
        data_key,
        SetupCache::Data{data.train, data.test, root.resolved()["data"], plan.data_memory});
  }
  if (lookup.loading.owns_lock()) {
    lookup.loading.unlock();
  }
  const std::string smoothness_key =
      data_key.empty() ? std::string()
                       : data_key + root.resolved().value("loss", nlohmann::json()).dump();
  read_optimizer(root,
                 plan,
                 delay_only,
                 is_simulated_backend(config),
                 data_key.empty() ? nullptr : options.setup,
                 smoothness_key);
  read_backend(root, plan, delay_only);
  const Declaration aggregation = read_aggregation(root, plan);
  read_network(root, plan, delay_only);
  read_sampler(root, plan, delay_only);
  root.finish();
  check_combinations(config, file, plan, std::move(declared), aggregation);
  build_collective(root, plan);
  plan.memory = memory_planned();
  record_resolved(root, plan);
  return plan;
}

}  // namespace stragglersim::experiments

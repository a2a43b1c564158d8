#include "experiments/config/run_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "experiments/config/config_error.h"
#include "experiments/config/data_source.h"
#include "experiments/config/factories.h"
#include "experiments/config/memory_budget.h"
#include "experiments/config/predictions.h"
#include "models/base/random_stream.h"
#include "sim/mpi_session.h"

namespace stragglersim::experiments {

std::unique_ptr<sim::Optimizer> RunPlan::make_optimizer() const {
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(objective ? objective->dimension() : 0);
  switch (optimizer) {
    case OptimizerKind::kGd:
      return std::make_unique<sim::GradientDescent>(std::move(x0), step);
    case OptimizerKind::kNesterov:
      return std::make_unique<sim::Nesterov>(std::move(x0), step);
  }
  return nullptr;
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(fmt::format("{}: cannot open config file: it is a folder", path.string()));
  }
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot open config file", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_json(text.str(), path.string());
}

RunPlan plan_run_file(const std::filesystem::path& path) {
  const nlohmann::json config = read_json_file(path);
  return plan_run(config, path.string(), path.parent_path());
}

namespace {

/// The row of `table` named by `key` (the selector: "kind" or "rule").
template <typename Factory>
const FactoryRow<Factory>& pick(JsonReader& reader,
                                std::string_view key,
                                std::string_view what,
                                const std::vector<FactoryRow<Factory>>& table,
                                std::optional<std::string> fallback = std::nullopt) {
  const std::string name = reader.choice(key, what, names_of(table), std::move(fallback));
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
  const auto scheme = describe_scheme(plan, &why);
  if (!scheme || scheme->code == sim::CodeFamily::kCyclic) {
    return std::nullopt;
  }
  const auto delays = plan.make_delays();
  const double q = sim::predict_iteration_time(*scheme, *delays).q;
  return std::isnan(q) ? std::nullopt : std::optional<double>(q);
}

/// The keys of the real backends (threads, mpi; the kind already read): seconds_per_unit,
/// timeout and faults, each fault {"worker", "kind": "crash" | "hang", "from_iteration" (1)}.
void read_real_backend(JsonReader& reader,
                       const std::string& kind,
                       const RunPlan& plan,
                       bool delay_only,
                       sim::ThreadedOptions& options,
                       nlohmann::json& resolved_faults) {
  if (delay_only) {
    reader.fail_value("kind",
                      fmt::format("the {} backend computes gradients and needs data", kind),
                      kind,
                      "\"simulated\" for a delay-only run (\"data\": null)");
  }
  options.policy = plan.stragglers;
  options.seconds_per_unit = reader.positive("seconds_per_unit", 0.01);
  // Capped so that a hung worker always ends the run (sim::kMaxThreadedTimeout: one hour).
  options.timeout = reader.number("timeout", 5.0, 0.0, sim::kMaxThreadedTimeout);
  if (options.timeout <= 0.0) {
    reader.fail_value("timeout",
                      "out of range",
                      options.timeout,
                      fmt::format("a number in (0, {}] seconds", sim::kMaxThreadedTimeout));
  }
  if (!reader.has("faults")) {
    return;
  }
  const nlohmann::json& faults = reader.raw("faults");
  if (!faults.is_array()) {
    reader.fail_value("faults", "wrong type", faults, "an array of fault objects");
  }
  for (std::size_t i = 0; i < faults.size(); ++i) {
    JsonReader f(faults[i], reader.file(), fmt::format("{}/{}", reader.pointer_of("faults"), i));
    sim::WorkerFault fault;
    fault.worker = static_cast<int>(f.integer("worker", std::nullopt, 0, plan.workers - 1));
    for (const auto& other : options.faults) {
      if (other.worker == fault.worker) {
        f.fail_value("worker",
                     "a second fault for the same worker",
                     fault.worker,
                     "each worker at most once");
      }
    }
    fault.kind = f.choice("kind", "fault", {"crash", "hang"}, {}) == "hang"
                     ? sim::FaultKind::kHang
                     : sim::FaultKind::kCrash;
    fault.from_iteration = static_cast<std::uint64_t>(f.integer("from_iteration", 1, 1));
    f.finish();
    options.faults.push_back(fault);
    resolved_faults.push_back(f.resolved());
  }
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
  const CodeFootprint footprint = code_footprint(kind, shape.workers, shape.partitions, d);
  if (!footprint.partitions_formula.empty() && data.train && code.contains("d") &&
      code["d"].is_number_integer()) {
    const auto di = code["d"].get<std::int64_t>();
    if (di >= 1 && di <= shape.workers &&
        footprint.partitions == std::floor(footprint.partitions) &&
        footprint.partitions > static_cast<double>(data.train->rows())) {
      code_reader.fail_value("d",
                             fmt::format("more partitions than training rows (k = {} = {})",
                                         footprint.partitions_formula,
                                         static_cast<std::int64_t>(footprint.partitions)),
                             di,
                             fmt::format("at most the {} training rows", data.train->rows()));
    }
  }
  require_memory(root, "workers", fmt::format("code '{}'", kind), footprint.bytes, shape.workers);
}

/// The backend object (absent: simulated). threads and mpi share their keys; mpi adds inject.
void read_backend_object(JsonReader& root,
                         RunPlan& plan,
                         bool delay_only,
                         nlohmann::json& resolved_faults) {
  JsonReader reader = root.object("backend");
  const auto kind = reader.choice("kind", "backend", {"simulated", "threads", "mpi"}, "simulated");
  if (kind == "threads") {
    plan.backend = BackendKind::kThreads;
    read_real_backend(reader, kind, plan, delay_only, plan.threaded, resolved_faults);
  } else if (kind == "mpi") {
    if (!sim::mpi_compiled_in()) {
      reader.fail_value("kind",
                        "the mpi backend is not compiled in (build with Open MPI: "
                        "libopenmpi-dev, cmake -DSTRAGGLERSIM_WITH_MPI=ON)",
                        kind,
                        "\"simulated\" or \"threads\"");
    }
    plan.backend = BackendKind::kMpi;
    plan.mpi.inject = reader.boolean("inject", true);
    read_real_backend(reader, kind, plan, delay_only, plan.mpi.master, resolved_faults);
  }
  reader.finish();
  root.merge("backend", reader);
}

/// The top-level counts and the data (first: the partition count is checked against its rows).
LoadedData read_header_and_data(JsonReader& root,
                                RunPlan& plan,
                                const std::string& file,
                                const std::filesystem::path& base_dir) {
  plan.name = root.string("name", std::filesystem::path(file).stem().string());
  plan.seed = static_cast<std::uint64_t>(root.integer("seed", 1, 0));
  plan.workers = static_cast<int>(root.integer("workers", std::nullopt, 1, 10'000'000));
  plan.partitions = static_cast<int>(root.integer("partitions", plan.workers, 1, 10'000'000));
  if (!root.has("data")) {
    root.fail("data", "missing required key; expected an object, or null for a delay-only run");
  }
  LoadedData data;
  if (root.is_null("data")) {
    (void)root.raw("data");
  } else {
    JsonReader data_reader = root.object("data");
    data = load_data(data_reader, base_dir, plan.seed);
    root.merge("data", data_reader);
  }
  return data;
}

/// The code, its decoder, the stopping rule and the rescale.
void read_scheme(const nlohmann::json& config,
                 JsonReader& root,
                 RunPlan& plan,
                 const std::string& file,
                 const LoadedData& data) {
  JsonReader code_reader = root.object("code");
  const ClusterShape shape{file,
                           plan.workers,
                           plan.partitions,
                           root.has("partitions"),
                           derive_seed(plan.seed, static_cast<std::uint64_t>(Stream::kCode))};
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
  const auto& rule_row = pick(stopping_reader, "rule", "stopping rule", stopping_factories(), {});
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
}

/// The delay model, then q for the expected rescale (which needs the delays), then the
/// straggler policy.
void read_delays(JsonReader& root, RunPlan& plan, const std::filesystem::path& base_dir) {
  JsonReader delay_reader = root.object("delay");
  const auto& delay_row = pick(delay_reader, "kind", "delay model", delay_factories());
  plan.make_delays = delay_row.make(delay_reader, plan.scheme.code->loads(), base_dir);
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
  loss_reader.finish(keys_of(loss_row, kLossKeys));
  root.merge("loss", loss_reader);
  const auto loss = loss_row.make();
  if (loss->traits().binary_labels) {
    require_binary_labels(data, root);
  }
  if (plan.partitions > data.train->rows()) {
    root.fail_value("partitions",
                    "more partitions than training rows",
                    plan.partitions,
                    fmt::format("at most the {} training rows", data.train->rows()));
  }
  // The training loop keeps every partition's gradient (features × partitions, twice).
  require_memory(root,
                 "partitions",
                 fmt::format("the partition gradients ({} features x {} partitions)",
                             data.train->dimension(),
                             plan.partitions),
                 16.0 * static_cast<double>(data.train->dimension()) * plan.partitions,
                 plan.partitions);
  plan.objective = std::make_shared<models::Objective>(data.train, loss, l2, plan.partitions);
  if (data.test && data.test->rows() > 0) {
    plan.test_objective = std::make_shared<models::Objective>(data.test, loss, l2, 1);
  }
}

/// The optimiser (delay-only runs read only the iteration count) and the target loss.
void read_optimizer(JsonReader& root, RunPlan& plan, bool delay_only) {
  JsonReader opt_reader = root.object("optimizer");
  plan.iterations = static_cast<std::uint64_t>(opt_reader.integer("iterations", std::nullopt, 0));
  if (!delay_only) {
    const auto kind = opt_reader.choice("kind", "optimizer", {"gd", "nesterov"}, "gd");
    plan.optimizer = kind == "nesterov" ? OptimizerKind::kNesterov : OptimizerKind::kGd;
    const double beta = plan.objective->smoothness();
    if (!std::isfinite(beta)) {
      // A value like 1e308 in a data file squares to infinity.
      root.fail("data",
                fmt::format("the data's smoothness beta is not finite (values too large to "
                            "square); got beta = {}; expected data whose squared row norms are "
                            "finite (values below about 1e150)",
                            std::isnan(beta) ? "nan" : "inf"));
    }
    if (opt_reader.has("step") && opt_reader.raw("step").is_string()) {
      const auto step = opt_reader.string("step", std::nullopt);
      if (step != "auto") {
        opt_reader.fail_value("step", "unknown step", step, "a number > 0 or \"auto\" (1/beta)");
      }
      if (!(beta > 0.0)) {
        opt_reader.fail_value(
            "step",
            fmt::format("\"auto\" (1/beta) needs beta > 0; the data has beta = {}", beta),
            step,
            "a number > 0");
      }
      plan.step = 1.0 / beta;
    } else {
      plan.step = opt_reader.positive("step", std::nullopt);
    }
    plan.smoothness = beta;
  }
  opt_reader.finish();
  root.merge("optimizer", opt_reader);

  if (root.has("target_loss")) {
    plan.target_loss = root.number("target_loss", std::nullopt);
  }
}

/// The backend; returns the resolved faults of a threads backend.
nlohmann::json read_backend(JsonReader& root, RunPlan& plan, bool delay_only) {
  nlohmann::json resolved_faults = nlohmann::json::array();
  if (root.has("backend")) {
    read_backend_object(root, plan, delay_only, resolved_faults);
  }
  return resolved_faults;
}

}  // namespace

RunPlan plan_run(const nlohmann::json& config,
                 const std::string& file,
                 const std::filesystem::path& base_dir) {
  JsonReader root(config, file, "");
  RunPlan plan;
  LoadedData data = read_header_and_data(root, plan, file, base_dir);
  const bool delay_only = root.is_null("data");
  read_scheme(config, root, plan, file, data);
  read_delays(root, plan, base_dir);
  read_loss(root, plan, data, delay_only);
  read_optimizer(root, plan, delay_only);
  const nlohmann::json resolved_faults = read_backend(root, plan, delay_only);
  root.finish();
  plan.resolved = root.resolved();
  plan.resolved["partitions"] = plan.partitions;
  if (!root.has("backend")) {
    plan.resolved["backend"] = {{"kind", "simulated"}};
  }
  if (plan.backend != BackendKind::kSimulated) {
    plan.resolved["backend"]["faults"] = resolved_faults;
  }
  return plan;
}

}  // namespace stragglersim::experiments

#include "experiments/config/run_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "codes/fractional_repetition_code.h"
#include "experiments/config/config_error.h"
#include "experiments/config/data_source.h"
#include "experiments/config/factories.h"
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
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot open config file", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(fmt::format("{}: invalid JSON: {}", path.string(), e.what()));
  }
}

RunPlan plan_run_file(const std::filesystem::path& path) {
  const nlohmann::json config = read_json_file(path);
  return plan_run(config, path.string(), path.parent_path());
}

namespace {

template <typename Factory>
const Factory& pick(JsonReader& reader,
                    std::string_view what,
                    const std::vector<FactoryRow<Factory>>& table,
                    std::optional<std::string> fallback = std::nullopt) {
  const std::string name = reader.choice("kind", what, names_of(table), std::move(fallback));
  for (const auto& row : table) {
    if (row.name == name) {
      return row.make;
    }
  }
  reader.fail("kind", "internal: factory table out of sync");
}

/// Default decoder: exact when the rule waits for a decodable set (all, decodable, or first_r
/// with r ≥ n − s for a code tolerating s stragglers), least squares otherwise.
sim::DecoderKind default_decoder(const sim::StoppingRule& rule, const codes::GradientCode& code) {
  const std::string name = rule.name();
  if (name == "all" || name == "decodable") {
    return sim::DecoderKind::kExact;
  }
  if (const auto* f = dynamic_cast<const sim::FirstRStopping*>(&rule)) {
    if (code.stragglers_tolerated() > 0 && f->r() >= code.workers() - code.stragglers_tolerated()) {
      return sim::DecoderKind::kExact;
    }
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
  options.timeout = reader.positive("timeout", 5.0);
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

/// The backend object (absent: simulated). threads and mpi share their keys; mpi adds inject.
void read_backend(JsonReader& root,
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

}  // namespace

RunPlan plan_run(const nlohmann::json& config,
                 const std::string& file,
                 const std::filesystem::path& base_dir) {
  JsonReader root(config, file, "");
  RunPlan plan;
  plan.name = root.string("name", std::filesystem::path(file).stem().string());
  plan.seed = static_cast<std::uint64_t>(root.integer("seed", 1, 0));
  plan.workers = static_cast<int>(root.integer("workers", std::nullopt, 1, 10'000'000));
  plan.partitions = static_cast<int>(root.integer("partitions", plan.workers, 1, 10'000'000));

  // Data first: the partition count is checked against the rows it has.
  if (!root.has("data")) {
    root.fail("data", "missing required key; expected an object, or null for a delay-only run");
  }
  const bool delay_only = root.is_null("data");
  LoadedData data;
  if (delay_only) {
    (void)root.raw("data");
  } else {
    JsonReader data_reader = root.object("data");
    data = load_data(data_reader, base_dir, plan.seed);
    root.merge("data", data_reader);
  }

  // Code.
  JsonReader code_reader = root.object("code");
  const ClusterShape shape{file,
                           plan.workers,
                           plan.partitions,
                           root.has("partitions"),
                           derive_seed(plan.seed, static_cast<std::uint64_t>(Stream::kCode))};
  const auto& make_code = pick(code_reader, "code", code_factories());
  // The decoder key belongs to the scheme, not to a code's own parameters: read it first.
  std::optional<std::string> decoder_name;
  if (code_reader.has("decoder")) {
    decoder_name = code_reader.choice("decoder", "decoder", {"exact", "one_step", "optimal"}, {});
  }
  plan.scheme.code = make_code(code_reader, shape);
  root.merge("code", code_reader);
  plan.partitions = plan.scheme.code->partitions();

  // Stopping rule and decoder.
  JsonReader stopping_reader = root.object("stopping");
  const auto& make_rule = [&]() -> const StoppingFactory& {
    const std::string name =
        stopping_reader.choice("rule", "stopping rule", names_of(stopping_factories()), {});
    for (const auto& row : stopping_factories()) {
      if (row.name == name) {
        return row.make;
      }
    }
    stopping_reader.fail("rule", "internal: factory table out of sync");
  }();
  plan.scheme.rule = make_rule(stopping_reader, plan.scheme.code);
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

  // Delays.
  JsonReader delay_reader = root.object("delay");
  const auto& make_delay_factory = pick(delay_reader, "delay model", delay_factories());
  plan.make_delays = make_delay_factory(delay_reader, plan.scheme.code->loads());
  root.merge("delay", delay_reader);

  if (plan.scheme.rescale == codes::Rescale::kExpected) {
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

  // Loss and objective.
  if (!delay_only) {
    JsonReader loss_reader = root.object("loss");
    const auto& make_loss = pick(loss_reader, "loss", loss_factories());
    const double l2 = loss_reader.number("l2", 0.0, 0.0);
    loss_reader.finish();
    root.merge("loss", loss_reader);
    const auto loss = make_loss();
    if (loss->name() == "logistic") {
      require_binary_labels(data, root);
    }
    if (plan.partitions > data.train->rows()) {
      root.fail_value("partitions",
                      "more partitions than training rows",
                      plan.partitions,
                      fmt::format("at most the {} training rows", data.train->rows()));
    }
    plan.objective = std::make_shared<models::Objective>(data.train, loss, l2, plan.partitions);
    if (data.test && data.test->rows() > 0) {
      plan.test_objective = std::make_shared<models::Objective>(data.test, loss, l2, 1);
    }
  } else if (root.has("loss")) {
    root.fail("loss", "unknown key; a delay-only run (\"data\": null) has no loss");
  }

  // Optimiser.
  JsonReader opt_reader = root.object("optimizer");
  plan.iterations = static_cast<std::uint64_t>(opt_reader.integer("iterations", std::nullopt, 0));
  if (!delay_only) {
    const auto kind = opt_reader.choice("kind", "optimizer", {"gd", "nesterov"}, "gd");
    plan.optimizer = kind == "nesterov" ? OptimizerKind::kNesterov : OptimizerKind::kGd;
    const double beta = plan.objective->smoothness();
    if (opt_reader.has("step") && opt_reader.raw("step").is_string()) {
      const auto step = opt_reader.string("step", std::nullopt);
      if (step != "auto") {
        opt_reader.fail_value("step", "unknown step", step, "a number > 0 or \"auto\" (1/beta)");
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

  // Backend.
  nlohmann::json resolved_faults = nlohmann::json::array();
  if (root.has("backend")) {
    read_backend(root, plan, delay_only, resolved_faults);
  }
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

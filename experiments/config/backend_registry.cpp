#include "experiments/config/backend_registry.h"

#include <fmt/format.h>

#include <utility>

#include "experiments/config/row_registry.h"
#include "experiments/config/run_plan.h"
#include "sim/backends/mpi_backend.h"
#include "sim/backends/mpi_session.h"
#include "sim/backends/simulated_backend.h"
#include "sim/backends/threaded_backend.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::experiments {
namespace {

/// A slow worker's default slowdown (the bimodal delay's default slowdown too).
constexpr double kDefaultSlowFactor = 5.0;

BackendSetup make_simulated(JsonReader& /*backend*/, const BackendContext& /*context*/) {
  BackendSetup setup;
  setup.make = [](const RunPlan& plan, models::WorkerPool* pool) -> std::unique_ptr<sim::Backend> {
    auto cluster = plan.make_cluster(plan.seed);
    std::optional<sim::MinibatchOptions> minibatch;
    if (plan.batch) {
      minibatch = sim::MinibatchOptions{*plan.batch, plan.seed};
    }
    return std::make_unique<sim::SimulatedBackend>(
        plan.objective, plan.scheme, std::move(cluster), pool, minibatch, plan.seed);
  };
  return setup;
}

/// The faults of a wall-clock backend: each {"worker", "kind": "crash" | "hang" | "slow",
/// "from_iteration" (1)}, a slow one with "factor" (5); at most one per worker. Returns them
/// resolved (defaults filled in).
nlohmann::json read_faults(JsonReader& reader,
                           const BackendContext& context,
                           std::vector<sim::WorkerFault>& out) {
  nlohmann::json resolved = nlohmann::json::array();
  if (!reader.has("faults")) {
    return resolved;
  }
  const nlohmann::json& faults = reader.raw("faults");
  if (!faults.is_array()) {
    reader.fail_value("faults", "wrong type", faults, "an array of fault objects");
  }
  for (std::size_t i = 0; i < faults.size(); ++i) {
    JsonReader f(faults[i], reader.file(), fmt::format("{}/{}", reader.pointer_of("faults"), i));
    sim::WorkerFault fault;
    fault.worker = static_cast<int>(f.integer("worker", std::nullopt, 0, context.workers - 1));
    for (const auto& other : out) {
      if (other.worker == fault.worker) {
        f.fail_value("worker",
                     "a second fault for the same worker",
                     fault.worker,
                     "each worker at most once");
      }
    }
    const std::string kind_name = f.choice("kind", "fault", {"crash", "hang", "slow"}, {});
    fault.kind = kind_name == "hang"   ? sim::FaultKind::kHang
                 : kind_name == "slow" ? sim::FaultKind::kSlow
                                       : sim::FaultKind::kCrash;
    fault.from_iteration = static_cast<std::uint64_t>(f.integer("from_iteration", 1, 1));
    if (fault.kind == sim::FaultKind::kSlow) {
      fault.factor = f.number("factor", kDefaultSlowFactor, 1.0, sim::kMaxSlowFactor);
    }
    f.finish();
    out.push_back(fault);
    resolved.push_back(f.resolved());
  }
  return resolved;
}

/// The master's keys of the wall-clock backends (threads, mpi): seconds_per_unit, timeout and
/// faults. The straggler policy is the run's, set when the backend is made.
sim::ThreadedOptions read_master_options(JsonReader& reader, const BackendContext& context) {
  sim::ThreadedOptions options;
  options.seconds_per_unit = reader.number("seconds_per_unit", options.seconds_per_unit);
  // Capped so that a hung worker always ends the run (sim::kMaxThreadedTimeout: one hour).
  options.timeout = reader.number("timeout", options.timeout);
  if (const Validation v = options.validate()) {
    reject(reader, nullptr, *v);
  }
  reader.merge("faults", read_faults(reader, context, options.faults));
  return options;
}

BackendSetup make_threads(JsonReader& backend, const BackendContext& context) {
  const sim::ThreadedOptions options = read_master_options(backend, context);
  BackendSetup setup;
  setup.make = [options](const RunPlan& plan,
                         models::WorkerPool* /*pool*/) -> std::unique_ptr<sim::Backend> {
    sim::ThreadedOptions run_options = options;
    run_options.policy = plan.stragglers;
    run_options.collective = plan.collective;
    return std::make_unique<sim::ThreadedBackend>(
        plan.objective, plan.scheme, plan.make_delays(), plan.seed, std::move(run_options));
  };
  return setup;
}

BackendSetup make_mpi(JsonReader& backend, const BackendContext& context) {
  sim::MpiOptions options;
  options.inject = backend.boolean("inject", options.inject);
  options.master = read_master_options(backend, context);
  // With a collective: the schedule among the worker ranks, or MPI's own MPI_Allreduce (refused
  // without a collective by plan_run, which knows the aggregation).
  // Read only when given, so that the resolved config of a run without it is unchanged.
  options.mpi_allreduce =
      backend.has("allreduce") &&
      backend.choice("allreduce", "allreduce", {"schedule", "mpi"}, std::nullopt) == "mpi";
  const auto for_run = [options](const RunPlan& plan) {
    sim::MpiOptions run_options = options;
    run_options.master.policy = plan.stragglers;
    run_options.master.collective = plan.collective;
    return run_options;
  };
  BackendSetup setup;
  setup.make = [for_run](const RunPlan& plan,
                         models::WorkerPool* /*pool*/) -> std::unique_ptr<sim::Backend> {
    return std::make_unique<sim::MpiBackend>(
        plan.scheme, plan.objective->dimension(), plan.make_delays(), plan.seed, for_run(plan));
  };
  setup.run_worker = [for_run](const RunPlan& plan, int worker) {
    sim::run_mpi_worker(*plan.objective, plan.scheme, for_run(plan), worker);
  };
  return setup;
}

/// The keys of the wall-clock backends, with their defaults.
std::vector<KeyDoc> master_keys() {
  const sim::ThreadedOptions defaults;
  return {{"seconds_per_unit", fmt::format("{}", defaults.seconds_per_unit)},
          {"timeout", fmt::format("{}", defaults.timeout)},
          {"faults", "[]"}};
}

std::vector<BackendRow> builtin_rows() {
  std::vector<KeyDoc> mpi_keys = master_keys();
  mpi_keys.push_back({"inject", "true"});
  mpi_keys.push_back({"allreduce", "schedule"});
  return {
      {"simulated",
       "simulated clock: delays drawn from the delay model (default)",
       {},
       {.real_time = false, .shares_cores = true, .mpi = false, .runs_delay_only = true},
       "",
       make_simulated},
      {"threads",
       "one thread per worker on the wall clock, delays injected; needs data",
       master_keys(),
       {.real_time = true, .shares_cores = false, .mpi = false, .runs_delay_only = false},
       "",
       make_threads},
      {"mpi",
       "one MPI rank per worker and a master rank (mpirun -np workers+1)",
       std::move(mpi_keys),
       {.real_time = true, .shares_cores = false, .mpi = true, .runs_delay_only = false},
       sim::mpi_compiled_in() ? ""
                              : "not compiled in (build with Open MPI: libopenmpi-dev, cmake "
                                "-DSTRAGGLERSIM_WITH_MPI=ON)",
       make_mpi},
  };
}

/// The table behind the functions below.
RowRegistry<BackendRow>& registry() {
  static RowRegistry<BackendRow> table(builtin_rows(), "backend");
  return table;
}

}  // namespace

std::vector<BackendRow> backend_factories() { return registry().rows(); }

std::optional<BackendRow> find_backend(std::string_view name) { return registry().find(name); }

void register_backend(BackendRow row) { registry().add(std::move(row)); }

void unregister_backend(std::string_view name) { registry().remove(name); }

std::string quoted_names(const std::vector<BackendRow>& rows,
                         const std::function<bool(const BackendRow&)>& keep) {
  std::vector<std::string> names;
  for (const auto& row : rows) {
    if (keep(row)) {
      names.push_back(fmt::format("\"{}\"", row.name));
    }
  }
  return or_list(names);
}

std::vector<ChoiceDoc> backend_docs() {
  std::vector<ChoiceDoc> docs;
  for (const auto& row : backend_factories()) {
    docs.push_back({row.name,
                    row.unavailable.empty()
                        ? row.description
                        : fmt::format("{}; {}", row.description, row.unavailable),
                    row.keys,
                    row.requirements});
  }
  return docs;
}

}  // namespace stragglersim::experiments

// Master overhead of the threaded backend at W = 12: per iteration, the real time from the
// broadcast to the stop minus the injected stopping time (simulated stop × seconds_per_unit),
// and the same for the whole iterate() call (decode and combine included). Target ≤ 0.2 ms
// (the reference implementation's MPI overhead was 1.3-4.3 ms). Iterations last about 3-4 ms
// (seconds_per_unit = 1 ms) so many are averaged; the counters are the figures of merit, the
// benchmark's own time is dominated by the injected delays.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "experiments/config/run_plan.h"
#include "sim/backend.h"

namespace stragglersim::sim {
namespace {

experiments::RunPlan plan_for(bool erasurehead) {
  const nlohmann::json config = {
      {"name", "bench"},
      {"seed", 5},
      {"workers", 12},
      {"data",
       {{"source", "synthetic"},
        {"generator", "gaussian_mixture"},
        {"rows", 2400},
        {"features", 50},
        {"test_fraction", 0.0}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      {"code",
       erasurehead ? nlohmann::json{{"kind", "frc"}, {"d", 2}}
                   : nlohmann::json{{"kind", "uncoded"}}},
      {"stopping",
       erasurehead ? nlohmann::json{{"rule", "first_r"}, {"r", 6}}
                   : nlohmann::json{{"rule", "all"}}},
      {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}, {"tail", "load"}}},
      {"optimizer", {{"kind", "gd"}, {"step", 0.5}, {"iterations", 1}}},
      {"backend", {{"kind", "threads"}, {"seconds_per_unit", 0.001}, {"timeout", 5.0}}}};
  return experiments::plan_run(config, "bench.json", std::filesystem::temp_directory_path());
}

void bm_threaded_master_overhead(benchmark::State& state) {
  const auto plan = plan_for(state.range(0) != 0);
  const std::unique_ptr<Backend> made = plan.make_backend(nullptr);
  Backend& backend = *made;
  const double spu = backend.seconds_per_unit();
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(plan.objective->dimension(), 0.01);
  std::uint64_t t = 0;
  double stop_overhead = 0.0;
  double total_overhead = 0.0;
  for (auto _ : state) {
    const BackendIteration it = backend.iterate(++t, x, nullptr);
    benchmark::DoNotOptimize(it.estimate.data());
    const auto& record = backend.real_records()->back();
    stop_overhead += record.real_stop_seconds - it.iteration_time * spu;
    total_overhead += record.real_seconds - it.iteration_time * spu;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["stop_overhead_us"] = 1e6 * stop_overhead / n;
  state.counters["iterate_overhead_us"] = 1e6 * total_overhead / n;
}

BENCHMARK(bm_threaded_master_overhead)
    ->ArgName("erasurehead")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(500)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace stragglersim::sim

// The collective schedule engine (sim/collectives/collective.h): complete_times at n = 256 for
// the ring (2(n − 1) rounds of n transfers) and the double binary tree (2·height rounds), the
// per-iteration cost a simulated cluster pays when it times an all-reduce. Reported as
// items_per_second = collectives timed per second.

#include <benchmark/benchmark.h>

#include <vector>

#include "sim/collectives/collective.h"

namespace stragglersim::sim::collectives {
namespace {

void time_collective(benchmark::State& state, CollectiveKind kind) {
  const auto n = static_cast<int>(state.range(0));
  CollectiveOptions options;
  options.kind = kind;
  options.link.latency = 1e-5;
  options.link.bandwidth = 1e10;
  const Schedule schedule = build_schedule(options, n, 1 << 20);
  std::vector<double> ready(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    ready[static_cast<std::size_t>(i)] = 1e-3 * static_cast<double>((i * 37) % 11);
  }
  std::vector<double> completion(ready.size());
  for (auto _ : state) {
    complete_times(schedule, options, 4.0, ready, completion);
    benchmark::DoNotOptimize(completion.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void bm_collective_ring(benchmark::State& state) { time_collective(state, CollectiveKind::kRing); }
void bm_collective_tree(benchmark::State& state) { time_collective(state, CollectiveKind::kTree); }

BENCHMARK(bm_collective_ring)->Arg(256);
BENCHMARK(bm_collective_tree)->Arg(256);

}  // namespace
}  // namespace stragglersim::sim::collectives

// Iteration-time theory on a replayed trace (sim/theory/iteration_time_theory.h): every marginal
// is discrete, so predict_iteration_time sums exactly over the distinct atoms. Six pool workers
// with `state.range(0)` distinct values each; items_per_second = atoms per second
// (benchmarks/order_statistics.md, "Trace theory").

#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "sim/delays/trace_delay.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {
namespace {

void run_trace_theory(benchmark::State& state, RuleKind rule) {
  const int n = 6;
  const auto per_worker = static_cast<int>(state.range(0));
  DelayTrace trace;
  trace.workers = n;
  trace.per_worker.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < per_worker; ++k) {
      const double u = (k + 0.5) / per_worker;
      trace.per_worker[static_cast<std::size_t>(i)].push_back(1.0 + 0.1 * i -
                                                              (1.0 + 0.2 * i) * std::log1p(-u));
    }
  }
  const TraceDelay delay(
      std::vector<double>(n, 1.0), trace, {.mode = TraceDelay::Mode::kBootstrap});
  const SchemeDescription scheme{.workers = n, .rule = rule, .r = rule == RuleKind::kAll ? n : 4};
  for (auto _ : state) {
    benchmark::DoNotOptimize(predict_iteration_time(scheme, delay).mean);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n * per_worker);
}

void bm_trace_theory_all(benchmark::State& state) { run_trace_theory(state, RuleKind::kAll); }
void bm_trace_theory_first_r(benchmark::State& state) {
  run_trace_theory(state, RuleKind::kFirstR);
}

BENCHMARK(bm_trace_theory_all)->Arg(4000)->Arg(400000)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_trace_theory_first_r)->Arg(4000)->Arg(400000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stragglersim::sim

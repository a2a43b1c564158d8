// Delay-only throughput: worker-delay draws per second per core on the fast path, against the
// bare generator (Boost mt19937_64 + exponential_distribution) as the ceiling. Reported as the
// items_per_second counter; quote ratios from one run (benchmarks/README.md).

#include <benchmark/benchmark.h>

#include <boost/random/exponential_distribution.hpp>
#include <memory>

#include "codes/uncoded_code.h"
#include "sim/fastpath/delay_only.h"

namespace stragglersim::sim {
namespace {

void bm_generator_only(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  RandomEngine rng = make_engine(1, Stream::kDelays);
  boost::random::exponential_distribution<double> exp1(1.0);
  std::vector<double> out(n);
  for (auto _ : state) {
    for (auto& v : out) {
      v = exp1(rng);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

void run_fast_path(benchmark::State& state, bool first_r) {
  const int n = static_cast<int>(state.range(0));
  const auto code = std::make_shared<codes::UncodedCode>(n);
  std::shared_ptr<const StoppingRule> rule;
  if (first_r) {
    rule = std::make_shared<FirstRStopping>(n / 2);
  } else {
    rule = std::make_shared<AllStopping>(n);
  }
  DelayOnlySimulator simulator(
      std::make_unique<ShiftedExponentialDelay>(
          code->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      rule,
      code,
      StragglerPolicy::kCancel,
      1);
  double sink = 0.0;
  for (auto _ : state) {
    sink += simulator.run(1).mean;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n);
}

void bm_delay_only_uncoded_all(benchmark::State& state) { run_fast_path(state, false); }
void bm_delay_only_first_r(benchmark::State& state) { run_fast_path(state, true); }

BENCHMARK(bm_generator_only)->Arg(4096)->Arg(65536);
BENCHMARK(bm_delay_only_uncoded_all)->Arg(4096)->Arg(65536);
BENCHMARK(bm_delay_only_first_r)->Arg(4096)->Arg(65536);

}  // namespace
}  // namespace stragglersim::sim

// Order-statistics sampler throughput: delay-only iterations per second at n up to 10^9 (compact
// codes, uniform loads: nothing per worker), through DelayOnlySimulator::run as a run uses it.
// Reported as items_per_second = iterations per second. Goals: ≥ 10^7/s for the O(1)
// cases, ≥ 10^5/s for first_r at n = 10^9, r = 10^3 (benchmarks/order_statistics.md).

#include <benchmark/benchmark.h>

#include <memory>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/fastpath/delay_only.h"

namespace stragglersim::sim {
namespace {

enum class Rule { kAll, kFirstR, kDeadline, kDecodable, kFirstROrDecodable };

void run_order_statistics(benchmark::State& state, Rule which, int d) {
  const auto n = static_cast<int>(state.range(0));
  const int r = static_cast<int>(state.range(1));
  std::shared_ptr<const codes::GradientCode> code;
  if (d == 1) {
    code = std::make_shared<codes::UncodedCode>(codes::UncodedCode::Options{n, 0},
                                                codes::CompactTag{});
  } else {
    code = std::make_shared<codes::FractionalRepetitionCode>(
        codes::FractionalRepetitionCode::Options{n, 0, d}, codes::CompactTag{});
  }
  std::shared_ptr<const StoppingRule> rule;
  switch (which) {
    case Rule::kAll:
      rule = std::make_shared<AllStopping>(n);
      break;
    case Rule::kFirstR:
      rule = std::make_shared<FirstRStopping>(r);
      break;
    case Rule::kDeadline:
      // Past the shift d, before the maximum: a binomial count every iteration.
      rule = std::make_shared<DeadlineStopping>(2.0 * d + 10.0, n);
      break;
    case Rule::kDecodable:
      rule = std::make_shared<DecodableStopping>(code);
      break;
    case Rule::kFirstROrDecodable:
      rule = std::make_shared<FirstROrDecodableStopping>(r, code);
      break;
  }
  DelayOnlySimulator simulator(
      std::make_unique<ShiftedExponentialDelay>(
          n,
          static_cast<double>(d),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      rule,
      code,
      StragglerPolicy::kCancel,
      1,
      NetworkOptions{},
      Sampler::kOrderStatistics);
  constexpr std::uint64_t kBatch = 1000;
  double sink = 0.0;
  for (auto _ : state) {
    sink += simulator.run(kBatch).mean;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

void bm_os_uncoded_all(benchmark::State& state) { run_order_statistics(state, Rule::kAll, 1); }
void bm_os_uncoded_first_r(benchmark::State& state) {
  run_order_statistics(state, Rule::kFirstR, 1);
}
void bm_os_uncoded_deadline(benchmark::State& state) {
  run_order_statistics(state, Rule::kDeadline, 1);
}
void bm_os_frc2_decodable(benchmark::State& state) {
  run_order_statistics(state, Rule::kDecodable, 2);
}
void bm_os_frc2_deadline(benchmark::State& state) {
  run_order_statistics(state, Rule::kDeadline, 2);
}
void bm_os_frc2_first_r(benchmark::State& state) { run_order_statistics(state, Rule::kFirstR, 2); }
void bm_os_frc2_first_r_or_decodable(benchmark::State& state) {
  run_order_statistics(state, Rule::kFirstROrDecodable, 2);
}

// Args: {n, r}.
BENCHMARK(bm_os_uncoded_all)->Args({65536, 0})->Args({1'000'000, 0})->Args({1'000'000'000, 0});
BENCHMARK(bm_os_uncoded_first_r)
    ->Args({65536, 32768})
    ->Args({1'000'000'000, 16})
    ->Args({1'000'000'000, 1000})
    ->Args({1'000'000'000, 500'000'000});
BENCHMARK(bm_os_uncoded_deadline)->Args({1'000'000'000, 0});
BENCHMARK(bm_os_frc2_decodable)->Args({1'000'000'000, 0});
BENCHMARK(bm_os_frc2_deadline)->Args({1'000'000'000, 0});
BENCHMARK(bm_os_frc2_first_r)
    ->Args({1'000'000'000, 16})
    ->Args({1'000'000'000, 1000})
    ->Args({1'000'000, 500'000})
    ->Args({1'000'000'000, 500'000'000});
BENCHMARK(bm_os_frc2_first_r_or_decodable)
    ->Args({1'000'000, 500'000})
    ->Args({1'000'000'000, 500'000'000});

}  // namespace
}  // namespace stragglersim::sim

// Exact standard deviation of the least-squares curve: the fourth-moment recursion of
// sim::least_squares_gap_spread at the size (p = 20 features, K = 10 FRC groups, first_r
// 10 of 20 workers), GD and Nesterov, a few iterations per call. Reported as items_per_second =
// iterations per second and flops_per_second = counted flops (least_squares_gap_spread_flops)
// per second (benchmarks/theory_checks.md records the cost per iteration).

#include <benchmark/benchmark.h>

#include <cmath>

#include "sim/theory/coded_convergence.h"
#include "sim/theory/least_squares_curve.h"

namespace stragglersim::sim {
namespace {

void run_gap_spread(benchmark::State& state, CurveOptimizer optimizer) {
  const auto p = static_cast<Eigen::Index>(state.range(0));
  const int groups = 10;
  constexpr int kIterations = 3;
  LeastSquaresCurveInputs in;
  for (int g = 0; g < groups; ++g) {
    Eigen::MatrixXd a(2 * p, p);
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      a.data()[i] = std::sin(1.7 * static_cast<double>(i + 31 * g) + 0.2);
    }
    in.hessians.emplace_back(a.transpose() * a / 400.0);
    in.offsets.emplace_back(a.transpose() * Eigen::VectorXd::LinSpaced(2 * p, -1.0, 1.0) / 400.0);
  }
  in.l2 = 0.1;
  in.step = 0.5;
  in.optimizer = optimizer;
  const auto covered = covered_groups_first_r(groups, 2, 10);
  in.moments = coefficient_moments(covered, codes::Rescale::kNone, 0.0);
  const CoverageLaw law{covered, codes::Rescale::kNone, 0.0};
  const double flops = least_squares_gap_spread_flops(in);
  for (auto _ : state) {
    benchmark::DoNotOptimize(least_squares_gap_spread(in, law, kIterations, 1e15));
  }
  state.SetItemsProcessed(state.iterations() * kIterations);
  state.counters["flops_per_second"] = benchmark::Counter(
      flops * kIterations * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void bm_gap_spread_gd(benchmark::State& state) { run_gap_spread(state, CurveOptimizer::kGd); }
void bm_gap_spread_nesterov(benchmark::State& state) {
  run_gap_spread(state, CurveOptimizer::kNesterov);
}

// Arg: p.
BENCHMARK(bm_gap_spread_gd)->Arg(10)->Arg(20)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_gap_spread_nesterov)->Arg(10)->Arg(20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stragglersim::sim

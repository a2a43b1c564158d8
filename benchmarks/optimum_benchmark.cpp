// f* (models::solve_optimum) on the covtype-like shape (logistic, l2 = 1e-4, 88 non-zeros per
// row), before and after the matrix-free solvers:
//   bm_optimum/…/0         Newton on the dense p × p Hessian, what p ≤ 4000 always used before;
//   bm_optimum/…/1         L-BFGS to ‖∇f‖ ≤ 1e-10·max(1, ‖∇f(0)‖), what is used now;
//   bm_optimum_nesterov_before  20 000 accelerated-gradient steps of size 1/β, the fallback
//                          above 4000 features before (removed; no certificate, kept here as the
//                          baseline only).
// Arguments: rows, features (and the solver). The counters give the certificate reached and the
// iterations.

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <utility>

#include "models/optimum.h"
#include "models/tabular_synthetic_data.h"

namespace stragglersim::models {
namespace {

const Objective& covtype_like(Eigen::Index rows, Eigen::Index features) {
  static std::map<std::pair<Eigen::Index, Eigen::Index>, std::unique_ptr<Objective>> cache;
  auto& slot = cache[{rows, features}];
  if (!slot) {
    auto data = std::make_shared<const Dataset>(make_covtype_like({rows, features, 0.572, 1}));
    slot = std::make_unique<Objective>(
        std::move(data), std::shared_ptr<const LossModel>(make_logistic_loss()), 1e-4, 30);
  }
  return *slot;
}

void report(benchmark::State& state, const Objective& f, const Optimum& opt) {
  const double at_zero = f.gradient(Eigen::VectorXd::Zero(f.dimension())).norm();
  state.counters["gradient_norm"] = opt.gradient_norm;
  state.counters["certificate"] = 1e-10 * std::max(1.0, at_zero);
  state.counters["iterations"] = opt.iterations;
  state.counters["converged"] = opt.converged ? 1.0 : 0.0;
}

/// Third argument: 0 the exact solver, 1 the iterative one.
void bm_optimum(benchmark::State& state) {
  const Objective& f = covtype_like(state.range(0), state.range(1));
  const auto solver =
      state.range(2) == 0 ? OptimumOptions::Solver::kExact : OptimumOptions::Solver::kIterative;
  Optimum opt;
  for (auto _ : state) {
    opt = solve_optimum(f, {solver});
  }
  state.SetLabel(opt.method);
  report(state, f, opt);
}

void bm_optimum_nesterov_before(benchmark::State& state) {
  const Objective& f = covtype_like(state.range(0), state.range(1));
  Optimum opt;
  for (auto _ : state) {
    const double step = 1.0 / f.smoothness();
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    Eigen::VectorXd y = x;
    for (int t = 0; t < 20000; ++t) {
      const Eigen::VectorXd previous = x;
      x = y - step * f.gradient(y);
      y = x + (static_cast<double>(t) / (t + 3.0)) * (x - previous);
    }
    opt.gradient_norm = f.gradient(x).norm();
    opt.iterations = 20000;
    opt.converged = false;
    benchmark::DoNotOptimize(opt.gradient_norm);
  }
  report(state, f, opt);
}

// The quick figures' covtype-like size (p ≤ 4000: Newton before) and full-width data with the
// rows cut to 20 000 (p = 15 509: Nesterov before).
BENCHMARK(bm_optimum)
    ->Args({20000, 2000, 0})
    ->Args({20000, 2000, 1})
    ->Args({20000, 15509, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK(bm_optimum_nesterov_before)
    ->Args({20000, 15509})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace stragglersim::models

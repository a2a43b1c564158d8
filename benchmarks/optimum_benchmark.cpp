// f* (models::solve_optimum) on the covtype-like shape (logistic, l2 = 1e-4, 88 non-zeros per
// row), before and after the matrix-free solvers:
//   bm_optimum/…/0         Newton on the dense p × p Hessian, what p ≤ 4000 always used before;
//   bm_optimum/…/1         L-BFGS to ‖∇f‖ ≤ 1e-10·max(1, ‖∇f(0)‖), what is used now;
//   bm_optimum_nesterov_before  20 000 accelerated-gradient steps of size 1/β, the fallback
//                          above 4000 features before (removed; no certificate, kept here as the
//                          baseline only).
// Arguments: rows, features (and the solver). The counters give the certificate reached and the
// iterations.
//   bm_newton_hessian/…/0  the lower triangle of SᵀS for one Newton Hessian (S m × p dense) by
//                          Eigen's matrix product in blocks of 16 columns, as before;
//   bm_newton_hessian/…/1  the same by internal::dense_gram_columns over all columns, as now
//                          (packing s included).
// One thread each; arguments rows, features, version.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "models/dense_kernels.h"
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

void bm_newton_hessian(benchmark::State& state) {
  const Eigen::Index m = state.range(0);
  const Eigen::Index p = state.range(1);
  const Eigen::Index ld =
      (p + internal::kGramBlock - 1) / internal::kGramBlock * internal::kGramBlock;
  DenseRows s = DenseRows::Zero(m, ld);
  s.leftCols(p) = DenseRows::Random(m, p);
  DenseRows gram(ld, ld);
  Eigen::VectorXd packed(m * ld);  // the packing is timed too: Newton writes it as it scales
  Eigen::MatrixXd h(p, p);
  constexpr Eigen::Index kWidth = 16;
  for (auto _ : state) {
    if (state.range(2) == 0) {
      for (Eigen::Index first = 0; first < p; first += kWidth) {
        const Eigen::Index cols = std::min(kWidth, p - first);
        h.block(first, first, p - first, cols).noalias() =
            s.leftCols(p).rightCols(p - first).transpose() * s.middleCols(first, cols);
      }
    } else {
      for (Eigen::Index r = 0; r < m; ++r) {
        for (Eigen::Index c = 0; c < ld; ++c)
          packed[internal::gram_packed_index(m, r, c)] = s(r, c);
      }
      gram.setZero();
      internal::dense_gram_columns(packed.data(), m, ld, 0, ld, gram.data());
      h = gram.topLeftCorner(p, p);
    }
    benchmark::DoNotOptimize(h.data());
  }
  state.SetLabel(state.range(2) == 0 ? "eigen" : std::string(internal::dense_kernel_isa()));
}

// The default experiment's training set (4 800 × 200) and a wider one.
BENCHMARK(bm_newton_hessian)
    ->Args({4800, 200, 0})
    ->Args({4800, 200, 1})
    ->Args({4800, 1000, 0})
    ->Args({4800, 1000, 1})
    ->Unit(benchmark::kMillisecond);

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

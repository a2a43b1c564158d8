#include "models/optimum.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <deque>
#include <variant>

#include "models/base/invariant.h"

namespace stragglersim::models {
namespace {

constexpr Eigen::Index kDenseFeatureLimit = 4000;
/// m·p² flops of one Gram matrix (or Newton Hessian) that the exact solvers may spend.
constexpr double kExactWorkLimit = 1e10;
/// Curvature pairs L-BFGS keeps.
constexpr std::size_t kLbfgsMemory = 10;
/// Conjugate gradient recomputes its residual from the data this often, so the recursion's
/// rounding cannot fake the certificate.
constexpr int kResidualRefresh = 50;

Eigen::MatrixXd dense_features(const Dataset& data) {
  return std::visit([](const auto& a) { return Eigen::MatrixXd(a); }, data.features);
}

double tolerance_at_zero(const Objective& f, double relative) {
  return relative * std::max(1.0, f.gradient(Eigen::VectorXd::Zero(f.dimension())).norm());
}

Optimum finish(const Objective& f, Eigen::VectorXd x, std::string method, int iterations) {
  Optimum out;
  out.value = f.value(x);
  out.gradient_norm = f.gradient(x).norm();
  out.x = std::move(x);
  out.method = std::move(method);
  out.iterations = iterations;
  return out;
}

Optimum failed(Optimum out, std::string why) {
  out.converged = false;
  out.failure = std::move(why);
  return out;
}

/// The last iterate of a solve whose budget ran out: failed unless it meets the certificate.
Optimum out_of_budget(Optimum out, double tolerance) {
  if (out.gradient_norm <= tolerance) {
    return out;
  }
  std::string why =
      fmt::format("{} did not reach ‖∇f‖ ≤ {:.3g} within {} iterations (‖∇f‖ = {:.3g})",
                  out.method,
                  tolerance,
                  out.iterations,
                  out.gradient_norm);
  return failed(std::move(out), std::move(why));
}

Optimum normal_equations(const Objective& f) {
  const Eigen::MatrixXd a = dense_features(f.data());
  const double m = static_cast<double>(f.rows());
  const Eigen::VectorXd& b = f.data().labels;
  Eigen::MatrixXd gram = a.transpose() * a / m;
  gram.diagonal().array() += f.l2();
  const Eigen::VectorXd rhs = a.transpose() * b / m;
  return finish(f, gram.completeOrthogonalDecomposition().solve(rhs), "normal equations (COD)", 1);
}

Optimum newton(const Objective& f) {
  const Eigen::MatrixXd a = dense_features(f.data());
  const double m = static_cast<double>(f.rows());
  const Eigen::VectorXd& b = f.data().labels;
  const Eigen::Index p = f.dimension();
  // The Hessian AᵀDA/m + λ₂I, D = σ(z)(1 − σ(z)).
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  const double tolerance = tolerance_at_zero(f, 1e-10);
  int it = 0;
  for (; it < 200; ++it) {
    const Eigen::VectorXd g = f.gradient(x);
    if (g.norm() <= tolerance) {
      break;
    }
    const Eigen::ArrayXd z = (a * x).array() * b.array();
    const Eigen::ArrayXd s = 1.0 / (1.0 + (-z).exp());
    const Eigen::ArrayXd weight = s * (1.0 - s) / m;
    // AᵀDA as the symmetric rank-m update (√D A)ᵀ(√D A): half the flops of a general product,
    // and the cost of f* in every summary.json (experiments/run_diagnostics.cpp) is mostly this.
    const Eigen::MatrixXd scaled = a.array().colwise() * weight.sqrt();
    Eigen::MatrixXd h = Eigen::MatrixXd::Zero(p, p);
    h.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
    h.diagonal().array() += f.l2() + 1e-12;
    const Eigen::VectorXd direction = Eigen::LDLT<Eigen::MatrixXd, Eigen::Lower>(h).solve(g);
    double step = 1.0;
    const double current = f.value(x);
    while (step > 1e-12 &&
           f.value(x - step * direction) > current - 1e-4 * step * g.dot(direction)) {
      step *= 0.5;
    }
    if (step <= 1e-12) {
      break;
    }
    x -= step * direction;
  }
  return finish(f, std::move(x), "newton", it);
}

/// (AᵀA/m + λ₂I)v without forming AᵀA.
Eigen::VectorXd normal_product(const Objective& f, const Eigen::VectorXd& v) {
  const double m = static_cast<double>(f.rows());
  return std::visit(
      [&](const auto& a) -> Eigen::VectorXd {
        const Eigen::VectorXd av = a * v;
        return (a.transpose() * av) / m + f.l2() * v;
      },
      f.data().features);
}

Optimum conjugate_gradient(const Objective& f, const OptimumOptions& options) {
  const Eigen::Index p = f.dimension();
  const double tolerance = tolerance_at_zero(f, options.relative_tolerance);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  // The residual c − Hx of the normal equations is −∇f(x) exactly (least squares).
  Eigen::VectorXd r = -f.gradient(x);
  Eigen::VectorXd d = r;
  double rr = r.squaredNorm();
  for (int it = 0; it < options.max_iterations; ++it) {
    if (std::sqrt(rr) <= tolerance) {
      // The recursion's residual drifts from the true one: certify on the data.
      r = -f.gradient(x);
      rr = r.squaredNorm();
      if (std::sqrt(rr) <= tolerance) {
        return finish(f, std::move(x), "conjugate gradient", it);
      }
    }
    const Eigen::VectorXd hd = normal_product(f, d);
    const double curvature = d.dot(hd);
    if (!(curvature > 0.0)) {
      return failed(finish(f, std::move(x), "conjugate gradient", it),
                    fmt::format("conjugate gradient met a direction of curvature {} at iteration "
                                "{}",
                                curvature,
                                it));
    }
    const double alpha = rr / curvature;
    x += alpha * d;
    if ((it + 1) % kResidualRefresh == 0) {
      r = -f.gradient(x);
    } else {
      r -= alpha * hd;
    }
    const double next = r.squaredNorm();
    d = r + (next / rr) * d;
    rr = next;
  }
  return out_of_budget(finish(f, std::move(x), "conjugate gradient", options.max_iterations),
                       tolerance);
}

/// f(x) and ∇f(x) from one pass over the data.
double value_and_gradient(const Objective& f, const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  const double m = static_cast<double>(f.rows());
  g.setZero(f.dimension());
  const double sum = f.loss().accumulate(f.data(), RowRange{0, f.rows()}, x, g);
  g = g / m + f.l2() * x;
  return sum / m + 0.5 * f.l2() * x.squaredNorm();
}

struct CurvaturePair {
  Eigen::VectorXd s;
  Eigen::VectorXd y;
  double rho = 0.0;  ///< 1 / sᵀy
};

/// −H·g by the two-loop recursion, H the L-BFGS inverse-Hessian estimate.
Eigen::VectorXd lbfgs_direction(const std::deque<CurvaturePair>& pairs, const Eigen::VectorXd& g) {
  Eigen::VectorXd q = g;
  std::vector<double> alpha(pairs.size());
  for (std::size_t i = pairs.size(); i-- > 0;) {
    alpha[i] = pairs[i].rho * pairs[i].s.dot(q);
    q -= alpha[i] * pairs[i].y;
  }
  if (!pairs.empty()) {
    const auto& last = pairs.back();
    q *= 1.0 / (last.rho * last.y.squaredNorm());
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const double beta = pairs[i].rho * pairs[i].y.dot(q);
    q += (alpha[i] - beta) * pairs[i].s;
  }
  return -q;
}

Optimum lbfgs(const Objective& f, const OptimumOptions& options) {
  const Eigen::Index p = f.dimension();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd g;
  double value = value_and_gradient(f, x, g);
  const double tolerance = options.relative_tolerance * std::max(1.0, g.norm());
  std::deque<CurvaturePair> pairs;
  Eigen::VectorXd trial;
  Eigen::VectorXd trial_g;
  for (int it = 0; it < options.max_iterations; ++it) {
    const double gnorm = g.norm();
    if (gnorm <= tolerance) {
      return finish(f, std::move(x), "l-bfgs", it);
    }
    Eigen::VectorXd d = lbfgs_direction(pairs, g);
    double slope = g.dot(d);
    if (!(slope < 0.0)) {
      pairs.clear();
      d = -g;
      slope = -gnorm * gnorm;
    }
    // Without curvature pairs the first step is scaled to length 1.
    double step = pairs.empty() ? std::min(1.0, 1.0 / gnorm) : 1.0;
    bool accepted = false;
    while (step > 1e-20) {
      trial = x + step * d;
      const double trial_value = value_and_gradient(f, trial, trial_g);
      // Armijo; near x* the decrease falls below f's rounding, where a smaller gradient decides.
      const bool armijo = trial_value <= value + 1e-4 * step * slope;
      const bool within_rounding =
          trial_value <= value + 1e-14 * std::abs(value) && trial_g.norm() < gnorm;
      if (armijo || within_rounding) {
        accepted = true;
        value = trial_value;
        break;
      }
      step *= 0.5;
    }
    if (!accepted) {
      return failed(finish(f, std::move(x), "l-bfgs", it),
                    fmt::format("l-bfgs line search found no decrease at iteration {} "
                                "(‖∇f‖ = {:.3g}, certificate {:.3g})",
                                it,
                                gnorm,
                                tolerance));
    }
    CurvaturePair pair{trial - x, trial_g - g, 0.0};
    const double sy = pair.s.dot(pair.y);
    // A convex f gives sᵀy ≥ 0; a pair without clear curvature would spoil the estimate.
    if (sy > 1e-12 * pair.s.norm() * pair.y.norm()) {
      pair.rho = 1.0 / sy;
      pairs.push_back(std::move(pair));
      if (pairs.size() > kLbfgsMemory) {
        pairs.pop_front();
      }
    }
    x.swap(trial);
    g.swap(trial_g);
  }
  return out_of_budget(finish(f, std::move(x), "l-bfgs", options.max_iterations), tolerance);
}

}  // namespace

bool exact_solver_fits(const Objective& f) {
  const double p = static_cast<double>(f.dimension());
  return f.dimension() <= kDenseFeatureLimit &&
         static_cast<double>(f.rows()) * p * p <= kExactWorkLimit;
}

Optimum solve_optimum(const Objective& f, const OptimumOptions& options) {
  STRAGGLERSIM_ASSERT(options.max_iterations >= 1, "max_iterations must be >= 1");
  STRAGGLERSIM_ASSERT(
      options.solver != OptimumOptions::Solver::kExact || f.dimension() <= kDenseFeatureLimit,
      "the exact solvers need p <= 4000");
  const bool exact = options.solver == OptimumOptions::Solver::kExact ||
                     (options.solver == OptimumOptions::Solver::kAuto && exact_solver_fits(f));
  const bool quadratic = f.loss().traits().quadratic;
  if (exact) {
    return quadratic ? normal_equations(f) : newton(f);
  }
  return quadratic ? conjugate_gradient(f, options) : lbfgs(f, options);
}

}  // namespace stragglersim::models

#include "models/optimum.h"

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <cmath>
#include <variant>

namespace stragglersim::models {
namespace {

constexpr Eigen::Index kDenseFeatureLimit = 4000;

Eigen::MatrixXd dense_features(const Dataset& data) {
  return std::visit([](const auto& a) { return Eigen::MatrixXd(a); }, data.features);
}

Optimum nesterov(const Objective& f) {
  const double step = 1.0 / f.smoothness();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
  Eigen::VectorXd y = x;
  for (int t = 0; t < 20000; ++t) {
    const Eigen::VectorXd previous = x;
    x = y - step * f.gradient(y);
    y = x + (static_cast<double>(t) / (t + 3.0)) * (x - previous);
  }
  return {x, f.value(x), f.gradient(x).norm(), "nesterov"};
}

}  // namespace

Optimum solve_optimum(const Objective& f) {
  const Eigen::Index p = f.dimension();
  if (p > kDenseFeatureLimit) {
    return nesterov(f);
  }
  const Eigen::MatrixXd a = dense_features(f.data());
  const double m = static_cast<double>(f.rows());
  const Eigen::VectorXd& b = f.data().labels;
  if (f.loss().traits().quadratic) {
    Eigen::MatrixXd gram = a.transpose() * a / m;
    gram.diagonal().array() += f.l2();
    const Eigen::VectorXd rhs = a.transpose() * b / m;
    const Eigen::VectorXd x = gram.completeOrthogonalDecomposition().solve(rhs);
    return {x, f.value(x), f.gradient(x).norm(), "normal equations (COD)"};
  }
  // Otherwise logistic: damped Newton. The Hessian AᵀDA/m + λ₂I, D = σ(z)(1 − σ(z)).
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  const double tolerance = 1e-10 * std::max(1.0, f.gradient(x).norm());
  for (int it = 0; it < 200; ++it) {
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
  return {x, f.value(x), f.gradient(x).norm(), "newton"};
}

}  // namespace stragglersim::models

#include "sim/optimizer.h"

#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

GradientDescent::GradientDescent(Eigen::VectorXd x0, double step) : x_(std::move(x0)), step_(step) {
  STRAGGLERSIM_ASSERT(step > 0.0, "step must be positive");
}

void GradientDescent::step(const Eigen::VectorXd& gradient) { x_.noalias() -= step_ * gradient; }

Nesterov::Nesterov(Eigen::VectorXd x0, double step, double mu)
    : x_(x0), y_(x0), previous_(std::move(x0)), step_(step), mu_(mu) {
  STRAGGLERSIM_ASSERT(step > 0.0 && mu >= 0.0, "step must be positive and mu non-negative");
}

void Nesterov::step(const Eigen::VectorXd& gradient) {
  previous_ = x_;
  x_ = y_ - step_ * gradient;
  const double t = static_cast<double>(t_++);
  double momentum = t / (t + 3.0);
  if (mu_ > 0.0) {
    const double root = std::sqrt(std::min(1.0, mu_ * step_));
    momentum = (1.0 - root) / (1.0 + root);
  }
  y_ = x_ + momentum * (x_ - previous_);
}

}  // namespace stragglersim::sim

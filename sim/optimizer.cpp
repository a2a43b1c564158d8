#include "sim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "models/base/invariant.h"

namespace stragglersim::sim {

double StepSchedule::at(double step, std::uint64_t t) const {
  switch (kind) {
    case Kind::kConstant:
      return step;
    case Kind::kInverseT:
      STRAGGLERSIM_ASSERT(half_life > 0.0, "inverse_t needs a half-life > 0");
      return step / (1.0 + static_cast<double>(t) / half_life);
    case Kind::kCosine: {
      STRAGGLERSIM_ASSERT(horizon >= 1 && floor >= 0.0 && floor <= 1.0,
                          "cosine needs a horizon >= 1 and a floor in [0, 1]");
      const double phase = static_cast<double>(std::min(t, horizon)) / static_cast<double>(horizon);
      return step * (floor + (1.0 - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * phase)));
    }
  }
  return step;
}

std::string StepSchedule::name() const {
  switch (kind) {
    case Kind::kConstant:
      return "constant";
    case Kind::kInverseT:
      return "inverse_t";
    case Kind::kCosine:
      return "cosine";
  }
  return "constant";
}

GradientDescent::GradientDescent(Eigen::VectorXd x0,
                                 double step,
                                 StepSchedule schedule,
                                 double momentum)
    : x_(std::move(x0)), step_(step), schedule_(schedule), momentum_(momentum) {
  STRAGGLERSIM_ASSERT(step > 0.0, "step must be positive");
  STRAGGLERSIM_ASSERT(momentum >= 0.0 && momentum < 1.0, "momentum must be in [0, 1)");
  if (momentum_ > 0.0) {
    velocity_ = Eigen::VectorXd::Zero(x_.size());
  }
}

void GradientDescent::step(const Eigen::VectorXd& gradient) {
  const double gamma = schedule_.at(step_, t_++);
  if (momentum_ > 0.0) {
    velocity_ = momentum_ * velocity_ + gradient;
    x_.noalias() -= gamma * velocity_;
  } else {
    x_.noalias() -= gamma * gradient;
  }
}

Nesterov::Nesterov(Eigen::VectorXd x0, double step, double mu, StepSchedule schedule)
    : x_(x0), y_(x0), previous_(std::move(x0)), step_(step), mu_(mu), schedule_(schedule) {
  STRAGGLERSIM_ASSERT(step > 0.0 && mu >= 0.0, "step must be positive and mu non-negative");
}

void Nesterov::step(const Eigen::VectorXd& gradient) {
  previous_ = x_;
  x_ = y_ - schedule_.at(step_, t_) * gradient;
  const double t = static_cast<double>(t_++);
  double momentum = t / (t + 3.0);
  if (mu_ > 0.0) {
    const double root = std::sqrt(std::min(1.0, mu_ * step_));
    momentum = (1.0 - root) / (1.0 + root);
  }
  y_ = x_ + momentum * (x_ - previous_);
}

ReferenceAgd::ReferenceAgd(Eigen::VectorXd x0, double step, StepSchedule schedule)
    : x_(std::move(x0)), step_(step), schedule_(schedule) {
  STRAGGLERSIM_ASSERT(step > 0.0, "step must be positive");
  u_ = Eigen::VectorXd::Zero(x_.size());
}

void ReferenceAgd::step(const Eigen::VectorXd& gradient) {
  const double theta = 2.0 / (static_cast<double>(t_) + 2.0);
  const double gamma = schedule_.at(step_, t_++);
  Eigen::VectorXd next = (1.0 - theta) * x_ + theta * u_;
  next.noalias() -= gamma * gradient;
  u_ = x_ + (next - x_) / theta;
  x_ = std::move(next);
}

}  // namespace stragglersim::sim

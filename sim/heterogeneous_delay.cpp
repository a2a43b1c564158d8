#include "sim/heterogeneous_delay.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

HeterogeneousDelay::HeterogeneousDelay(std::vector<double> loads,
                                       std::vector<double> factors,
                                       double shift,
                                       double rate,
                                       TailScaling tail)
    : base_(std::move(loads), shift, rate, tail), factors_(std::move(factors)) {
  STRAGGLERSIM_ASSERT(factors_.size() == static_cast<std::size_t>(base_.workers()),
                      "heterogeneous delay needs one factor per worker");
  for (const double c : factors_) {
    STRAGGLERSIM_ASSERT(c > 0.0, "heterogeneous delay factors must be positive");
  }
}

void HeterogeneousDelay::sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) {
  base_.sample(iteration, rng, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] *= factors_[i];
  }
}

double HeterogeneousDelay::cdf(int worker, double t) const {
  return base_.cdf(worker, t / factor(worker));
}

double HeterogeneousDelay::mean(int worker) const { return factor(worker) * base_.mean(worker); }

double HeterogeneousDelay::variance(int worker) const {
  return factor(worker) * factor(worker) * base_.variance(worker);
}

double HeterogeneousDelay::lower_bound(int worker) const {
  return factor(worker) * base_.lower_bound(worker);
}

}  // namespace stragglersim::sim

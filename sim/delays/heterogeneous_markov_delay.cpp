#include "sim/delays/heterogeneous_markov_delay.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation HeterogeneousMarkovDelay::Options::validate(std::size_t workers) const {
  if (auto v = markov.validate()) {
    return v;
  }
  return validate_factors(factors, workers);
}

HeterogeneousMarkovDelay::HeterogeneousMarkovDelay(std::vector<double> loads,
                                                   const Options& options)
    : base_(std::move(loads), options.markov), factors_(options.factors) {
  STRAGGLERSIM_ASSERT(!options.validate(static_cast<std::size_t>(base_.workers())),
                      "heterogeneous markov delay needs one positive factor per worker");
}

void HeterogeneousMarkovDelay::sample(std::uint64_t iteration,
                                      RandomEngine& rng,
                                      std::span<double> out) {
  base_.sample(iteration, rng, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] *= factors_[i];
  }
}

double HeterogeneousMarkovDelay::cdf(int worker, double t) const {
  return base_.cdf(worker, t / factor(worker));
}

double HeterogeneousMarkovDelay::mean(int worker) const {
  return factor(worker) * base_.mean(worker);
}

double HeterogeneousMarkovDelay::variance(int worker) const {
  return factor(worker) * factor(worker) * base_.variance(worker);
}

double HeterogeneousMarkovDelay::lower_bound(int worker) const {
  return factor(worker) * base_.lower_bound(worker);
}

}  // namespace stragglersim::sim

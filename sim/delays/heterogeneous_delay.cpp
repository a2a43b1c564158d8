#include "sim/delays/heterogeneous_delay.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation validate_factors(const std::vector<double>& factors, std::size_t workers) {
  const std::string expected =
      fmt::format("an array of {} numbers > 0 (one slowdown factor per worker)", workers);
  if (factors.size() != workers) {
    return Violation{"factors", "wrong shape", expected, Violation::Got::kSize};
  }
  for (std::size_t i = 0; i < factors.size(); ++i) {
    if (!(factors[i] > 0.0)) {
      return Violation{"factors", "bad factor", expected, Violation::Got::kElement, i};
    }
  }
  return std::nullopt;
}

Validation HeterogeneousDelay::Options::validate(std::size_t workers) const {
  if (auto v = options_check::first_of(
          {options_check::at_least("shift", shift, 0.0), options_check::positive("rate", rate)})) {
    return v;
  }
  return validate_factors(factors, workers);
}

HeterogeneousDelay::HeterogeneousDelay(std::vector<double> loads, const Options& options)
    : base_(std::move(loads), {options.shift, options.rate, options.tail}),
      factors_(options.factors) {
  STRAGGLERSIM_ASSERT(!options.validate(static_cast<std::size_t>(base_.workers())),
                      "heterogeneous delay needs one positive factor per worker");
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

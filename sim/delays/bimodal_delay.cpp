#include "sim/delays/bimodal_delay.h"

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/exponential_distribution.hpp>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation BimodalDelay::Options::validate() const {
  return options_check::first_of(
      {options_check::at_least("shift", shift, 0.0),
       options_check::positive("rate", rate),
       options_check::in_range("slow_probability", slow_probability, 0.0, 1.0),
       options_check::at_least("slowdown", slowdown, 1.0)});
}

BimodalDelay::BimodalDelay(std::vector<double> loads, const Options& options)
    : base_(std::move(loads), {options.shift, options.rate, options.tail}),
      slow_probability_(options.slow_probability),
      slowdown_(options.slowdown) {
  STRAGGLERSIM_ASSERT(!options.validate(),
                      "bimodal delay needs a slow probability in [0, 1] and a slowdown >= 1");
}

void BimodalDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == static_cast<std::size_t>(base_.workers()),
                      "output span must hold one delay per worker");
  boost::random::bernoulli_distribution<double> slow(slow_probability_);
  boost::random::exponential_distribution<double> exp1(1.0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int w = static_cast<int>(i);
    const double factor = slow(rng) ? slowdown_ : 1.0;
    out[i] = factor * (base_.worker_shift(w) + base_.worker_scale(w) * exp1(rng));
  }
}

double BimodalDelay::cdf(int worker, double t) const {
  return (1.0 - slow_probability_) * base_.cdf(worker, t) +
         slow_probability_ * base_.cdf(worker, t / slowdown_);
}

double BimodalDelay::mean(int worker) const {
  return (1.0 - slow_probability_ + slow_probability_ * slowdown_) * base_.mean(worker);
}

double BimodalDelay::variance(int worker) const {
  const double m0 = base_.mean(worker);
  const double second0 = base_.variance(worker) + m0 * m0;
  const double second =
      (1.0 - slow_probability_ + slow_probability_ * slowdown_ * slowdown_) * second0;
  const double m = mean(worker);
  return second - m * m;
}

double BimodalDelay::lower_bound(int worker) const { return base_.lower_bound(worker); }

}  // namespace stragglersim::sim

#include "sim/delays/markov_delay.h"

#include <algorithm>
#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/exponential_distribution.hpp>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation MarkovDelay::Options::validate() const {
  Validation v =
      options_check::first_of({options_check::at_least("shift", shift, 0.0),
                               options_check::positive("rate", rate),
                               options_check::at_least("slow_shift", slow_shift, 0.0),
                               options_check::positive("slow_rate", slow_rate),
                               options_check::in_range("to_slow", to_slow, 0.0, 1.0),
                               options_check::in_range("to_normal", to_normal, 0.0, 1.0)});
  if (!v && to_slow + to_normal <= 0.0) {
    v = Violation{"to_normal",
                  "out of range",
                  "a number in (0, 1] when to_slow = 0 (the chain needs a stationary law)"};
  }
  return v;
}

MarkovDelay::MarkovDelay(std::vector<double> loads, const Options& options)
    : normal_(loads, {options.shift, options.rate, options_check::require_valid(options).tail}),
      slow_state_(std::move(loads), {options.slow_shift, options.slow_rate, options.tail}),
      to_slow_(options.to_slow),
      to_normal_(options.to_normal),
      stationary_slow_(options.to_slow / (options.to_slow + options.to_normal)),
      slow_(static_cast<std::size_t>(normal_.workers()), 0) {}

void MarkovDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == slow_.size(), "output span must hold one delay per worker");
  boost::random::bernoulli_distribution<double> initial(stationary_slow_);
  boost::random::bernoulli_distribution<double> becomes_slow(to_slow_);
  boost::random::bernoulli_distribution<double> recovers(to_normal_);
  boost::random::exponential_distribution<double> exp1(1.0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int w = static_cast<int>(i);
    if (!started_) {
      slow_[i] = initial(rng) ? 1 : 0;
    } else if (slow_[i] != 0) {
      slow_[i] = recovers(rng) ? 0 : 1;
    } else {
      slow_[i] = becomes_slow(rng) ? 1 : 0;
    }
    const ShiftedExponentialDelay& state = slow_[i] != 0 ? slow_state_ : normal_;
    out[i] = state.worker_shift(w) + state.worker_scale(w) * exp1(rng);
  }
  started_ = true;
}

double MarkovDelay::cdf(int worker, double t) const {
  return (1.0 - stationary_slow_) * normal_.cdf(worker, t) +
         stationary_slow_ * slow_state_.cdf(worker, t);
}

double MarkovDelay::mean(int worker) const {
  return (1.0 - stationary_slow_) * normal_.mean(worker) +
         stationary_slow_ * slow_state_.mean(worker);
}

double MarkovDelay::variance(int worker) const {
  const double m0 = normal_.mean(worker);
  const double m1 = slow_state_.mean(worker);
  const double second = (1.0 - stationary_slow_) * (normal_.variance(worker) + m0 * m0) +
                        stationary_slow_ * (slow_state_.variance(worker) + m1 * m1);
  const double m = mean(worker);
  return second - m * m;
}

double MarkovDelay::lower_bound(int worker) const {
  // A state of probability 0 never occurs: its shift is no bound.
  if (stationary_slow_ == 0.0) return normal_.lower_bound(worker);
  if (stationary_slow_ == 1.0) return slow_state_.lower_bound(worker);
  return std::min(normal_.lower_bound(worker), slow_state_.lower_bound(worker));
}

}  // namespace stragglersim::sim

#include "sim/delays/lognormal_delay.h"

#include <boost/math/distributions/lognormal.hpp>
#include <boost/random/lognormal_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation LogNormalDelay::Options::validate() const {
  return options_check::first_of({options_check::at_least("shift", shift, 0.0),
                                  options_check::in_range("log_mean", log_mean, -700.0, 700.0),
                                  options_check::positive("log_sd", log_sd)});
}

LogNormalDelay::LogNormalDelay(std::vector<double> loads, const Options& options)
    : ScaledTailDelay(std::move(loads), options_check::require_valid(options).shift, options.tail),
      log_mean_(options.log_mean),
      log_sd_(options.log_sd) {}

void LogNormalDelay::draw_tail(RandomEngine& rng, std::span<double> out) const {
  boost::random::lognormal_distribution<double> y(log_mean_, log_sd_);
  for (double& v : out) {
    v = y(rng);
  }
}

double LogNormalDelay::tail_cdf(double y) const {
  return boost::math::cdf(boost::math::lognormal_distribution<double>(log_mean_, log_sd_), y);
}

double LogNormalDelay::tail_mean() const { return std::exp(log_mean_ + 0.5 * log_sd_ * log_sd_); }

double LogNormalDelay::tail_variance() const {
  const double s2 = log_sd_ * log_sd_;
  return std::expm1(s2) * std::exp(2.0 * log_mean_ + s2);
}

}  // namespace stragglersim::sim

#include "sim/delays/weibull_delay.h"

#include <boost/math/distributions/weibull.hpp>
#include <boost/random/weibull_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation WeibullDelay::Options::validate() const {
  return options_check::first_of({options_check::at_least("shift", shift, 0.0),
                                  options_check::positive("shape", shape),
                                  options_check::positive("scale", scale)});
}

WeibullDelay::WeibullDelay(std::vector<double> loads, const Options& options)
    : ScaledTailDelay(std::move(loads), options_check::require_valid(options).shift, options.tail),
      shape_(options.shape),
      scale_(options.scale) {}

void WeibullDelay::draw_tail(RandomEngine& rng, std::span<double> out) const {
  boost::random::weibull_distribution<double> y(shape_, scale_);
  for (double& v : out) {
    v = y(rng);
  }
}

double WeibullDelay::tail_cdf(double y) const {
  return boost::math::cdf(boost::math::weibull_distribution<double>(shape_, scale_), y);
}

double WeibullDelay::tail_mean() const { return scale_ * std::tgamma(1.0 + 1.0 / shape_); }

double WeibullDelay::tail_variance() const {
  const double g1 = std::tgamma(1.0 + 1.0 / shape_);
  return scale_ * scale_ * (std::tgamma(1.0 + 2.0 / shape_) - g1 * g1);
}

}  // namespace stragglersim::sim

#include "sim/delays/gamma_delay.h"

#include <boost/math/distributions/gamma.hpp>
#include <boost/random/gamma_distribution.hpp>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation GammaDelay::Options::validate() const {
  return options_check::first_of({options_check::at_least("shift", shift, 0.0),
                                  options_check::positive("shape", shape),
                                  options_check::positive("scale", scale)});
}

GammaDelay::GammaDelay(std::vector<double> loads, const Options& options)
    : ScaledTailDelay(std::move(loads), options_check::require_valid(options).shift, options.tail),
      shape_(options.shape),
      scale_(options.scale) {}

void GammaDelay::draw_tail(RandomEngine& rng, std::span<double> out) const {
  boost::random::gamma_distribution<double> y(shape_, scale_);
  for (double& v : out) {
    v = y(rng);
  }
}

double GammaDelay::tail_cdf(double y) const {
  return boost::math::cdf(boost::math::gamma_distribution<double>(shape_, scale_), y);
}

double GammaDelay::tail_mean() const { return shape_ * scale_; }

double GammaDelay::tail_variance() const { return shape_ * scale_ * scale_; }

}  // namespace stragglersim::sim

#include "sim/delays/pareto_delay.h"

#include <boost/random/exponential_distribution.hpp>
#include <cmath>
#include <limits>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation ParetoDelay::Options::validate() const {
  return options_check::first_of({options_check::at_least("shift", shift, 0.0),
                                  options_check::positive("scale", scale),
                                  options_check::positive("shape", shape)});
}

ParetoDelay::ParetoDelay(std::vector<double> loads, const Options& options)
    : loads_(std::move(loads)),
      shift_(options.shift),
      scale_(options.scale),
      shape_(options.shape),
      tail_(options.tail) {
  STRAGGLERSIM_ASSERT(!options.validate(), "pareto delay needs shift >= 0, scale > 0, shape > 0");
  for (const double l : loads_) {
    STRAGGLERSIM_ASSERT(l >= 0.0, "loads must be non-negative");
  }
}

double ParetoDelay::load_shift(int worker) const {
  return loads_[static_cast<std::size_t>(worker)] * shift_;
}

double ParetoDelay::tail_factor(int worker) const {
  return tail_ == TailScaling::kLoad ? loads_[static_cast<std::size_t>(worker)] : 1.0;
}

void ParetoDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == loads_.size(), "output span must hold one delay per worker");
  // Inversion through an exponential keeps Boost.Random as the only source of variates.
  boost::random::exponential_distribution<double> exp1(1.0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int w = static_cast<int>(i);
    const double x = scale_ * std::exp(exp1(rng) / shape_);
    // A worker without load under Model A (a BGC row can be empty) finishes at once; the draw
    // is still consumed so the stream stays aligned with the worker order.
    out[i] = tail_factor(w) == 0.0 ? load_shift(w) : load_shift(w) + tail_factor(w) * x;
  }
}

double ParetoDelay::cdf(int worker, double t) const {
  if (tail_factor(worker) == 0.0) {
    return t >= load_shift(worker) ? 1.0 : 0.0;
  }
  const double y = (t - load_shift(worker)) / tail_factor(worker);
  return y <= scale_ ? 0.0 : -std::expm1(shape_ * std::log(scale_ / y));
}

double ParetoDelay::mean(int worker) const {
  if (tail_factor(worker) == 0.0) {
    return load_shift(worker);
  }
  if (shape_ <= 1.0) {
    return std::numeric_limits<double>::infinity();
  }
  return load_shift(worker) + tail_factor(worker) * shape_ * scale_ / (shape_ - 1.0);
}

double ParetoDelay::variance(int worker) const {
  if (tail_factor(worker) == 0.0) {
    return 0.0;
  }
  if (shape_ <= 2.0) {
    return std::numeric_limits<double>::infinity();
  }
  const double s = tail_factor(worker) * scale_;
  return s * s * shape_ / ((shape_ - 1.0) * (shape_ - 1.0) * (shape_ - 2.0));
}

double ParetoDelay::lower_bound(int worker) const {
  return load_shift(worker) + tail_factor(worker) * scale_;
}

}  // namespace stragglersim::sim

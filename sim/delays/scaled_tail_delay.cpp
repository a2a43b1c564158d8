#include "sim/delays/scaled_tail_delay.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

ScaledTailDelay::ScaledTailDelay(std::vector<double> loads, double shift, TailScaling tail)
    : loads_(std::move(loads)), shift_(shift), tail_(tail) {
  STRAGGLERSIM_ASSERT(shift_ >= 0.0, "a delay shift must be >= 0");
  for (const double l : loads_) {
    STRAGGLERSIM_ASSERT(l >= 0.0, "loads must be non-negative");
  }
}

double ScaledTailDelay::load_shift(int worker) const {
  return loads_[static_cast<std::size_t>(worker)] * shift_;
}

double ScaledTailDelay::tail_factor(int worker) const {
  return tail_ == TailScaling::kLoad ? loads_[static_cast<std::size_t>(worker)] : 1.0;
}

void ScaledTailDelay::sample(std::uint64_t /*iteration*/,
                             RandomEngine& rng,
                             std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == loads_.size(), "output span must hold one delay per worker");
  draw_tail(rng, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int w = static_cast<int>(i);
    // A worker without load under Model A finishes at once (its draw was still consumed).
    out[i] = tail_factor(w) == 0.0 ? load_shift(w) : load_shift(w) + tail_factor(w) * out[i];
  }
}

double ScaledTailDelay::cdf(int worker, double t) const {
  const double u = t - load_shift(worker);
  if (tail_factor(worker) == 0.0) {
    return u >= 0.0 ? 1.0 : 0.0;
  }
  return u <= 0.0 ? 0.0 : tail_cdf(u / tail_factor(worker));
}

double ScaledTailDelay::mean(int worker) const {
  return load_shift(worker) + tail_factor(worker) * tail_mean();
}

double ScaledTailDelay::variance(int worker) const {
  return tail_factor(worker) * tail_factor(worker) * tail_variance();
}

double ScaledTailDelay::lower_bound(int worker) const { return load_shift(worker); }

}  // namespace stragglersim::sim

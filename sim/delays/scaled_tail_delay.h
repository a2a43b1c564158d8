#pragma once
// Shift plus a load-scaled positive tail (docs/model.md "Further models"), in simulated seconds:
// the common frame of the log-normal, gamma and Weibull delay models.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// T_i = ℓ_i·a + s(ℓ_i)·Y_i with Y_i i.i.d. over workers and iterations from a positive law
/// (the subclass's), s(ℓ) = ℓ (tail "load", Model A) or 1 ("none", Model B), as for
/// ShiftedExponentialDelay. So F_i(t) = F_Y((t − ℓ_i·a)/s(ℓ_i)), E[T_i] = ℓ_i·a + s·E[Y],
/// Var[T_i] = s²·Var[Y], lower bound ℓ_i·a. A worker without load under tail "load" finishes at
/// once (T = 0), its draw still consumed. One draw of Y per worker in worker order.
/// Illegal: a negative load, shift < 0.
class ScaledTailDelay : public DelayModel {
 public:
  ScaledTailDelay(std::vector<double> loads, double shift, TailScaling tail);
  [[nodiscard]] int workers() const override { return static_cast<int>(loads_.size()); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] double shift() const { return shift_; }
  [[nodiscard]] TailScaling tail() const { return tail_; }

 protected:
  /// Draws `out.size()` values of Y in order.
  virtual void draw_tail(RandomEngine& rng, std::span<double> out) const = 0;
  /// P(Y ≤ y), y > 0.
  [[nodiscard]] virtual double tail_cdf(double y) const = 0;
  [[nodiscard]] virtual double tail_mean() const = 0;
  [[nodiscard]] virtual double tail_variance() const = 0;

 private:
  [[nodiscard]] double load_shift(int worker) const;
  [[nodiscard]] double tail_factor(int worker) const;

  std::vector<double> loads_;
  double shift_;
  TailScaling tail_;
};

}  // namespace stragglersim::sim

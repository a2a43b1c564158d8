#pragma once
// Heavy-tailed worker delays (docs/model.md "Further models"), in simulated seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Shifted, load-scaled Pareto delays:
///   T_i = ℓ_i·a + s(ℓ_i)·Y_i,   Y_i ~ Pareto(x_m, α) i.i.d.,   P(Y > y) = (x_m / y)^α for y ≥ x_m,
/// with s(ℓ) = ℓ (Model A) or 1 (Model B) as for ShiftedExponentialDelay. So T_i ≥ ℓ_i·a + s·x_m,
/// E[T_i] = ℓ_i·a + s·α·x_m/(α − 1) (infinite for α ≤ 1) and
/// Var[T_i] = s²·x_m²·α / ((α − 1)²(α − 2)) (infinite for α ≤ 2).
/// Drawn as Y = x_m·exp(E/α), E ~ Exp(1) from Boost.Random, one draw per worker in worker order.
/// A worker without load (ℓ = 0, e.g. an empty BGC row) under tail scaling "load" finishes at
/// once: T = 0. Illegal: options that fail validate(), a negative load.
class ParetoDelay final : public DelayModel {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;  ///< a ≥ 0
    double scale = 1.0;  ///< x_m > 0
    double shape = 2.5;  ///< α > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shift ≥ 0, scale > 0, shape > 0.
    [[nodiscard]] Validation validate() const;
  };
  ParetoDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "pareto"; }
  [[nodiscard]] int workers() const override { return static_cast<int>(loads_.size()); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] double shift() const { return shift_; }
  [[nodiscard]] double scale() const { return scale_; }
  [[nodiscard]] double shape() const { return shape_; }
  [[nodiscard]] TailScaling tail() const { return tail_; }

 private:
  [[nodiscard]] double load_shift(int worker) const;
  [[nodiscard]] double tail_factor(int worker) const;

  std::vector<double> loads_;
  double shift_;
  double scale_;
  double shape_;
  TailScaling tail_;
};

}  // namespace stragglersim::sim

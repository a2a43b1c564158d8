#pragma once
// Shifted Weibull worker delays (docs/model.md "Further models"), in simulated seconds.

#include <string>
#include <vector>

#include "sim/delays/scaled_tail_delay.h"

namespace stragglersim::sim {

/// Y ~ Weibull(k, λ), P(Y > y) = e^{−(y/λ)^k}; E[Y] = λΓ(1 + 1/k),
/// Var[Y] = λ²[Γ(1 + 2/k) − Γ(1 + 1/k)²]. Drawn by boost::random::weibull_distribution.
/// Illegal: options that fail validate().
class WeibullDelay final : public ScaledTailDelay {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;  ///< a ≥ 0
    double shape = 1.5;  ///< k > 0
    double scale = 1.0;  ///< λ > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shift ≥ 0, shape > 0, scale > 0.
    [[nodiscard]] Validation validate() const;
  };
  WeibullDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "weibull"; }

 private:
  void draw_tail(RandomEngine& rng, std::span<double> out) const override;
  [[nodiscard]] double tail_cdf(double y) const override;
  [[nodiscard]] double tail_mean() const override;
  [[nodiscard]] double tail_variance() const override;
  double shape_;
  double scale_;
};

}  // namespace stragglersim::sim

#pragma once
// Shifted gamma worker delays (docs/model.md "Further models"), in simulated seconds.

#include <string>
#include <vector>

#include "sim/delays/scaled_tail_delay.h"

namespace stragglersim::sim {

/// Y ~ Gamma(k, θ), density y^{k−1}e^{−y/θ}/(Γ(k)θ^k); E[Y] = kθ, Var[Y] = kθ². Drawn by
/// boost::random::gamma_distribution. Illegal: options that fail validate().
class GammaDelay final : public ScaledTailDelay {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;  ///< a ≥ 0
    double shape = 2.0;  ///< k > 0
    double scale = 0.5;  ///< θ > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shift ≥ 0, shape > 0, scale > 0.
    [[nodiscard]] Validation validate() const;
  };
  GammaDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "gamma"; }

 private:
  void draw_tail(RandomEngine& rng, std::span<double> out) const override;
  [[nodiscard]] double tail_cdf(double y) const override;
  [[nodiscard]] double tail_mean() const override;
  [[nodiscard]] double tail_variance() const override;
  double shape_;
  double scale_;
};

}  // namespace stragglersim::sim

#pragma once
// Shifted log-normal worker delays (docs/model.md "Further models"), in simulated seconds.

#include <string>
#include <vector>

#include "sim/delays/scaled_tail_delay.h"

namespace stragglersim::sim {

/// Y ~ LogNormal(μ, σ): log Y ~ N(μ, σ²); E[Y] = e^{μ+σ²/2}, Var[Y] = (e^{σ²} − 1)e^{2μ+σ²}.
/// Drawn by boost::random::lognormal_distribution. Illegal: options that fail validate().
class LogNormalDelay final : public ScaledTailDelay {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;     ///< a ≥ 0
    double log_mean = 0.0;  ///< μ
    double log_sd = 0.5;    ///< σ > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shift ≥ 0, log_mean in [−700, 700] (e^μ finite), log_sd > 0.
    [[nodiscard]] Validation validate() const;
  };
  LogNormalDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "lognormal"; }

 private:
  void draw_tail(RandomEngine& rng, std::span<double> out) const override;
  [[nodiscard]] double tail_cdf(double y) const override;
  [[nodiscard]] double tail_mean() const override;
  [[nodiscard]] double tail_variance() const override;
  double log_mean_;
  double log_sd_;
};

}  // namespace stragglersim::sim

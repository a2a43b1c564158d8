#pragma once
// Bimodal worker delays (docs/model.md "Further models"), in simulated seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// A shifted exponential in which, independently per worker and iteration, a worker is slowed
/// by a factor κ with probability π:
///   T_i = B_i·(ℓ_i·a + s(ℓ_i)·X_i/λ),   B_i = κ with probability π, else 1,   X_i ~ Exp(1),
/// so F(t) = (1 − π)·F₀(t) + π·F₀(t/κ), E[T] = (1 − π + πκ)·E[T₀] and
/// E[T²] = (1 − π + πκ²)·E[T₀²], with T₀ the ShiftedExponentialDelay of the same parameters.
/// Per worker, in worker order: one Bernoulli(π) draw (none when π = 0, so that π = 0 replays
/// ShiftedExponentialDelay's stream exactly), then one Exp(1) draw, both from Boost.Random.
/// Illegal: options that fail validate(), a load ≤ 0.
class BimodalDelay final : public DelayModel {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;  ///< a ≥ 0
    double rate = 1.0;   ///< λ > 0
    TailScaling tail = TailScaling::kLoad;
    double slow_probability = 0.1;  ///< π ∈ [0, 1]
    double slowdown = 5.0;          ///< κ ≥ 1
    /// The first violated constraint: shift ≥ 0, rate > 0, π ∈ [0, 1], κ ≥ 1.
    [[nodiscard]] Validation validate() const;
  };
  BimodalDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "bimodal"; }
  [[nodiscard]] int workers() const override { return base_.workers(); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] double slow_probability() const { return slow_probability_; }
  [[nodiscard]] double slowdown() const { return slowdown_; }
  [[nodiscard]] const ShiftedExponentialDelay& base() const { return base_; }

 private:
  ShiftedExponentialDelay base_;
  double slow_probability_;
  double slowdown_;
};

}  // namespace stragglersim::sim

#pragma once
// Persistent stragglers: Markov-modulated worker delays (docs/model.md "Persistent
// stragglers"), in simulated seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Each worker has an independent two-state Markov chain S_i,t ∈ {normal, slow} that moves once
/// per iteration with P(normal → slow) = p (`to_slow`), P(slow → normal) = q (`to_normal`); the
/// first iteration's state is drawn from the stationary law P(slow) = π = p/(p + q), so every
/// iteration's marginal is stationary. Given the state,
///   T_i = ℓ_i·a_S + s(ℓ_i)·X_i/λ_S,   X_i ~ Exp(1),   s(ℓ) = ℓ (tail "load") or 1 ("none"),
/// with (a, λ) in the normal state and (a_s, λ_s) in the slow one. A slow spell lasts a
/// Geometric(q) number of iterations (mean 1/q). Stationary marginal: F = (1 − π)·F_normal +
/// π·F_slow; workers being independent, each iteration's joint law is the product of these
/// marginals, so the i.i.d. theory through cdf() gives the long-run mean iteration time (the
/// iterations are dependent, which matters for its standard error, not for the mean).
/// Draws, per sample call, in worker order: one Bernoulli for the state (π at the first call,
/// then p from normal or q from slow; Boost skips the draw when its probability is 0), then one
/// Exp(1). Each sample call is one step of the chains. Illegal: options that fail validate(),
/// a negative load.
class MarkovDelay final : public DelayModel {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;       ///< a ≥ 0 (normal state)
    double rate = 1.0;        ///< λ > 0 (normal state)
    double slow_shift = 4.0;  ///< a_s ≥ 0 (slow state)
    double slow_rate = 0.25;  ///< λ_s > 0 (slow state)
    double to_slow = 0.02;    ///< p ∈ [0, 1]
    double to_normal = 0.2;   ///< q ∈ [0, 1], p + q > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shifts ≥ 0, rates > 0, p and q in [0, 1], p + q > 0.
    [[nodiscard]] Validation validate() const;
  };
  MarkovDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "markov"; }
  [[nodiscard]] int workers() const override { return normal_.workers(); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  /// π = p/(p + q), the stationary probability of the slow state.
  [[nodiscard]] double stationary_slow() const { return stationary_slow_; }
  /// Whether worker i was slow in the last sample call (false before the first).
  [[nodiscard]] bool slow(int worker) const { return slow_[static_cast<std::size_t>(worker)] != 0; }

 private:
  ShiftedExponentialDelay normal_;
  ShiftedExponentialDelay slow_state_;
  double to_slow_;
  double to_normal_;
  double stationary_slow_;
  std::vector<std::uint8_t> slow_;
  bool started_ = false;
};

}  // namespace stragglersim::sim

#pragma once
// Heterogeneous clusters (docs/model.md "Further models"), in simulated seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Per-worker slowdown factors c_i on a shifted exponential:
///   T_i = c_i·(ℓ_i·a + s(ℓ_i)·X_i/λ),   X_i ~ Exp(1) i.i.d.,
/// so c_i = 1 is a nominal worker and c_i = 2 one that is always twice as slow.
/// F_i(t) = F₀_i(t/c_i), E[T_i] = c_i·E[T₀_i], Var[T_i] = c_i²·Var[T₀_i].
/// One Exp(1) draw per worker in worker order (the same stream as ShiftedExponentialDelay).
/// Illegal: options that fail validate(loads.size()), a load ≤ 0.
class HeterogeneousDelay final : public DelayModel {
 public:
  /// Defaults are the config's (factors has none: one per worker is required).
  struct Options {
    double shift = 1.0;  ///< a ≥ 0
    double rate = 1.0;   ///< λ > 0
    TailScaling tail = TailScaling::kLoad;
    std::vector<double> factors = {};  ///< c_i > 0, one per worker
    /// The first violated constraint: shift ≥ 0, rate > 0, one factor per worker, each > 0.
    [[nodiscard]] Validation validate(std::size_t workers) const;
  };
  HeterogeneousDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "heterogeneous"; }
  [[nodiscard]] int workers() const override { return base_.workers(); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] double factor(int worker) const {
    return factors_[static_cast<std::size_t>(worker)];
  }
  [[nodiscard]] const ShiftedExponentialDelay& base() const { return base_; }

 private:
  ShiftedExponentialDelay base_;
  std::vector<double> factors_;
};

/// The first factor of `factors` that is not > 0, or a size other than `workers`, as a Violation
/// of the key "factors" (shared by the heterogeneous models).
[[nodiscard]] Validation validate_factors(const std::vector<double>& factors, std::size_t workers);

}  // namespace stragglersim::sim

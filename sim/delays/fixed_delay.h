#pragma once
// The fixed computation model of the time-optimal SGD literature (Tyurin & Richtárik, NeurIPS
// 2023; docs/model.md "Fixed computation times"), in simulated seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Worker i's computation always takes exactly T_i = τ_i·ℓ_i: no randomness, so the model draws
/// nothing from the stream (a run's other draws are those of a run without delays). τ_i is
/// scale·times[i] from a list, or a formula over the 1-based worker number i: "sqrt" τ_i =
/// scale·√i (the heterogeneous example of those papers), "linear" τ_i = scale·i. The marginal is a
/// point mass at τ_iℓ_i: cdf a step there (atoms() reports it), mean τ_iℓ_i, variance 0. Illegal:
/// options that fail validate(loads.size()), a negative load.
class FixedDelay final : public DelayModel {
 public:
  /// Where τ comes from.
  enum class Formula { kList, kSqrt, kLinear };
  /// Defaults are the config's (times has none: a list or a formula is required).
  struct Options {
    Formula formula = Formula::kList;
    std::vector<double> times = {};  ///< τ_i > 0, one per worker (kList only)
    double scale = 1.0;              ///< > 0, a factor on the list or the formula
    /// The first violated constraint: scale > 0; for kList one time per worker, each > 0.
    [[nodiscard]] Validation validate(std::size_t workers) const;
    /// τ_1..τ_n for `workers` workers (the list, or the formula's values).
    [[nodiscard]] std::vector<double> resolve(std::size_t workers) const;
  };
  FixedDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "fixed"; }
  [[nodiscard]] int workers() const override { return static_cast<int>(delays_.size()); }
  /// Writes τ_iℓ_i; draws nothing.
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] std::span<const double> atoms(int worker) const override;
  /// τ_i (the time of one unit of load).
  [[nodiscard]] double time(int worker) const { return times_[static_cast<std::size_t>(worker)]; }

 private:
  std::vector<double> times_;
  std::vector<double> delays_;  ///< τ_iℓ_i
};

}  // namespace stragglersim::sim

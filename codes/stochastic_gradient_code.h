#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Stochastic gradient coding (Bitar, Wootters, El Rouayheb, "Stochastic Gradient Coding for
/// Straggler-Tolerant Distributed Learning", IEEE JSAIT 2020). Every partition j is replicated on
/// d distinct workers and worker loads are balanced (each worker holds ⌊k d / n⌋ or ⌈k d / n⌉
/// partitions). Seeded construction: partitions, in a random order, each take the d workers with
/// the most capacity left (ties broken uniformly at random), which spreads the partitions of any
/// worker over all the others, so that any two workers share about k d(d−1)/(n(n−1)) partitions
/// (pair-wise balance, their §III). B_ij = 1/d_j on the support, so worker i sends
/// Σ_{j held} ∇F_j / d_j.
///
/// One-step decoding: a_i = 1/(1 − p) on the workers heard, giving α_j = #{heard holders of j} /
/// (d_j (1 − p)), unbiased (E α_j = 1) when each worker straggles independently with probability
/// p. p is the straggling probability given at construction, or, when none was given, the
/// empirical 1 − r/n for the r distinct workers heard (then a_i = n/r, unbiased when the heard set
/// is a uniformly random r-subset). Optimal decoding: least squares (the base class).
///
/// Illegal: workers < 1, partitions < 1, d < 1, d > workers, p outside [0, 1).
class StochasticGradientCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 1;
    int d = 1;  ///< partitions per worker, 1 ≤ d ≤ n
    std::uint64_t seed = 1;
    std::optional<double> p =
        std::nullopt;  ///< straggle probability for the one-step weights, [0, 0.999999]
    /// The first violated constraint: 1 ≤ d ≤ n, 0 ≤ p ≤ 0.999999.
    [[nodiscard]] Validation validate() const;
  };
  explicit StochasticGradientCode(const Options& options);
  /// Shorthand for the Options constructor.
  StochasticGradientCode(int workers,
                         int partitions,
                         int d,
                         std::uint64_t seed,
                         std::optional<double> straggle_probability = std::nullopt);
  [[nodiscard]] std::string name() const override { return "sgc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return 0; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, 0, DecoderFamily::kLinearAlgebra, true};
  }
  [[nodiscard]] int replication() const { return d_; }
  [[nodiscard]] std::optional<double> straggle_probability() const { return p_; }
  [[nodiscard]] std::optional<double> one_step_weight(int heard) const override;

  /// Holders of each partition: d distinct workers per partition, balanced loads.
  [[nodiscard]] static std::vector<std::vector<int>> balanced_assignment(int workers,
                                                                         int partitions,
                                                                         int d,
                                                                         std::uint64_t seed);

 private:
  int d_;
  std::optional<double> p_;
};

}  // namespace stragglersim::codes

#pragma once
#include <cstdint>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Heterogeneity-aware cyclic code (docs/model.md §5 "proportional_crc"; after Wang, Guo, Tang,
/// Li and Li, ICDCS 2019): n workers with slowdown factors f_i, k partitions, exact from any
/// n − s workers.
///
/// Loads: the k(s + 1) partition copies are apportioned in proportion to the speeds 1/f_i (largest
/// remainder, every ℓ_i in [1, k]: a share above k is capped there and the rest apportioned
/// again), so worker i's expected compute time ℓ_i·f_i is about equal across workers.
///
/// Supports: the copies are laid around the circle of partitions in worker order. Worker i holds
/// the ℓ_i partitions (C_i + t) mod k, t < ℓ_i, with C_i = ℓ_0 + … + ℓ_{i−1}; the k(s + 1) slots
/// wrap s + 1 times, so every partition is held by exactly s + 1 workers, all distinct (ℓ_i ≤ k).
///
/// Coefficients (seeded): H ∈ R^{s×n} with i.i.d. N(0, 1) entries, drawn column by column. The
/// column of partition j, supported on its s + 1 holders S_j, solves H b_j = 0 and 1ᵀb_j = 1 (an
/// (s + 1) × (s + 1) system). Every column lies in W = null(H), of dimension n − s. For a set F of
/// n − s workers, the coordinates F of W are a basis of W's dual when the s × s block of H on the
/// other workers is invertible (with probability one); then the a supported on F with aᵀw = 1ᵀw
/// on W gives aᵀB = 1ᵀB = 1ᵀ: exact decoding from any n − s workers, for any loads. s = 0 is
/// uncoded with proportional loads (B_ij = 1). decode_exact checks residual and condition number.
class ProportionalCyclicCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;           ///< k; 0 means k = n
    int s = 0;                    ///< stragglers tolerated, 0 ≤ s < n
    std::vector<double> factors;  ///< one slowdown factor > 0 per worker
    std::uint64_t seed = 1;       ///< the random coefficients' stream
    /// The first violated constraint: 0 ≤ s ≤ n − 1, k(s + 1) ≥ n (one partition per worker at
    /// least), one finite factor > 0 per worker.
    [[nodiscard]] Validation validate() const;
  };
  explicit ProportionalCyclicCode(const Options& options);
  [[nodiscard]] std::string name() const override { return "proportional_crc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return s_; }
  /// Irregular (workers hold different numbers of partitions), linear-algebra decoder.
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, s_, DecoderFamily::kLinearAlgebra, false};
  }
  /// Combinatorial: at least n − s distinct workers heard (decode_exact still verifies).
  [[nodiscard]] bool decodable(std::span<const int> heard) const override;
  /// Any n − s workers: the timing theory's cyclic family at the code's unequal loads.
  [[nodiscard]] bool decodes_from_any_count() const override { return true; }

  /// ℓ_i: `total` units apportioned in proportion to `weights` > 0 by largest remainder, every
  /// share in [1, cap]. Illegal: total outside [w.size(), w.size()·cap], a non-positive weight.
  [[nodiscard]] static std::vector<int> capped_apportion(const std::vector<double>& weights,
                                                         int total,
                                                         int cap);

 private:
  int s_;
};

}  // namespace stragglersim::codes

#pragma once
#include <cstdint>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Cyclic repetition code (Tandon, Lei, Dimakis, Karampatziakis, "Gradient Coding", ICML 2017,
/// §3.2, Algorithm 2): n workers, k = n partitions, worker i holds partitions i, i+1, …, i+s
/// (mod n), so the normalised load is s + 1.
///
/// Construction (seeded): H ∈ R^{s×n} with i.i.d. N(0, 1) entries in its first n − 1 columns and
/// the last column chosen so that H·1 = 0. Row i of B has B_ii = 1 and its other s entries solve
/// H_{:, i+1…i+s} x = −H_{:, i}, so every row lies in null(H), a space of dimension n − s that
/// contains 1. With probability one any n − s rows of B are a basis of null(H), hence any n − s
/// distinct workers decode exactly. Numerically the decode degrades as n grows (see
/// benchmarks/code_stability.md); decode_exact checks residual and condition number.
///
/// Illegal: workers < 1, s < 0, s ≥ workers.
class CyclicRepetitionCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;      ///< k; 0 means k = n, anything else must equal workers
    int s = 0;               ///< stragglers tolerated, 0 ≤ s < n
    std::uint64_t seed = 1;  ///< the random coefficients' stream
    /// The first violated constraint: k = n, 0 ≤ s ≤ n − 1.
    [[nodiscard]] Validation validate() const;
  };
  explicit CyclicRepetitionCode(const Options& options);
  /// Shorthand for CyclicRepetitionCode({.workers = workers, .s = s, .seed = seed}).
  CyclicRepetitionCode(int workers, int s, std::uint64_t seed);
  [[nodiscard]] std::string name() const override { return "crc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return s_; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kCyclic, s_ + 1, 0, s_, DecoderFamily::kLinearAlgebra, false};
  }
  /// Combinatorial: at least n − s distinct workers heard. decode_exact still verifies the
  /// residual and condition number numerically, and may refuse at large n.
  [[nodiscard]] bool decodable(std::span<const int> heard) const override;

 private:
  int s_;
};

/// Number of distinct workers in `heard` (shared by the codes whose decodability is a count).
[[nodiscard]] int distinct_workers(std::span<const int> heard, int workers);

}  // namespace stragglersim::codes

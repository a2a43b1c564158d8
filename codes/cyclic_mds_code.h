#pragma once
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Cyclic MDS gradient code (Raviv, Tamo, Tandon, Dimakis, "Gradient Coding from Cyclic MDS
/// Codes and Expander Graphs", ICML 2018 / IEEE Trans. IT 2020, §III), real-valued. n workers,
/// k = n partitions. Row i of B holds the coefficients of x^i·g(x) mod (x^n − 1), so worker i
/// holds partitions i, …, i + σ (mod n), normalised load σ + 1, where g has degree σ and
///
///     g(x) = Π_{j ∈ R} (x − ω^j),  ω = e^{2πi/n},  R = {(n−σ+1)/2, …, (n+σ−1)/2}.
///
/// R is σ consecutive exponents (so the cyclic code ⟨g⟩ is MDS, [n, n−σ, σ+1], by the BCH bound),
/// closed under j ↦ n − j (so g pairs conjugate roots into real quadratics and B is real), and
/// avoids 0 (so g divides 1 + x + … + x^{n−1}, i.e. 1 ∈ ⟨g⟩ = rowspace(B)). Then any n − σ rows of
/// B are a basis of ⟨g⟩ and decode exactly.
///
/// Choice (documented in the README): such an R exists only when n − σ is odd. For odd n no real
/// cyclic code of odd redundancy contains 1 at all (the real divisors of (xⁿ−1)/(x−1) have even
/// degree), and for even n, s even, the non-consecutive symmetric sets are not MDS in general
/// (n = 4, s = 2 fails). So σ = s when n − s is odd and σ = s + 1 otherwise: the code then
/// tolerates s + 1 stragglers at load s + 2. σ = 0 (s = 0) is B = I. The coefficients of g are
/// scaled so that max_t |g_t| = 1.
///
/// Illegal: workers < 1, s < 0, s ≥ workers − 1 when n − s is even, s ≥ workers otherwise.
class CyclicMdsCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;  ///< k; 0 means k = n, anything else must equal workers
    int s = 0;           ///< requested stragglers tolerated
    /// The first violated constraint: k = n, 0 ≤ s ≤ n − 1, s < n − 1 when n − s is even.
    [[nodiscard]] Validation validate() const;
  };
  explicit CyclicMdsCode(const Options& options);
  /// Shorthand for CyclicMdsCode({.workers = workers, .s = s}).
  CyclicMdsCode(int workers, int s);
  [[nodiscard]] std::string name() const override { return "cyclic_mds"; }
  /// σ (≥ the requested s, see the class comment).
  [[nodiscard]] int stragglers_tolerated() const override { return sigma_; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kCyclic, sigma_ + 1, 0, sigma_, DecoderFamily::kLinearAlgebra, false};
  }
  /// The s asked for at construction.
  [[nodiscard]] int requested_stragglers() const { return requested_; }
  /// The coefficients g_0 … g_σ of the generator polynomial (row 0 of B, first σ + 1 entries).
  [[nodiscard]] const std::vector<double>& generator() const { return generator_; }
  /// True when at least n − σ distinct workers are heard (without linear algebra); some smaller
  /// sets also decode (structured code), which is then checked numerically unless a partition is
  /// uncovered. decode_exact still verifies residual and condition number, and may refuse at
  /// large n.
  [[nodiscard]] bool decodable(std::span<const int> heard) const override;

  /// σ that CyclicMdsCode(workers, s) uses.
  [[nodiscard]] static int effective_redundancy(int workers, int s);
  /// Coefficients of the real generator polynomial of redundancy σ (n − σ odd), max |g_t| = 1.
  [[nodiscard]] static std::vector<double> generator_polynomial(int workers, int sigma);

 private:
  CyclicMdsCode(int workers, int requested, int sigma);
  int requested_;
  int sigma_;
  std::vector<double> generator_;
};

}  // namespace stragglersim::codes

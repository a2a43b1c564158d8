#pragma once
#include <cstdint>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Bernoulli gradient code (Charles, Papailiopoulos, Ellenberg, "Approximate Gradient Coding via
/// Sparse Random Graphs", 2017, §4): B_ij ∈ {0, 1} i.i.d. with P(B_ij = 1) = p = d/n, so each
/// partition is replicated d times and each worker has normalised load d in expectation
/// (with k = n this is "each worker holds each partition with probability d/k"). A partition may
/// be held by nobody; it then always contributes 1 to the decoding error. Entries are drawn
/// row by row (worker, then partition) from mt19937_64(seed).
///
/// One-step decoding: a_i = n / (d·r) on the r distinct workers heard. Then
/// α_j = (n/(d r))·#{heard holders of j}, which for a fixed set of r workers and random B is
/// (n/(d r))·Bin(r, d/n): E α_j = 1 (unbiased) and E(α_j − 1)² = Var α_j = (n − d)/(d r), so
///
///     E ‖α − 1‖² = k (n − d) / (d r).
///
/// Optimal decoding: least squares over the workers heard (the base class).
///
/// Illegal: workers < 1, partitions < 1, d ≤ 0, d > workers.
class BernoulliGradientCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 1;
    double d = 1.0;          ///< expected partitions per worker, 0 < d ≤ n
    std::uint64_t seed = 1;  ///< the random assignment's stream
    /// The first violated constraint: 0 < d ≤ workers.
    [[nodiscard]] Validation validate() const;
  };
  explicit BernoulliGradientCode(const Options& options);
  /// Shorthand for the Options constructor.
  BernoulliGradientCode(int workers, int partitions, double d, std::uint64_t seed);
  [[nodiscard]] std::string name() const override { return "bgc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return 0; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, 0, DecoderFamily::kLinearAlgebra, true};
  }
  /// Expected replication of a partition (= expected normalised load of a worker).
  [[nodiscard]] double replication() const { return d_; }
  [[nodiscard]] std::optional<double> one_step_weight(int heard) const override;
  /// k (n − d) / (d r): the expected one-step decoding error when r workers are heard.
  [[nodiscard]] double expected_one_step_error(int heard) const;

 private:
  double d_;
};

}  // namespace stragglersim::codes

#pragma once
#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// B = I_n (k = n): worker i holds partition i. Exact only when every worker is heard; the
/// optimal decode of a subset K is a = 1_K (α_j = 1 for j ∈ K), which is what
/// "ignore stragglers" uses before its n/r rescaling.
class UncodedCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;  ///< k; 0 means k = n, anything else must equal workers
    /// The first violated constraint: workers ≥ 1, k = n.
    [[nodiscard]] Validation validate() const;
  };
  explicit UncodedCode(const Options& options);
  /// Shorthand for UncodedCode({.workers = workers}). Illegal: workers < 1.
  explicit UncodedCode(int workers);
  /// The compact code (GradientCode::Compact): structure and loads only, O(1) memory, for
  /// delay-only runs at any n. Illegal: options that fail validate().
  UncodedCode(const Options& options, CompactTag /*compact*/);
  [[nodiscard]] std::string name() const override { return "uncoded"; }
  [[nodiscard]] int stragglers_tolerated() const override { return 0; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kGroups, 1, workers(), 0, DecoderFamily::kCombinatorial, false};
  }
  [[nodiscard]] bool decodable(std::span<const int> heard) const override;
  [[nodiscard]] Decoding decode_optimal(std::span<const int> heard) const override;
  [[nodiscard]] Decoding decode_outcome(std::span<const int> heard) const override {
    return decode_optimal(heard);
  }
};

}  // namespace stragglersim::codes

#pragma once
#include "codes/group_code.h"

namespace stragglersim::codes {

/// FRC's supports: worker i holds partitions ⌊i/d⌋·d … ⌊i/d⌋·d + d − 1. Illegal: d ∤ n.
[[nodiscard]] std::vector<std::vector<int>> frc_supports(int n, int d);

/// Fractional repetition code (Tandon et al. 2017, §3; the ErasureHead assignment): n workers,
/// k = n partitions, d | n. Group g = workers g·d … g·d + d − 1, all holding partitions
/// g·d … g·d + d − 1 with B_ij = 1. Load d per worker; tolerates d − 1 stragglers.
/// The optimal decode of any K sums one message per covered group (the first heard, in the
/// order given): α_j = 1 on covered groups and 0 elsewhere, which is both the exact decoder when
/// every group is covered and ErasureHead's approximate estimate otherwise.
class FractionalRepetitionCode final : public GroupCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;  ///< k; 0 means k = n, anything else must equal workers
    int d = 1;           ///< replication, dividing workers
    /// The first violated constraint: k = n, 1 ≤ d ≤ n, d | n.
    [[nodiscard]] Validation validate() const;
  };
  explicit FractionalRepetitionCode(const Options& options);
  /// Shorthand for FractionalRepetitionCode({.workers = workers, .d = d}).
  FractionalRepetitionCode(int workers, int d);
  /// The compact code (GradientCode::Compact): structure and loads only, O(1) memory, for
  /// delay-only runs at any n. Illegal: options that fail validate().
  FractionalRepetitionCode(const Options& options, CompactTag /*compact*/);
  [[nodiscard]] std::string name() const override { return "frc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return d_ - 1; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kGroups, d_, workers() / d_, d_ - 1, DecoderFamily::kCombinatorial, false};
  }
  [[nodiscard]] int replication() const { return d_; }
  [[nodiscard]] int groups() const override { return workers() / d_; }
  [[nodiscard]] int group_of(int worker) const override { return worker / d_; }

 private:
  int d_;
};

}  // namespace stragglersim::codes

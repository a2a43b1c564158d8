#pragma once
#include <string>
#include <vector>

#include "codes/group_code.h"

namespace stragglersim::codes {

/// Fractional repetition with dynamic clustering (docs/model.md §5 "dynamic_frc"; after
/// Buyukates, Ozfatura, Ulukus and Gündüz, arXiv 2103.01206): FRC's n/d groups of d code
/// positions, position p holding partitions ⌊p/d⌋·d … ⌊p/d⌋·d + d − 1, and every K iterations
/// the run re-forms the groups from the stragglers it saw: which worker plays each position is a
/// permutation the simulated cluster keeps (sim/regrouping.h), so the code itself, its decoders
/// and its stopping rules are FRC's, position for position. Tolerates d − 1 stragglers. Its
/// structure is irregular and it has no timing theory: the groups depend on the run's history.
class DynamicFrcCode final : public GroupCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;  ///< k; 0 means k = n, anything else must equal workers
    int d = 1;           ///< replication, dividing workers
    int every = 10;      ///< K: iterations between two regroupings
    /// The first violated constraint: k = n, 1 ≤ d ≤ n, d | n, 1 ≤ K ≤ 10^9.
    [[nodiscard]] Validation validate() const;
  };
  explicit DynamicFrcCode(const Options& options);
  [[nodiscard]] std::string name() const override { return "dynamic_frc"; }
  [[nodiscard]] int stragglers_tolerated() const override { return d_ - 1; }
  /// Irregular (no fixed groups of workers), combinatorial decoder.
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, d_ - 1, DecoderFamily::kCombinatorial, false};
  }
  [[nodiscard]] int regroup_every() const override { return every_; }
  [[nodiscard]] int replication() const { return d_; }
  [[nodiscard]] int groups() const override { return workers() / d_; }
  /// The group of code position `worker` (FRC's: ⌊p/d⌋).
  [[nodiscard]] int group_of(int worker) const override { return worker / d_; }

 private:
  int d_;
  int every_;
};

}  // namespace stragglersim::codes

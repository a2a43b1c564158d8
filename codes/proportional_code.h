#pragma once
#include <vector>

#include "codes/group_code.h"

namespace stragglersim::codes {

/// Heterogeneity-aware fractional repetition (docs/model.md §5 "proportional"; after Wang, Guo,
/// Tang, Li and Li, ICDCS 2019): n workers with slowdown factors f_i (the `factors` of a
/// heterogeneous delay model: worker i takes f_i times as long for the same work), k partitions,
/// d | n. Workers are sorted fastest first (ascending f_i, ties by index) and grouped d at a time;
/// group g has speed s_g = the mean of 1/f_i over its members and holds k_g partitions, the
/// apportionment of k in proportion to s_g by largest remainder with every k_g ≥ 1, as one
/// contiguous block (groups in order of speed). Every member of a group holds its block
/// (B_ij = 1), so a worker's load is k_g·n/k and its expected compute time k_g·f_i·n/k is about
/// equal across groups. d = 1 is uncoded with proportional loads. Decoding is FRC's: one message
/// per covered group (exact when every group is covered); tolerates d − 1 stragglers. With equal
/// factors and k = n it is the FRC of the same d, worker for worker.
/// The slowdown factors of a heterogeneity-aware code: one finite factor > 0 per worker.
[[nodiscard]] Validation worker_factors(int workers, const std::vector<double>& factors);

class ProportionalCode final : public GroupCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;           ///< k; 0 means k = n
    int d = 1;                    ///< replication, dividing workers
    std::vector<double> factors;  ///< one slowdown factor > 0 per worker
    /// The first violated constraint: 1 ≤ d ≤ n, d | n, k ≥ n/d (one partition per group at
    /// least), one finite factor > 0 per worker.
    [[nodiscard]] Validation validate() const;
  };
  explicit ProportionalCode(const Options& options);
  [[nodiscard]] std::string name() const override { return "proportional"; }
  [[nodiscard]] int stragglers_tolerated() const override { return d_ - 1; }
  /// Irregular (groups hold different numbers of partitions), combinatorial decoder.
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, d_ - 1, DecoderFamily::kCombinatorial, false};
  }
  [[nodiscard]] int groups() const override { return static_cast<int>(group_partitions_.size()); }
  [[nodiscard]] int group_of(int worker) const override {
    return group_of_[static_cast<std::size_t>(worker)];
  }
  /// k_g, g = 0 … n/d − 1 (fastest group first).
  [[nodiscard]] const std::vector<int>& group_partitions() const { return group_partitions_; }

  /// The apportionment of `total` among weights w_g > 0 (largest remainder, every share ≥ 1,
  /// ties to the lower index). Illegal: total < w.size(), an empty or non-positive weight.
  [[nodiscard]] static std::vector<int> apportion(const std::vector<double>& weights, int total);

 private:
  struct Layout;
  [[nodiscard]] static Layout make_layout(const Options& options);
  ProportionalCode(const Options& options, Layout layout);

  int d_;
  std::vector<int> group_of_;
  std::vector<int> group_partitions_;
};

}  // namespace stragglersim::codes

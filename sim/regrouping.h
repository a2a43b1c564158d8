#pragma once
// Dynamic clustering (docs/model.md §5 "dynamic_frc"): which worker plays each position of a
// group code is re-formed every K iterations from the stragglers seen in those K iterations.
//
// The regrouper keeps the run's state: `worker_at[p]`, the worker at code position p (at first
// the identity), and for each worker its lateness over the current epoch, the sum over the
// epoch's iterations of its position in the arrival order (0 for the first heard; n for a worker
// not heard before the stop, a straggler). After every K-th iteration the workers are ranked by
// lateness (smallest first, ties by worker index) and dealt round-robin over the G groups: the
// j-th worker of the ranking (0-based) takes the (⌊j/G⌋)-th position of group j mod G. Each group
// so gets one worker of each tier of G, the G most punctual in G different groups: the
// stragglers are spread over the groups as evenly as the ranking allows, instead of erasing the
// same groups again and again. The lateness is then reset.
//
// Moving data is free: a worker is assumed to store the partitions of any position it may be
// given, so a regrouping costs no simulated time. The real backends move none: rank p always
// computes position p's partitions and waits out the delay of the worker playing p.
// The state depends on the simulated arrival order only: same seed, same groups, whatever the
// backend.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "codes/gradient_code.h"
#include "models/base/options_check.h"

namespace stragglersim::sim {

struct RegroupOptions {
  int every = 1;            ///< K ≥ 1 iterations per epoch
  std::vector<int> groups;  ///< each code position's group, in [0, G); groups of equal size
  /// The first violated constraint: K ≥ 1, a non-empty grouping into G groups of equal size.
  [[nodiscard]] Validation validate() const;
};

/// The regrouping `code` asks for (its regroup_every() and its groups); nullopt for a code with a
/// fixed assignment.
[[nodiscard]] std::optional<RegroupOptions> regrouping_of(const codes::GradientCode& code);

class Regrouper {
 public:
  /// Illegal: options that fail validate().
  explicit Regrouper(const RegroupOptions& options);
  /// The worker at each code position for the next iteration: a permutation of 0 … n − 1.
  [[nodiscard]] std::span<const int> worker_at() const { return worker_at_; }
  /// Adds one iteration: `heard`, the code positions heard before the stop, in arrival order;
  /// regroups after every K-th call.
  void observe(std::span<const int> heard);
  /// Regroupings so far.
  [[nodiscard]] std::uint64_t regroupings() const { return regroupings_; }

 private:
  void regroup();

  RegroupOptions options_;
  std::vector<std::vector<int>> positions_;  // each group's positions, ascending
  std::vector<int> worker_at_;
  std::vector<std::uint64_t> lateness_;  // per worker, this epoch
  std::vector<char> seen_;               // scratch: whether a worker was heard this iteration
  std::vector<int> ranking_;             // scratch
  int observed_ = 0;                     // iterations in the current epoch
  std::uint64_t regroupings_ = 0;
};

}  // namespace stragglersim::sim

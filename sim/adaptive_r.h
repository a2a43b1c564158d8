#pragma once
// The adaptive r (docs/model.md §4 "Adaptive r"): the number of arrivals the master waits for
// follows the spread of the arrival times seen in the last w iterations. The tracker keeps the
// run's state: for each iteration of the window the sorted arrival times of the workers heard
// before its stop (a worker not heard is censored: its time is never looked at). With
//   h        the fewest workers heard in any iteration of the window,
//   m(j)     the mean over the window of each iteration's j-th arrival (j ≤ h: always observed),
//   R        the largest j in [r_min, min(h, r_max)] with m(j) ≤ (1 + slack)·m(r_min),
// the next iteration waits for
//   r' = min(R + 1, r_max)   when R = min(h, r_max) (every observed arrival is within the slack:
//                            probe one more worker),
//   r' = R                   otherwise (stop before the arrivals that fall behind);
// and for r_max before the first observation. r grows by at most one worker per w iterations (the
// window must fill with the new count before it is observed) and falls at once. The statistic is
// a ratio of arrival times, so a slowdown of the whole cluster leaves r as it is; a wide spread
// (a heavy tail, persistent stragglers) lowers it. The state depends on the simulated arrival
// times only: same seed, same r, whatever the backend.

#include <cstddef>
#include <span>
#include <vector>

#include "models/base/options_check.h"

namespace stragglersim::sim {

struct AdaptiveROptions {
  int workers = 1;     ///< n ≥ 1
  int window = 10;     ///< w ≥ 1 iterations of history
  int r_min = 1;       ///< 1 ≤ r_min ≤ r_max
  int r_max = 1;       ///< r_min ≤ r_max ≤ n
  double slack = 0.5;  ///< ≥ 0: how far behind the r_min-th arrival an arrival may come, relative
  /// The first violated constraint: n ≥ 1, 1 ≤ w ≤ 10^6, 1 ≤ r_min ≤ n, r_min ≤ r_max ≤ n,
  /// slack ≥ 0.
  [[nodiscard]] Validation validate() const;
};

class ArrivalCountTracker {
 public:
  /// Illegal: options that fail validate().
  explicit ArrivalCountTracker(const AdaptiveROptions& options);
  /// The number of arrivals the next iteration waits for, in [r_min, r_max].
  [[nodiscard]] int r() const { return r_; }
  /// Adds one iteration: `heard` in arrival order, `arrivals` every worker's arrival (from the
  /// broadcast); only the heard workers' times are read. Drops the oldest iteration beyond w.
  void observe(std::span<const int> heard, std::span<const double> arrivals);
  /// The iterations in the window (≤ w).
  [[nodiscard]] std::size_t iterations() const { return filled_; }

 private:
  AdaptiveROptions options_;
  std::vector<double> pool_;         // w rows of n sorted heard times, a ring
  std::vector<std::size_t> counts_;  // heard per row
  std::size_t next_ = 0;
  std::size_t filled_ = 0;
  int r_;
  [[nodiscard]] int statistic() const;
};

}  // namespace stragglersim::sim

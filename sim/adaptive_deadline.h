#pragma once
// The adaptive deadline (docs/model.md §4 "Adaptive deadline"): a deadline that follows the
// arrival times of the last w iterations. The tracker keeps the run's state: the pooled arrival
// times of the window, every worker not heard before its iteration's stop counted as later than
// every heard one (+inf, the arrival is censored). Before each iteration the deadline is
//   quantile q    the ⌈q·N⌉-th smallest of the N pooled times, or
//   mads k        median + k·MAD: m = the ⌈N/2⌉-th smallest, MAD = the ⌈N/2⌉-th smallest of
//                 |x − m| (no consistency factor), τ = m + k·MAD;
// and none (the master waits for every worker) when the statistic is a censored time or there
// is no history yet (the first iteration). The state depends on the simulated arrival times
// only: same seed, same deadlines, whatever the backend.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "models/base/options_check.h"

namespace stragglersim::sim {

struct AdaptiveDeadlineOptions {
  enum class Statistic { kQuantile, kMedianMads };
  int workers = 1;  ///< n ≥ 1
  int window = 1;   ///< w ≥ 1 iterations of history
  Statistic statistic = Statistic::kMedianMads;
  double quantile = 0.9;  ///< kQuantile: 0 < q ≤ 1
  double mads = 3.0;      ///< kMedianMads: k ≥ 0
  /// The first violated constraint: n ≥ 1, 1 ≤ w ≤ 10^6, 0 < q ≤ 1, k ≥ 0.
  [[nodiscard]] Validation validate() const;
};

class DeadlineTracker {
 public:
  /// Illegal: options that fail validate().
  explicit DeadlineTracker(const AdaptiveDeadlineOptions& options);
  /// The deadline of the next iteration (seconds after its broadcast); nullopt: wait for all.
  [[nodiscard]] std::optional<double> deadline() const { return deadline_; }
  /// Adds one iteration: `heard` in arrival order, `arrivals` every worker's arrival (from the
  /// broadcast); workers not in `heard` are censored. Drops the oldest iteration beyond w.
  void observe(std::span<const int> heard, std::span<const double> arrivals);
  /// The iterations in the window (≤ w).
  [[nodiscard]] std::size_t iterations() const { return filled_; }

 private:
  AdaptiveDeadlineOptions options_;
  std::vector<double> pool_;  // w rows of n times, a ring: row (next_ + k) % w
  std::size_t next_ = 0;
  std::size_t filled_ = 0;
  std::vector<double> scratch_;
  std::optional<double> deadline_;

  [[nodiscard]] std::optional<double> statistic();
};

}  // namespace stragglersim::sim

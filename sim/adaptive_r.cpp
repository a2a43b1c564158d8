#include "sim/adaptive_r.h"

#include <algorithm>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation AdaptiveROptions::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  return options_check::first_of({options_check::integer_in_range("window", window, 1, 1000000),
                                  options_check::integer_in_range("r_min", r_min, 1, workers),
                                  options_check::integer_in_range("r_max", r_max, r_min, workers),
                                  options_check::at_least("slack", slack, 0.0)});
}

ArrivalCountTracker::ArrivalCountTracker(const AdaptiveROptions& options)
    : options_(options_check::require_valid(options)), r_(options_.r_max) {
  const auto n = static_cast<std::size_t>(options_.workers);
  const auto w = static_cast<std::size_t>(options_.window);
  pool_.assign(n * w, 0.0);
  counts_.assign(w, 0);
}

void ArrivalCountTracker::observe(std::span<const int> heard, std::span<const double> arrivals) {
  const auto n = static_cast<std::size_t>(options_.workers);
  STRAGGLERSIM_ASSERT(arrivals.size() == n && heard.size() <= n, "one arrival per worker");
  const auto row = pool_.begin() + static_cast<std::ptrdiff_t>(next_ * n);
  for (std::size_t k = 0; k < heard.size(); ++k) {
    row[static_cast<std::ptrdiff_t>(k)] = arrivals[static_cast<std::size_t>(heard[k])];
  }
  std::sort(row, row + static_cast<std::ptrdiff_t>(heard.size()));
  counts_[next_] = heard.size();
  next_ = (next_ + 1) % static_cast<std::size_t>(options_.window);
  filled_ = std::min(filled_ + 1, static_cast<std::size_t>(options_.window));
  r_ = statistic();
}

int ArrivalCountTracker::statistic() const {
  const auto n = static_cast<std::size_t>(options_.workers);
  // The filled rows: all w once full, else rows 0..filled-1 (filled in order from 0).
  const std::size_t h =
      *std::min_element(counts_.begin(), counts_.begin() + static_cast<std::ptrdiff_t>(filled_));
  const auto r_min = static_cast<std::size_t>(options_.r_min);
  if (h < r_min) {
    return options_.r_max;  // too few arrivals observed (never under this rule): start over
  }
  // m(j)·filled for j = r_min … h; the sum runs over rows in index order (fixed bytes).
  const auto window_sum = [&](std::size_t j) {
    double sum = 0.0;
    for (std::size_t s = 0; s < filled_; ++s) {
      sum += pool_[s * n + j - 1];
    }
    return sum;
  };
  const double limit = (1.0 + options_.slack) * window_sum(r_min);
  const auto r_max = static_cast<std::size_t>(options_.r_max);
  const std::size_t top = std::min(h, r_max);
  std::size_t largest = r_min;
  while (largest < top && window_sum(largest + 1) <= limit) {
    ++largest;
  }
  return static_cast<int>(largest == top ? std::min(top + 1, r_max) : largest);
}

}  // namespace stragglersim::sim

#include "sim/adaptive_deadline.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stragglersim::sim {

namespace {

constexpr double kCensored = std::numeric_limits<double>::infinity();

/// The k-th smallest (1-based) of `values`, reordering them.
double kth_smallest(std::vector<double>& values, std::size_t k) {
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

/// ⌈q·N⌉ clamped to [1, N].
std::size_t rank_of(double q, std::size_t count) {
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(count)));
  return std::clamp<std::size_t>(k, 1, count);
}

}  // namespace

Validation AdaptiveDeadlineOptions::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  const bool bad_quantile =
      statistic == Statistic::kQuantile && !(quantile > 0.0 && quantile <= 1.0);
  return options_check::first_of(
      {options_check::integer_in_range("window", window, 1, 1000000),
       bad_quantile ? Validation(Violation{"quantile", "out of range", "a number in (0, 1]"})
                    : std::nullopt,
       statistic == Statistic::kMedianMads ? options_check::at_least("mads", mads, 0.0)
                                           : std::nullopt});
}

DeadlineTracker::DeadlineTracker(const AdaptiveDeadlineOptions& options)
    : options_(options_check::require_valid(options)) {
  const auto n = static_cast<std::size_t>(options_.workers);
  pool_.assign(n * static_cast<std::size_t>(options_.window), kCensored);
  scratch_.reserve(pool_.size());
}

void DeadlineTracker::observe(std::span<const int> heard, std::span<const double> arrivals) {
  const auto n = static_cast<std::size_t>(options_.workers);
  STRAGGLERSIM_ASSERT(arrivals.size() == n, "one arrival per worker");
  const auto row = pool_.begin() + static_cast<std::ptrdiff_t>(next_ * n);
  std::fill(row, row + static_cast<std::ptrdiff_t>(n), kCensored);
  for (const int worker : heard) {
    const auto w = static_cast<std::size_t>(worker);
    row[static_cast<std::ptrdiff_t>(w)] = arrivals[w];
  }
  next_ = (next_ + 1) % static_cast<std::size_t>(options_.window);
  filled_ = std::min(filled_ + 1, static_cast<std::size_t>(options_.window));
  deadline_ = statistic();
}

std::optional<double> DeadlineTracker::statistic() {
  const auto n = static_cast<std::size_t>(options_.workers);
  // The ring's filled rows: all w once full, else rows 0..filled-1 (filled in order from 0).
  scratch_.assign(pool_.begin(), pool_.begin() + static_cast<std::ptrdiff_t>(filled_ * n));
  const std::size_t count = scratch_.size();
  if (options_.statistic == AdaptiveDeadlineOptions::Statistic::kQuantile) {
    const double tau = kth_smallest(scratch_, rank_of(options_.quantile, count));
    return std::isfinite(tau) ? std::optional<double>(tau) : std::nullopt;
  }
  const std::size_t half = rank_of(0.5, count);
  const double median = kth_smallest(scratch_, half);
  if (!std::isfinite(median)) {
    return std::nullopt;
  }
  for (double& x : scratch_) {
    x = std::abs(x - median);  // a censored time stays +inf
  }
  const double mad = kth_smallest(scratch_, half);
  if (!std::isfinite(mad)) {
    return std::nullopt;
  }
  return median + options_.mads * mad;
}

}  // namespace stragglersim::sim

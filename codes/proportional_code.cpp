#include "codes/proportional_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/base/invariant.h"

namespace stragglersim::codes {

struct ProportionalCode::Layout {
  std::vector<int> group_of;
  std::vector<int> group_partitions;
  std::vector<std::vector<int>> supports;
};

namespace {

int partitions_of(const ProportionalCode::Options& o) {
  return o.partitions == 0 ? o.workers : o.partitions;
}

}  // namespace

Validation ProportionalCode::Options::validate() const {
  if (auto v = group_replication(workers, d)) {
    return v;
  }
  if (partitions_of(*this) < workers / d) {
    return Violation{
        "partitions",
        "too few partitions for the groups",
        fmt::format("at least workers/d = {} (one per group), or 0 for k = n", workers / d)};
  }
  return worker_factors(workers, factors);
}

Validation worker_factors(int workers, const std::vector<double>& factors) {
  const std::string expected =
      fmt::format("an array of {} finite numbers > 0 (one slowdown factor per worker)", workers);
  if (factors.size() != static_cast<std::size_t>(workers)) {
    return Violation{"factors", "wrong shape", expected, Violation::Got::kSize};
  }
  for (std::size_t i = 0; i < factors.size(); ++i) {
    if (!(factors[i] > 0.0) || !std::isfinite(factors[i])) {
      return Violation{"factors", "bad factor", expected, Violation::Got::kElement, i};
    }
  }
  return std::nullopt;
}

std::vector<int> ProportionalCode::apportion(const std::vector<double>& weights, int total) {
  STRAGGLERSIM_ASSERT(!weights.empty() && total >= static_cast<int>(weights.size()),
                      "apportioning needs at least one unit per share");
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  STRAGGLERSIM_ASSERT(sum > 0.0, "apportioning needs positive weights");
  std::vector<double> quota(weights.size());
  std::vector<int> out(weights.size());
  int given = 0;
  for (std::size_t g = 0; g < weights.size(); ++g) {
    STRAGGLERSIM_ASSERT(weights[g] > 0.0, "apportioning needs positive weights");
    quota[g] = total * weights[g] / sum;
    out[g] = std::max(1, static_cast<int>(std::floor(quota[g])));
    given += out[g];
  }
  // Largest remainder quota − share gets the next unit; when the floors of 1 overshoot, the
  // smallest remainder among shares above 1 gives one back. Ties go to the lower index. A heap
  // keyed by (remainder, index) picks each unit in O(log w): n can be 10⁵ groups.
  const bool add = given < total;
  const auto before = [&](std::size_t x, std::size_t y) {  // heap order: y is picked first
    const double rx = quota[x] - out[x];
    const double ry = quota[y] - out[y];
    return add ? (rx < ry || (rx == ry && x > y)) : (rx > ry || (rx == ry && x > y));
  };
  std::vector<std::size_t> heap;
  for (std::size_t g = 0; g < weights.size(); ++g) {
    if (add || out[g] > 1) {
      heap.push_back(g);
    }
  }
  std::make_heap(heap.begin(), heap.end(), before);
  while (given != total) {
    std::pop_heap(heap.begin(), heap.end(), before);
    const std::size_t pick = heap.back();
    out[pick] += add ? 1 : -1;
    given += add ? 1 : -1;
    if (!add && out[pick] <= 1) {
      heap.pop_back();  // at its floor of 1
    } else {
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  return out;
}

ProportionalCode::Layout ProportionalCode::make_layout(const Options& o) {
  const int n = o.workers;
  const int groups = n / o.d;
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return o.factors[static_cast<std::size_t>(a)] < o.factors[static_cast<std::size_t>(b)];
  });
  std::vector<double> speed(static_cast<std::size_t>(groups), 0.0);
  Layout out;
  out.group_of.assign(static_cast<std::size_t>(n), 0);
  for (int rank = 0; rank < n; ++rank) {
    const int worker = order[static_cast<std::size_t>(rank)];
    out.group_of[static_cast<std::size_t>(worker)] = rank / o.d;
    speed[static_cast<std::size_t>(rank / o.d)] +=
        1.0 / (o.d * o.factors[static_cast<std::size_t>(worker)]);
  }
  out.group_partitions = apportion(speed, partitions_of(o));
  std::vector<int> first(static_cast<std::size_t>(groups) + 1, 0);
  std::partial_sum(out.group_partitions.begin(), out.group_partitions.end(), first.begin() + 1);
  out.supports.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto g = static_cast<std::size_t>(out.group_of[static_cast<std::size_t>(i)]);
    auto& support = out.supports[static_cast<std::size_t>(i)];
    support.resize(static_cast<std::size_t>(first[g + 1] - first[g]));
    std::iota(support.begin(), support.end(), first[g]);
  }
  return out;
}

ProportionalCode::ProportionalCode(const Options& options)
    : ProportionalCode(options, make_layout(options_check::require_valid(options))) {}

ProportionalCode::ProportionalCode(const Options& options, Layout layout)
    : GroupCode(partitions_of(options), std::move(layout.supports)),
      d_(options.d),
      group_of_(std::move(layout.group_of)),
      group_partitions_(std::move(layout.group_partitions)) {}

}  // namespace stragglersim::codes

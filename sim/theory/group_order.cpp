#include "sim/theory/group_order.h"

#include <algorithm>

#include "models/base/invariant.h"

namespace stragglersim::sim {

namespace {

/// `values` (one per worker, or one shared) in the view's order.
std::vector<double> permuted(std::span<const double> values, const std::vector<int>& order) {
  if (values.size() != order.size()) {
    return {values.begin(), values.end()};
  }
  std::vector<double> out(order.size());
  for (std::size_t j = 0; j < order.size(); ++j) {
    out[j] = values[static_cast<std::size_t>(order[j])];
  }
  return out;
}

}  // namespace

bool is_permutation_of_workers(std::span<const int> order, int workers) {
  if (workers < 0 || order.size() != static_cast<std::size_t>(workers)) {
    return false;
  }
  std::vector<char> seen(order.size(), 0);
  for (const int i : order) {
    if (i < 0 || i >= workers || seen[static_cast<std::size_t>(i)] != 0) {
      return false;
    }
    seen[static_cast<std::size_t>(i)] = 1;
  }
  return true;
}

GroupOrderedDelay::GroupOrderedDelay(const DelayModel& delay, std::vector<int> order)
    : delay_(delay), order_(std::move(order)) {
  STRAGGLERSIM_ASSERT(is_permutation_of_workers(order_, delay_.workers()),
                      "a group order is a permutation of the workers");
  const std::span<const double> rows = delay_.rows();
  const std::size_t n = order_.size();
  rows_.resize(rows.size());
  for (std::size_t k = 0; k + n <= rows.size(); k += n) {
    for (std::size_t j = 0; j < n; ++j) {
      rows_[k + j] = rows[k + static_cast<std::size_t>(order_[j])];
    }
  }
  if (const auto se = delay_.shifted_exponential()) {
    worker_shift_ = permuted(se->worker_shift, order_);
    worker_scale_ = permuted(se->worker_scale, order_);
  }
}

void GroupOrderedDelay::sample(std::uint64_t /*iteration*/,
                               RandomEngine& /*rng*/,
                               std::span<double> /*out*/) {
  STRAGGLERSIM_ASSERT(false, "a group-ordered view is for the theory; sample the model itself");
}

std::optional<ShiftedExponentialShape> GroupOrderedDelay::shifted_exponential() const {
  auto se = delay_.shifted_exponential();
  if (se) {
    se->worker_shift = worker_shift_;
    se->worker_scale = worker_scale_;
  }
  return se;
}

}  // namespace stragglersim::sim

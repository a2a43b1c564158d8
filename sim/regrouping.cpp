#include "sim/regrouping.h"

#include <algorithm>
#include <numeric>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation RegroupOptions::validate() const {
  if (auto v = options_check::integer_in_range("every", every, 1, 1000000000)) {
    return v;
  }
  if (groups.empty() || std::ranges::min(groups) < 0) {
    return Violation{"groups", "no grouping", "one group index >= 0 per code position"};
  }
  const auto count = static_cast<std::size_t>(std::ranges::max(groups)) + 1;
  std::vector<std::size_t> sizes(count, 0);
  for (const int g : groups) {
    ++sizes[static_cast<std::size_t>(g)];
  }
  if (std::ranges::any_of(sizes, [&](std::size_t s) { return s != sizes.front(); })) {
    return Violation{"groups", "groups of unequal sizes", "groups of equal size"};
  }
  return std::nullopt;
}

std::optional<RegroupOptions> regrouping_of(const codes::GradientCode& code) {
  const int every = code.regroup_every();
  if (every <= 0) {
    return std::nullopt;
  }
  auto groups = code.worker_groups();
  STRAGGLERSIM_ASSERT(groups.has_value(), "a regrouping code must have groups");
  return RegroupOptions{every, std::move(*groups)};
}

Regrouper::Regrouper(const RegroupOptions& options)
    : options_(options_check::require_valid(options)) {
  const auto n = options_.groups.size();
  positions_.resize(static_cast<std::size_t>(std::ranges::max(options_.groups)) + 1);
  for (std::size_t p = 0; p < n; ++p) {
    positions_[static_cast<std::size_t>(options_.groups[p])].push_back(static_cast<int>(p));
  }
  worker_at_.resize(n);
  std::iota(worker_at_.begin(), worker_at_.end(), 0);
  lateness_.assign(n, 0);
  seen_.assign(n, 0);
  ranking_.resize(n);
}

void Regrouper::observe(std::span<const int> heard) {
  const auto n = worker_at_.size();
  STRAGGLERSIM_ASSERT(heard.size() <= n, "heard more positions than the code has");
  std::ranges::fill(seen_, 0);
  for (std::size_t k = 0; k < heard.size(); ++k) {
    const auto w = static_cast<std::size_t>(worker_at_[static_cast<std::size_t>(heard[k])]);
    lateness_[w] += k;
    seen_[w] = 1;
  }
  for (std::size_t w = 0; w < n; ++w) {
    lateness_[w] += seen_[w] != 0 ? 0 : n;
  }
  if (++observed_ == options_.every) {
    regroup();
  }
}

void Regrouper::regroup() {
  std::iota(ranking_.begin(), ranking_.end(), 0);
  std::ranges::stable_sort(
      ranking_, {}, [&](int w) { return lateness_[static_cast<std::size_t>(w)]; });
  const std::size_t groups = positions_.size();
  for (std::size_t j = 0; j < ranking_.size(); ++j) {
    worker_at_[static_cast<std::size_t>(positions_[j % groups][j / groups])] = ranking_[j];
  }
  std::ranges::fill(lateness_, 0);
  observed_ = 0;
  ++regroupings_;
}

}  // namespace stragglersim::sim

#include "sim/theory/worker_classes.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace stragglersim::sim {

bool same_marginal(const DelayModel& delay, int i, int j) {
  const auto same = [](double x, double y) {
    return x == y || std::abs(x - y) <= 1e-14 * std::max(std::abs(x), std::abs(y));
  };
  const double lb = delay.lower_bound(j);
  const double unit = std::max(1.0, std::abs(lb));
  if (!same(delay.lower_bound(i), lb) || !same(delay.mean(i), delay.mean(j)) ||
      !same(delay.variance(i), delay.variance(j))) {
    return false;
  }
  constexpr std::array<double, 7> kProbes = {0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 100.0};
  return std::ranges::all_of(kProbes, [&](double x) {
    return same(delay.cdf(i, lb + x * unit), delay.cdf(j, lb + x * unit));
  });
}

bool identical_workers(const DelayModel& delay) {
  if (const auto se = delay.shifted_exponential()) {
    for (std::size_t i = 1; i < se->worker_shift.size(); ++i) {
      if (se->worker_shift[i] != se->worker_shift[0] ||
          se->worker_scale[i] != se->worker_scale[0]) {
        return false;
      }
    }
    return true;
  }
  for (int i = 1; i < delay.workers(); ++i) {
    if (!same_marginal(delay, i, 0)) {
      return false;
    }
  }
  return true;
}

WorkerClasses singleton_classes(int n) {
  WorkerClasses c;
  for (int i = 0; i < n; ++i) {
    c.class_of.push_back(i);
    c.representative.push_back(i);
    c.size.push_back(1);
  }
  return c;
}

WorkerClasses worker_classes(const DelayModel& delay, bool merge) {
  const int n = delay.workers();
  if (!merge || n > kMaxMergedWorkers) {
    return singleton_classes(n);
  }
  WorkerClasses c;
  for (int i = 0; i < n; ++i) {
    int found = -1;
    for (int k = 0; k < c.count() && found < 0; ++k) {
      if (same_marginal(delay, i, c.representative[index(k)])) {
        found = k;
      }
    }
    if (found < 0) {
      if (c.count() == kMaxClasses) {
        return singleton_classes(n);
      }
      found = c.count();
      c.representative.push_back(i);
      c.size.push_back(0);
    }
    c.class_of.push_back(found);
    ++c.size[index(found)];
  }
  return c;
}

std::vector<int> class_multiset(const std::vector<int>& members, const WorkerClasses& classes) {
  std::vector<int> key;
  key.reserve(members.size());
  for (const int i : members) {
    key.push_back(classes.class_of[index(i)]);
  }
  std::sort(key.begin(), key.end());
  return key;
}

std::size_t distinct_class_sets(const std::vector<std::vector<int>>& sets,
                                const WorkerClasses& classes) {
  std::vector<std::vector<int>> keys;
  keys.reserve(sets.size());
  for (const auto& set : sets) {
    keys.push_back(class_multiset(set, classes));
  }
  std::sort(keys.begin(), keys.end());
  return static_cast<std::size_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

double class_average(const std::vector<std::vector<int>>& sets,
                     const WorkerClasses& classes,
                     const std::function<double(const std::vector<int>&)>& integral) {
  std::vector<std::pair<std::vector<int>, std::size_t>> seen;  // (class multiset, first set)
  double total = 0.0;
  std::vector<double> values;
  for (const auto& set : sets) {
    std::vector<int> key = class_multiset(set, classes);
    const auto it = std::find_if(
        seen.begin(), seen.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == seen.end()) {
      seen.emplace_back(std::move(key), values.size());
      values.push_back(integral(set));
      total += values.back();
    } else {
      total += values[it->second];
    }
  }
  return total / static_cast<double>(sets.size());
}

}  // namespace stragglersim::sim

#include "sim/multi_message.h"

#include <algorithm>
#include <map>

#include "models/base/invariant.h"

namespace stragglersim::sim {

namespace {

/// `support` (ascending) rotated to start at its `first`-th element.
std::vector<int> rotated(std::span<const int> support, std::size_t first) {
  std::vector<int> order(support.begin(), support.end());
  std::rotate(
      order.begin(),
      order.begin() + static_cast<std::ptrdiff_t>(first % std::max<std::size_t>(1, order.size())),
      order.end());
  return order;
}

}  // namespace

std::vector<std::vector<int>> partition_orders(const codes::GradientCode& code) {
  STRAGGLERSIM_ASSERT(!code.compact(), "multi-message needs a code with supports");
  const int n = code.workers();
  std::vector<std::vector<int>> orders(static_cast<std::size_t>(n));
  if (const auto groups = code.worker_groups()) {
    // Members of each group in ascending worker order; the g-th of d starts at ⌊g·s/d⌋.
    std::map<int, std::vector<int>> members;
    for (int i = 0; i < n; ++i) {
      members[(*groups)[static_cast<std::size_t>(i)]].push_back(i);
    }
    for (const auto& [group, workers] : members) {
      const auto d = workers.size();
      for (std::size_t g = 0; g < d; ++g) {
        const int i = workers[g];
        const std::span<const int> support = code.support(i);
        orders[static_cast<std::size_t>(i)] = rotated(support, g * support.size() / d);
      }
    }
    return orders;
  }
  const auto k = static_cast<std::int64_t>(code.partitions());
  for (int i = 0; i < n; ++i) {
    const std::span<const int> support = code.support(i);
    const auto from = static_cast<int>(static_cast<std::int64_t>(i) * k / n);
    const auto first = std::lower_bound(support.begin(), support.end(), from) - support.begin();
    orders[static_cast<std::size_t>(i)] = rotated(support, static_cast<std::size_t>(first));
  }
  return orders;
}

Validation MultiMessageStopping::Options::validate() const {
  if (!code) {
    return Violation{"code", "missing", "a gradient code"};
  }
  if (code->compact()) {
    return Violation{"code",
                     "a compact code has no supports to send partition by partition",
                     "a code with n·k small enough to keep its supports"};
  }
  if (after) {
    return options_check::positive("after", *after);
  }
  return std::nullopt;
}

MultiMessageStopping::MultiMessageStopping(const Options& options)
    : code_(options_check::require_valid(options).code),
      after_(options.after),
      orders_(sim::partition_orders(*code_)) {}

bool MultiMessageStopping::stop_after(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) >= code_->workers();
}

}  // namespace stragglersim::sim

#pragma once
// Codes whose workers form groups holding identical supports (FRC, proportional): a group is
// covered when any member is heard, the code decodes exactly when every group is covered, and
// the optimal decode sums the first message heard of each covered group (α_j ∈ {0, 1}), without
// a factorisation.

#include <fmt/format.h>

#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// The replication d of a group code: 1 ≤ d ≤ workers and d | workers.
[[nodiscard]] inline Validation group_replication(int workers, int d) {
  if (auto v = options_check::integer_in_range("d", d, 1, workers)) {
    return v;
  }
  if (workers % d != 0) {
    return Violation{"d",
                     "replication must divide the workers",
                     fmt::format("a divisor of workers = {}", workers)};
  }
  return std::nullopt;
}

class GroupCode : public GradientCode {
 public:
  /// Number of groups, and the group of `worker` (in [0, groups())).
  [[nodiscard]] virtual int groups() const = 0;
  [[nodiscard]] virtual int group_of(int worker) const = 0;

  [[nodiscard]] bool decodable(std::span<const int> heard) const override {
    std::vector<char> covered(static_cast<std::size_t>(groups()), 0);
    int count = 0;
    for (const int i : heard) {
      char& c = covered[static_cast<std::size_t>(group_of(i))];
      count += c == 0 ? 1 : 0;
      c = 1;
    }
    return count == groups();
  }

  [[nodiscard]] Decoding decode_outcome(std::span<const int> heard) const override {
    return decode_optimal(heard);
  }

  /// One message per covered group, the first heard (in the order given): the same estimate as
  /// the least-squares decode, condition 1.
  [[nodiscard]] Decoding decode_optimal(std::span<const int> heard) const override {
    Eigen::VectorXd weights = Eigen::VectorXd::Zero(workers());
    std::vector<char> covered(static_cast<std::size_t>(groups()), 0);
    for (const int i : heard) {
      char& c = covered[static_cast<std::size_t>(group_of(i))];
      if (c == 0) {
        weights(i) = 1.0;
        c = 1;
      }
    }
    return finish(std::move(weights), 1.0);
  }

  [[nodiscard]] std::optional<std::vector<int>> worker_groups() const override {
    std::vector<int> out(static_cast<std::size_t>(workers()));
    for (int i = 0; i < workers(); ++i) {
      out[static_cast<std::size_t>(i)] = group_of(i);
    }
    return out;
  }

 protected:
  using GradientCode::GradientCode;
};

}  // namespace stragglersim::codes

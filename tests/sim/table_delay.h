#pragma once
// A delay model that replays a fixed table, for tests that need chosen delays.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim::testing {

/// Iteration t's delays are row (t − 1) mod rows of a fixed table (the rng is not used).
class TableDelay final : public DelayModel {
 public:
  explicit TableDelay(std::vector<std::vector<double>> table) : table_(std::move(table)) {}
  [[nodiscard]] std::string name() const override { return "table"; }
  [[nodiscard]] int workers() const override { return static_cast<int>(table_[0].size()); }
  void sample(std::uint64_t iteration, RandomEngine& /*rng*/, std::span<double> out) override {
    const auto& row = table_[(iteration - 1) % table_.size()];
    std::copy(row.begin(), row.end(), out.begin());
  }
  [[nodiscard]] double cdf(int /*worker*/, double /*t*/) const override { return 0.0; }
  [[nodiscard]] double mean(int /*worker*/) const override { return 1.0; }
  [[nodiscard]] double variance(int /*worker*/) const override { return 0.0; }
  [[nodiscard]] double lower_bound(int /*worker*/) const override { return 0.0; }

 private:
  std::vector<std::vector<double>> table_;
};

}  // namespace stragglersim::sim::testing

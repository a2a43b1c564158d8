#pragma once
// Multi-message communication (docs/model.md §4 "Multi-message"; Ozfatura, Gündüz and Ulukus,
// "Speeding up distributed gradient descent by utilizing non-persistent stragglers", ISIT 2019):
// every worker computes the partitions it holds one after the other and sends each partition's
// gradient ∇F_j as soon as it is done, so a straggler's finished work is not lost. Worker i,
// whose drawn time for its whole support of s_i partitions is T_i, finishes its ℓ-th partition
// (ℓ = 1 … s_i) at start + T_i·ℓ/s_i (a uniform pace); each message goes through the network
// (sim/network.h) on its own. The master keeps the first copy of each partition: α_j = 1 once a
// message carrying j has arrived, 0 before, and ĝ = Σ_j α_j ∇F_j in ascending j. It stops when
// every partition has arrived (then ĝ is the full gradient, the same bytes as uncoded `all` when
// k = n) or at the deadline `after`, whichever comes first.
//
// The order in which a worker computes its support (partition_orders): for a group code
// (worker_groups(): uncoded, FRC, proportional) the g-th member of a group (ascending worker
// index, g = 0 … d − 1) starts at the ⌊g·s/d⌋-th partition of the group's block and goes on
// cyclically, so the members of a group spread their starts over the block (FRC, k = n: worker
// i starts at its own partition i, the ISIT 2019 cyclic order within the group); for every other
// code worker i starts at the first partition j ≥ ⌊i·k/n⌋ of its support and goes on cyclically
// (the cyclic repetition code: its own partition i, then i + 1, …).

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codes/gradient_code.h"
#include "models/base/options_check.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

/// Each worker's partitions in the order it computes and sends them (see above). Illegal: a
/// compact code (it has no supports).
[[nodiscard]] std::vector<std::vector<int>> partition_orders(const codes::GradientCode& code);

/// The multi-message rule. Illegal: options that fail validate().
class MultiMessageStopping final : public StoppingRule {
 public:
  struct Options {
    std::shared_ptr<const codes::GradientCode> code = nullptr;
    std::optional<double> after;  ///< deadline τ > 0 (seconds after the broadcast); none: wait
    /// The first violated constraint: a code with supports (not compact), after > 0 when given.
    [[nodiscard]] Validation validate() const;
  };
  explicit MultiMessageStopping(const Options& options);
  [[nodiscard]] std::string name() const override { return "multi_message"; }
  [[nodiscard]] std::optional<double> deadline() const override { return after_; }
  [[nodiscard]] const std::vector<std::vector<int>>* partition_orders() const override {
    return &orders_;
  }
  /// Without the engine's per-partition events (worker granularity): every worker in.
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return 1; }
  [[nodiscard]] std::optional<double> after() const { return after_; }
  [[nodiscard]] const codes::GradientCode& code() const { return *code_; }

 private:
  std::shared_ptr<const codes::GradientCode> code_;
  std::optional<double> after_;
  std::vector<std::vector<int>> orders_;
};

}  // namespace stragglersim::sim

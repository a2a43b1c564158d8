#pragma once
// Group codes whose groups are not runs of consecutive workers (`proportional` sorts its workers
// by speed before grouping them) reach the iteration-time theory through a view of their delay
// model with the workers renumbered in group order: worker j of the view is worker order[j] of
// the model, so group g is the view's workers g·d … g·d + d − 1, as the theory's FRC formulas
// assume. The view answers every question the theory asks (marginals, atoms, replayed rows,
// shifted-exponential parameters) from the model, permuted; it is never sampled.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Whether `order` is a permutation of 0 … n − 1.
[[nodiscard]] bool is_permutation_of_workers(std::span<const int> order, int workers);

class GroupOrderedDelay final : public DelayModel {
 public:
  /// Illegal: `order` not a permutation of the model's workers. The model must outlive the view.
  GroupOrderedDelay(const DelayModel& delay, std::vector<int> order);

  [[nodiscard]] std::string name() const override { return delay_.name(); }
  [[nodiscard]] int workers() const override { return delay_.workers(); }
  /// Illegal: the view is for the theory; runs sample the model itself.
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override {
    return delay_.cdf(at(worker), t);
  }
  [[nodiscard]] double mean(int worker) const override { return delay_.mean(at(worker)); }
  [[nodiscard]] double variance(int worker) const override { return delay_.variance(at(worker)); }
  [[nodiscard]] double lower_bound(int worker) const override {
    return delay_.lower_bound(at(worker));
  }
  [[nodiscard]] std::span<const double> atoms(int worker) const override {
    return delay_.atoms(at(worker));
  }
  [[nodiscard]] std::span<const double> rows() const override { return rows_; }
  [[nodiscard]] bool independent_workers() const override { return delay_.independent_workers(); }
  [[nodiscard]] std::optional<ShiftedExponentialShape> shifted_exponential() const override;

 private:
  [[nodiscard]] int at(int worker) const { return order_[static_cast<std::size_t>(worker)]; }

  const DelayModel& delay_;
  std::vector<int> order_;
  std::vector<double> rows_;          // the model's rows with their columns permuted
  std::vector<double> worker_shift_;  // the shifted exponential's per-worker arrays, permuted
  std::vector<double> worker_scale_;
};

}  // namespace stragglersim::sim

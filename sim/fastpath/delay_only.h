#pragma once
// Delay-only fast path: iteration times without a model, for theory sweeps with very large n
// (10^6 workers). Draws exactly the same delays as SimulatedCluster (same stream, same order)
// and gives the same iteration times, but finds the stopping time by linear-time selection on
// the arrival times instead of an event queue:
//   all          max_i T_i
//   first_r      r-th smallest (std::nth_element, expected linear time)
//   deadline     min(τ, max_i T_i)
//   decodable    FRC / uncoded: max over groups of the group's first arrival
//   first_r_or_decodable   the smaller of the two
// Any other (rule, code) pair falls back to the event engine. A network (sim/network.h) turns the
// compute ends into arrivals before the selection, as in SimulatedCluster.
// With Sampler::kOrderStatistics (sim/fastpath/order_statistics.h) no per-worker delay is drawn:
// the iteration comes from a few order statistics and counts, exact in distribution but a different
// stream of draws than the worker sampler for the same seed (never with a network).
// With a collective (CollectiveAggregation) every iteration runs on the event engine, whose
// worker draws are the worker sampler's: the all-reduce needs every rank's compute end.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "codes/decode_memo.h"
#include "codes/gradient_code.h"
#include "sim/fastpath/order_statistics.h"
#include "sim/network.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

/// Running statistics of the iteration time (Welford), plus the fraction of erased FRC groups.
struct DelayOnlyStatistics {
  std::uint64_t iterations = 0;
  double mean = 0.0;
  double m2 = 0.0;  ///< Σ (t − mean)²
  double total_time = 0.0;
  double total_wall_time = 0.0;
  double erased_groups = 0.0;  ///< Σ over iterations of groups not covered
  std::uint64_t groups = 0;    ///< groups per iteration (0 when the code has no groups)

  [[nodiscard]] double variance() const;
  [[nodiscard]] double standard_error() const;
  /// Fraction of groups erased per iteration (the empirical group-erasure probability q).
  [[nodiscard]] double erasure_fraction() const;
  void add(double iteration_time);
};

/// One iteration's outcome on the fast path.
struct DelayOnlyIteration {
  std::uint64_t iteration = 0;
  double iteration_time = 0.0;
  double wall_time = 0.0;
  int workers_heard = 0;
  int groups_covered = 0;  ///< covered partitions / d for FRC; heard workers for uncoded
};

/// The r-th smallest of `values` (1-based r), exactly, in expected linear time with one
/// streaming pass (sample-bracketed selection). `scratch` and `sample` are work space.
double select_rth(const std::vector<double>& values,
                  int r,
                  std::vector<double>& scratch,
                  std::vector<double>& sample);

class DelayOnlySimulator {
 public:
  /// `code` gives the groups (FRC / uncoded) for `decodable` and the coverage statistics.
  /// Illegal: null arguments, rule/code worker counts that differ, kOrderStatistics where
  /// order_statistics_unavailable gives a reason or with a collective.
  DelayOnlySimulator(std::unique_ptr<DelayModel> delays,
                     std::shared_ptr<const StoppingRule> rule,
                     std::shared_ptr<const codes::GradientCode> code,
                     StragglerPolicy policy,
                     std::uint64_t seed,
                     const NetworkOptions& network = {},
                     Sampler sampler = Sampler::kWorkers,
                     std::optional<CollectiveAggregation> collective = std::nullopt);

  /// Runs `iterations` iterations, or fewer: it stops after the first iteration whose cumulative
  /// time reaches `time_budget` (seconds); `on_iteration`, when set, sees each one.
  DelayOnlyStatistics run(std::uint64_t iterations,
                          const std::function<void(const DelayOnlyIteration&)>& on_iteration = {},
                          double time_budget = std::numeric_limits<double>::infinity());
  /// Whether each iteration's `groups_covered` is computed where the code has no groups (the
  /// optimal decode's coverage, a linear solve per iteration for a linear-algebra code; memoised
  /// by heard set). Default true; a caller that reads only the times turns it off (then 0).
  void count_coverage(bool on) { count_coverage_ = on; }
  /// Whether selection is used (false: the event engine fallback).
  [[nodiscard]] bool uses_selection() const { return fallback_ == nullptr; }
  /// The sampler drawing the iterations.
  [[nodiscard]] Sampler sampler() const {
    return order_statistics_ ? Sampler::kOrderStatistics : Sampler::kWorkers;
  }

 private:
  /// When the rule stops over the arrivals `a` at the master, and how many workers it heard.
  struct Stop {
    double time = 0.0;
    int heard = 0;
  };

  DelayOnlyIteration step();
  Stop rule_stop(const std::vector<double>& a);
  /// Groups with a worker in `heard` (group codes); the optimal decode's coverage otherwise.
  int groups_heard(const std::vector<int>& heard);
  /// Multi-message: the groups whose every partition was received (the partitions received
  /// for a code without groups).
  int groups_received(const std::vector<int>& received);

  using Kind = RuleKind;
  std::unique_ptr<DelayModel> delays_;
  std::shared_ptr<const StoppingRule> rule_;
  std::shared_ptr<const codes::GradientCode> code_;
  StragglerPolicy policy_;
  RandomEngine rng_;
  Kind kind_ = Kind::kAll;
  int r_ = 0;
  double deadline_ = 0.0;
  int d_ = 1;  // group size: FRC replication, 1 for uncoded
  bool has_groups_ = false;
  std::uint64_t iteration_ = 0;
  double time_ = 0.0;
  std::vector<double> delays_buffer_;
  std::vector<double> arrivals_;
  std::vector<double> scratch_;
  std::vector<double> sample_;
  std::vector<double> busy_until_;
  Network network_;
  std::vector<double> delivered_;  // arrivals through a network that is not free
  std::unique_ptr<SimulatedCluster> fallback_;
  std::vector<char> covered_;  // per group, the fallback's coverage count
  bool count_coverage_ = true;
  std::unique_ptr<codes::DecodeMemo> coverage_memo_;  // linear-algebra codes without groups
  std::optional<OrderStatisticSampler> order_statistics_;
};

}  // namespace stragglersim::sim

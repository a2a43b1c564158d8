#pragma once
// The dependency graph of each step of a hybrid-parallel job and its replay (Lin et al., OSDI
// 2025, §3; docs/whatif.md "The graph"): per (step, dp, stage) rank the compute chain in its
// recorded order, the pipeline send/recv streams, params all-gather → first forward of its model
// chunk, the post-compute chain gc → layernorm → embedding → reduce-scatter → clip → optimizer;
// across ranks, collective groups: a send with its peer stage's recv, the data-parallel
// collectives of a stage over all dp ranks, the embedding all-reduce of the first and last stage,
// the clip's all-reduce over every rank.
//
// Replay: an op starts when its dependencies have ended (a source op at the step's start, plus
// its launch delay when given); a compute-like op ends duration later; the members of a
// collective group end at the group's last arrival plus their own transfer time. The step time
// is the last optimizer end minus the step's start. Each replay is one pass over a fixed order
// (linear in the ops).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/replay/op_timeline.h"

namespace stragglersim::replay {

class OpGraph {
 public:
  /// Builds the graph of every step. Throws TraceFileError "PATH: step S, dp D, stage P: ..." for
  /// a schedule the model cannot pair (a send without its peer's recv, missing send/recv ops
  /// inside the pipeline) and for a dependency cycle.
  explicit OpGraph(const OpTimeline& timeline);

  [[nodiscard]] std::size_t ops() const { return step_of_.size(); }
  [[nodiscard]] std::size_t steps() const { return step_start_.size(); }
  /// Index of op v's step in OpTimeline::steps.
  [[nodiscard]] std::size_t step_of(std::size_t v) const { return step_of_[v]; }
  [[nodiscard]] bool in_group(std::size_t v) const { return group_of_[v] >= 0; }

  /// Op v's replayed duration from the recording: its duration, or for a group member its
  /// transfer time (its end minus the group's last recorded start, 0 when negative).
  [[nodiscard]] std::vector<double> recorded_durations() const;
  /// Per op: recorded start − latest recorded end of its dependencies (or the step's start),
  /// 0 when negative.
  [[nodiscard]] std::vector<double> launch_delays() const;
  /// Recorded step times: last end − first start over the step's ops.
  [[nodiscard]] const std::vector<double>& recorded_step_times() const { return recorded_; }

  struct Options {
    std::span<const double> launch_delays;  ///< empty: none
    /// [step · dp_size + dp] = 1: the replica is left out of its data-parallel collectives and
    /// of the step's end (ignore-stragglers); empty: none.
    std::span<const std::uint8_t> dropped_replicas;
    /// Data-parallel collectives synchronise each replica with itself only (each replica's
    /// time if it never waited for the others).
    bool replica_local = false;
  };
  struct Result {
    std::vector<double> start;  ///< per op, seconds after the step's start
    std::vector<double> end;
    std::vector<double> step_time;  ///< per step
    /// [step · dp_size + dp]: the replica's last optimizer end.
    std::vector<double> replica_end;
  };
  /// Replays with `durations` (per op, as recorded_durations()).
  [[nodiscard]] Result replay(std::span<const double> durations, const Options& options) const;
  [[nodiscard]] Result replay(std::span<const double> durations) const {
    return replay(durations, Options{});
  }

  [[nodiscard]] const OpTimeline& timeline() const { return *timeline_; }

 private:
  void add_rank_edges(std::size_t begin, std::size_t end, bool use_dp, bool overlap_dp);
  void add_groups(bool use_dp);
  void order_ops();

  const OpTimeline* timeline_;
  std::vector<std::size_t> step_of_;
  std::vector<double> step_start_;
  std::vector<double> recorded_;
  std::vector<std::vector<std::uint32_t>> deps_build_;
  std::vector<std::uint32_t> dep_offset_;
  std::vector<std::uint32_t> deps_;
  std::vector<std::int32_t> group_of_;
  /// Per pipeline send/recv: its pairing number among its rank's launched ops of its type, −1
  /// for an unlaunched (no-op) one, which completes alone.
  std::vector<std::int32_t> p2p_id_;
  std::vector<std::vector<std::uint32_t>> groups_;
  std::vector<std::uint8_t> group_dp_synced_;
  /// The replay order: ≥ 0 starts op k, < 0 completes group −k − 1.
  std::vector<std::int64_t> order_;
};

}  // namespace stragglersim::replay

#pragma once
// The per-worker files of a run (experiments/run_output.h): workers.csv, each worker's part in the
// updates of a training run; heard.csv, a real backend's real against simulated heard sets.
// worker_times.csv (run_output.h) is defined beside them.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/backend.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

/// Each worker's part in the updates, rows t ≥ 1 (workers.csv): the iterations it was heard in
/// (asynchronous rules: its gradients the updates took), its messages the updates used, the
/// rows it finished (anytime) and the staleness of its used gradients (asynchronous rules).
struct WorkerTally {
  std::vector<std::uint64_t> heard;
  std::vector<std::uint64_t> used;
  std::vector<std::int64_t> rows;
  std::vector<double> staleness_sum;
  std::vector<std::uint64_t> staleness_max;
  /// With a collective: Σ_t (completion_i − ready_i), the iterations counted, and the iterations
  /// in which worker i's compute end was the latest (ties: the lowest worker).
  std::vector<double> collective_seconds_sum;
  std::uint64_t collective_iterations = 0;
  std::vector<std::uint64_t> arrived_last;

  /// Zero counts for `workers` workers.
  void resize(int workers);
  /// Counts the heard workers, used messages, rows and staleness of one row.
  void add(const sim::TraceRow& row);
  /// Messages used by the updates, all workers together.
  [[nodiscard]] std::uint64_t total_used() const;
  /// workers.csv: worker,heard,used,share[,rows][,staleness_mean,staleness_max]
  /// [,collective_seconds_mean,arrived_last]; share is the worker's used messages over all used
  /// messages (empty when none was used); collective_seconds_mean the mean over iterations of
  /// completion − ready (empty before the first iteration).
  [[nodiscard]] std::string csv(bool with_rows, bool with_staleness, bool with_collective) const;
};

/// heard.csv of a real backend: per iteration the real and the simulated heard sets (workers in
/// arrival order, separated by spaces), whether they hold the same workers, the near-tie gap
/// (simulated seconds) and the real and simulated stop times.
std::string heard_csv(const std::vector<sim::ThreadedIterationRecord>& records);

/// collective.csv of a real backend with a collective (docs/backends.md "Collectives"), the
/// data-parallel log of the run: `iteration,rank,compute_seconds,collective_seconds`, one row per
/// iteration and rank (0-based) in that order; real seconds from the broadcast to the rank's
/// compute end (empty when it abandoned its work at the stop: a right-censored time) and from its
/// join to its completion of the collective. Empty when the records hold no collective.
std::string collective_csv(const std::vector<sim::ThreadedIterationRecord>& records);

}  // namespace stragglersim::experiments

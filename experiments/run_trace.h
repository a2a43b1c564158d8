#pragma once
// trace.csv of a run (experiments/run_output.h): written as rows are produced, flushed at least
// every 2 s, so memory does not grow with iterations and a killed run keeps its rows.

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "models/metrics.h"
#include "sim/backend.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

struct TrainingTally;

/// Real seconds (steady clock) since `start`: the measured phase fields of summary.json.
double seconds_since(std::chrono::steady_clock::time_point start);

/// trace.csv written as rows are produced: a run's memory does not grow with its iterations and
/// a killed run leaves every row flushed before it. Rows are handed over in a buffer that is
/// written out when it passes 1 MiB or 2 s after the last write (and at the end). A file that
/// cannot be opened or written is a ConfigError (exit status 2).
class TraceWriter {
 public:
  explicit TraceWriter(const std::filesystem::path& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  TraceWriter(TraceWriter&&) = delete;
  TraceWriter& operator=(TraceWriter&&) = delete;

  /// Takes the rows in `buffer` (cleared once written).
  void add(fmt::memory_buffer& buffer);
  /// Writes what is left and closes the file.
  void finish(fmt::memory_buffer& buffer);
  /// Real seconds spent writing, flushing and closing the file (not formatting the rows).
  [[nodiscard]] double seconds() const { return seconds_; }

 private:
  void write(fmt::memory_buffer& buffer);
  [[noreturn]] void fail(int error) const;

  std::filesystem::path path_;
  std::FILE* file_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  double seconds_ = 0.0;
};

/// The columns of a training run's trace.csv, from its plan.
struct TraceColumns {
  bool test = false;
  bool auc = false;
  bool drain = false;
  /// The real backends (threads, mpi) record real wall-clock beside the simulated clock of the
  /// same delays: real_time = cumulative real seconds of the iterations (broadcast to the
  /// master's return, drained waits included), real_iteration_time = real seconds from broadcast
  /// to the stop, real_wall_time = real seconds from the first broadcast to this iteration's
  /// return, everything the master did in between included.
  bool threads = false;
  /// Asynchronous runs: staleness_mean, staleness_max of each update's gradients.
  bool staleness = false;
  /// Anytime minibatch: rows_used, the rows the workers finished within the window.
  bool rows = false;
  /// Adaptive deadline: deadline, this iteration's (empty when the master waited for all).
  bool deadline = false;

  explicit TraceColumns(const RunPlan& plan)
      : test(plan.test_objective != nullptr),
        auc(test && models::reports_auc(plan.objective->loss())),
        drain(plan.stragglers == sim::StragglerPolicy::kDrain),
        threads(plan.backend.traits.real_time),
        staleness(plan.update.has_value()),
        rows(plan.scheme.rule->compute_window().has_value()),
        deadline(plan.scheme.rule->adaptive_deadline().has_value()) {}

  [[nodiscard]] std::string header() const {
    std::string h =
        "iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
        "gradient_error_relative,workers_heard,partitions_covered";
    h += test ? ",test_loss,test_metric" : "";
    h += auc ? ",test_auc" : "";
    h += drain ? ",wall_time" : "";
    h += threads ? ",real_time,real_iteration_time,real_wall_time" : "";
    h += staleness ? ",staleness_mean,staleness_max" : "";
    h += rows ? ",rows_used" : "";
    h += deadline ? ",deadline" : "";
    return h + '\n';
  }
};
/// Appends one training row to `buffer` and adds it to `tally`; sim::NumericalError (nothing
/// appended) when a number of the row is not finite. `records`: the real backend's records
/// (null on the simulated clock).
void write_row(const RunPlan& plan,
               const TraceColumns& columns,
               const std::vector<sim::ThreadedIterationRecord>* records,
               const sim::TraceRow& row,
               fmt::memory_buffer& buffer,
               TrainingTally& tally);

}  // namespace stragglersim::experiments

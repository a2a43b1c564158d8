#pragma once
// summary.json of a run (experiments/run_output.h): the fields every summary has (name, seed,
// resolved config, build, prediction), and those of a delay-only or a training run, from the
// totals gathered as its rows are written.

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "experiments/config/run_plan.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_trace.h"
#include "experiments/run_workers.h"
#include "sim/fastpath/delay_only.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

struct RunOutcome;

/// Welford mean / variance of iteration times.
struct Moments {
  std::uint64_t n = 0;
  double mean = 0.0;
  double m2 = 0.0;
  void add(double x) {
    ++n;
    const double delta = x - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (x - mean);
  }
  [[nodiscard]] double sd() const {
    return n > 1 ? std::sqrt(m2 / static_cast<double>(n - 1)) : 0.0;
  }
};

/// What a run computes before its first row: f* and the summary's prediction. Computed before
/// anything is written, so a signal in set-up (StopRequested) leaves the folder as it was.
struct RunSetUp {
  nlohmann::json theory;
  OptimumReference optimum;
  double predictions_seconds = 0.0;  ///< real seconds spent on `theory`
};

/// What the summary needs from the rows, gathered as they are written.
struct TrainingTally {
  Moments times;
  double best = std::numeric_limits<double>::infinity();
  std::optional<double> time_to_target;
  std::optional<std::uint64_t> iterations_to_target;
  double error_sum = 0.0;
  double heard_sum = 0.0;
  double real_stop_sum = 0.0;
  double real_wall_sum = 0.0;
  std::size_t heard_same = 0;
  double seconds_per_unit = 0.0;  ///< the backend's (wall-clock backends)
  double staleness_sum = 0.0;     ///< Σ over updates of the mean staleness
  double staleness_max = 0.0;     ///< the largest staleness of any gradient
  double rows_sum = 0.0;          ///< Σ over iterations of rows_used (anytime)
  Moments deadlines;              ///< the adaptive deadline's deadlines, iterations with one
  WorkerTally workers;
  sim::TraceRow last;
};

/// The fields every summary starts with: name, seed, resolved config, build and prediction.
nlohmann::json base_summary(const RunPlan& plan, const RunSetUp& setup);

/// The summary of a delay-only run into outcome.summary: its status, the iteration-time
/// statistics of `stats` and the warnings (the plan's, and `silent` iterations with no worker
/// heard, the first at `first_silent`).
void write_delay_only_summary(const RunPlan& plan,
                              const RunSetUp& setup,
                              const sim::DelayOnlySimulator& simulator,
                              const sim::DelayOnlyStatistics& stats,
                              std::uint64_t silent,
                              std::uint64_t first_silent,
                              RunOutcome& outcome);

/// The summary of a training run from its tally and diagnostics (the plan's warnings and those
/// the diagnostics find).
nlohmann::json training_summary(const RunPlan& plan,
                                const RunSetUp& setup,
                                const TraceColumns& columns,
                                const RunOutcome& outcome,
                                const TrainingTally& tally,
                                const TrainingDiagnostics& diagnostics);

}  // namespace stragglersim::experiments

#pragma once
// Runs a planned experiment and writes DIR/trace.csv and DIR/summary.json (docs/model.md §7).
// trace.csv is written as rows are produced (flushed at least every 2 s), so memory does not
// grow with iterations and a killed run keeps its rows; summary.json is written last under a
// temporary name and renamed into place: its presence marks a finished run (a resumed sweep
// skips exactly those).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "experiments/progress_line.h"
#include "models/base/error.h"
#include "sim/backend.h"

namespace stragglersim::experiments {

/// Outcome of a run; `status` is "ok", "failed" (numerical trouble: the trace then ends at the
/// last good row and `error` says why) or "interrupted" (stopped by `stop` after a row).
struct RunOutcome {
  std::string status = "ok";
  std::string error;
  nlohmann::json summary;
  /// heard.csv of a real backend (threads, mpi; empty otherwise).
  std::string heard_csv;
  /// worker_times.csv of an mpi run with inject false (empty otherwise).
  std::string worker_times_csv;
  /// workers.csv of a training run, each worker's part in the updates (empty for delay-only).
  std::string workers_csv;
  /// collective.csv of a real backend with a collective (empty otherwise).
  std::string collective_csv;
};

/// Asked after every trace row; true ends the run after that row with status "interrupted" (the
/// trace keeps every finished row). The CLI's hook reads its SIGINT/SIGTERM flag; the Python
/// module's checks for KeyboardInterrupt.
using StopHook = std::function<bool()>;

/// Thrown by front ends that abandon a computation without outputs (the Python module's
/// iteration_times on KeyboardInterrupt).
class RunInterrupted : public Error {
 public:
  /// `exit_status` = 128 + the signal (SIGINT: 130).
  explicit RunInterrupted(int exit_status = 130) : Error("run interrupted", exit_status) {}
};

/// Runs `plan` and writes its outputs into `out_dir` (created if needed), asking `should_stop`
/// and telling `progress` after every row.
RunOutcome execute_run(const RunPlan& plan,
                       const std::filesystem::path& out_dir,
                       const StopHook& should_stop = {},
                       const ProgressHook& progress = {});

/// worker_times.csv (inject false): one row per iteration 1..iterations and worker 0..n-1 with
/// the worker's measured compute seconds, empty when it never finished (abandoned under cancel
/// or drain, or faulty): a censored observation. sim::read_delay_trace reads it back.
std::string worker_times_csv(const std::vector<sim::WorkerTime>& times,
                             std::uint64_t iterations,
                             int workers);

/// Build facts recorded in every summary: git revision, compiler, library versions.
nlohmann::json build_info();

}  // namespace stragglersim::experiments

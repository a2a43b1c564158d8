#pragma once
// Runs a planned experiment and writes DIR/trace.csv and DIR/summary.json (DESIGN.md §4).
// Both files are written under temporary names and renamed into place only when complete, so a
// reader (or a resumed sweep) never sees a truncated file.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {

/// Outcome of a run; `status` is "ok" or "failed" (numerical trouble: the trace then ends at the
/// last good row and `error` says why).
struct RunOutcome {
  std::string status = "ok";
  std::string error;
  nlohmann::json summary;
  /// heard.csv of a real backend (threads, mpi; empty otherwise).
  std::string heard_csv;
  /// worker_times.csv of an mpi run with inject false (empty otherwise).
  std::string worker_times_csv;
};

/// Runs `plan` and writes its outputs into `out_dir` (created if needed).
RunOutcome execute_run(const RunPlan& plan, const std::filesystem::path& out_dir);

/// Writes `text` to `path` atomically (temporary file in the same folder, then rename).
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

/// Build facts recorded in every summary: git revision, compiler, library versions.
nlohmann::json build_info();

}  // namespace stragglersim::experiments

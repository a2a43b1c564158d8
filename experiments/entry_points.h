#pragma once
// Operations behind the subcommands, shared by the command line and the Python module
// (bindings/python) so that both print and write the same bytes for the same input.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/code_report.h"
#include "experiments/config/run_plan.h"
#include "experiments/scheme_advice.h"
#include "experiments/trace_validation.h"
#include "fit/trace_import.h"

namespace stragglersim::experiments {

/// What `stragglersim theory --json` prints: predictions(plan) with the run's name and
/// "warnings" (the plan's, and bound_vacuous when the bound is vacuous; docs/model.md §7).
[[nodiscard]] nlohmann::json theory_report(const RunPlan& plan);

/// One `stragglersim codes` request. `source` names the input in error messages
/// ("<command line>" for the CLI, "<dict>" for Python).
struct CodeRequest {
  std::string source = "<command line>";
  int workers = 0;
  /// 0: the code's own k.
  int partitions = 0;
  /// The code object of a config, e.g. {"kind": "crc", "s": 2}.
  nlohmann::json code;
  std::uint64_t seed = 1;
  /// Stragglers per pattern (−1: the code's s); `wait_for` > 0 overrides it.
  int stragglers = -1;
  int wait_for = 0;
  int samples = 200;
  bool include_assignment = false;
};

/// Builds the code through the config's factory table (same validation and messages as a
/// config, with `source` as the file) and analyses it. ConfigError for bad input.
[[nodiscard]] CodeReport inspect_code(const CodeRequest& request);

/// What `stragglersim codes --json` prints for a report.
[[nodiscard]] nlohmann::json code_report_json(const CodeReport& report);

/// What `stragglersim fit TIMES.csv --json [--per-worker]` prints (docs/fit.md). ConfigError
/// naming file:line for a malformed file.
[[nodiscard]] nlohmann::json fit_times(const std::string& path, bool per_worker);

/// `advise --fit TIMES.csv`: the delay the predictions use. The model is chosen by held-out error
/// (validate_trace with the default holdout, on a delay-only copy of the config: the family AIC
/// picks, block replay, empirical marginals) and then built from the whole trace: the family
/// refitted to every time, or the trace itself in block or empirical mode (its path relative to
/// `base_dir`), with the config's delay tail. A trace without an iteration column, or too short
/// to leave 2 iterations in each part, keeps the AIC family (`choice["reason"]` says so).
/// `model` other than "auto" skips the choice: "family" (the AIC family), "block" or "empirical".
struct FittedDelay {
  nlohmann::json block;
  /// What `advise --json` prints under "model_choice": trace, chosen, reason, scores,
  /// stationary, p_value.
  nlohmann::json choice;
};
[[nodiscard]] FittedDelay fitted_delay(const nlohmann::json& config,
                                       const std::string& file,
                                       const std::filesystem::path& base_dir,
                                       const std::string& fit_path,
                                       const std::string& model = "auto");

/// What `stragglersim advise CONFIG --json [--fit TIMES.csv]` prints for `config` (read from
/// `file`, relative paths against `base_dir`); `fit_path` non-empty replaces the predictions'
/// delay by fitted_delay's block and adds its "model_choice", as `advise --fit` does.
[[nodiscard]] nlohmann::json advise_report(const nlohmann::json& config,
                                           const std::string& file,
                                           const std::filesystem::path& base_dir,
                                           AdviceOptions options,
                                           const std::string& fit_path);

/// What `stragglersim validate CONFIG --trace TIMES.csv --holdout H` computes (docs/validate.md):
/// ConfigError "--trace: FILE:LINE: ..." for a malformed trace, and validate_trace's errors;
/// `time_to_target`: the target (--suboptimality) and runs (--repetitions) of its time-to-target
/// comparison.
[[nodiscard]] Validation validate_file(const nlohmann::json& config,
                                       const std::string& file,
                                       const std::filesystem::path& base_dir,
                                       const std::string& trace_path,
                                       double holdout,
                                       const TimeToTargetOptions& time_to_target = {});

/// One `stragglersim trace import` request (docs/traces.md): the command line's options, or the
/// Python module's keyword arguments. Errors name the options as the command line spells them.
struct TraceImportRequest {
  std::string path;
  /// chrome: the files after `path`, one per rank (docs/traces.md "One file per rank").
  std::vector<std::string> more_paths;
  std::string format;  ///< "csv" | "chrome"
  sim::CsvImportOptions csv;
  sim::ChromeImportOptions chrome;
  std::string group_by = "dp_rank";  ///< "dp_rank" | "rank" (chrome)
  std::string missing = "drop";      ///< "drop" | "censor"
  std::string out;
  /// Options given that belong to the other format (named in the error).
  std::vector<std::string> csv_only_given;
  std::vector<std::string> chrome_only_given;
};

/// The table read and the trace written.
struct TraceImportResult {
  sim::TimeTable table;
  sim::ImportedTrace trace;
};

/// Checks the request (ConfigError naming the option and the accepted values), reserves `out`
/// before reading, imports (ConfigError "FILE:LINE: ..." / "FILE: event N: ..." for a malformed
/// source) and writes the trace atomically to `out`.
TraceImportResult import_trace(TraceImportRequest request);

/// The import's counts and mappings as JSON: path, out, workers, iterations, missing_cells,
/// dropped_iterations, censored_cells, repeated_rows, median, mean, max, worker_ids,
/// source_iterations, renumbered.
[[nodiscard]] nlohmann::json trace_import_json(const TraceImportRequest& request,
                                               const TraceImportResult& result);

}  // namespace stragglersim::experiments

#pragma once
// Measured worker times in the layouts clusters log them in, converted to the trace layout of
// fit/delay_trace.h (`iteration,worker,seconds`), which the `trace` delay model and
// `stragglersim fit` read (docs/traces.md).
//
// Two sources:
//   csv     any header; the iteration, worker and time columns chosen by name. Iterations are
//           integers ≥ 0 and keep their numbers; worker ids are any text (integers or names);
//           times are multiplied by `scale`. An empty time field is a missing cell. A row that
//           repeats an (iteration, worker) with the same time is merged (counted); with another
//           time it is an error.
//   chrome  Chrome trace-event JSON (what PyTorch's profiler and Megatron timers write), plain or
//           gzip: a list of events or an object {"traceEvents": [...]}. Complete events
//           ("ph": "X") whose name is selected give, per (step, group), the sum of their
//           `dur` (microseconds) in seconds; the group is the pid (data-parallel rank) or the
//           (pid, tid) pair (one rank's thread). Every other event is skipped. Steps are written
//           renumbered 0, 1, … in increasing order (`source_iterations` keeps them).
//           An event's step is its args.step; in a PyTorch profiler trace (complete events named
//           "ProfilerStep#N"), an event without args.step takes the N of the step event
//           enclosing its `ts` (outside every step it is skipped), and the selected name
//           "ProfilerStep" selects the step events themselves (each step's whole time), which is
//           what the default events fall back to in such a file when it has none of them.
//           Several files are one file per rank: each file is one worker, its rank the
//           trace's distributedInfo.rank, else a "rank<N>" in its file name, else its position
//           in the list (a single file with distributedInfo.rank is that rank's worker).
//
// Workers are the source's ids in sorted order, numbered 0..n−1 (integer ids numerically,
// otherwise as text; chrome groups by pid, then tid). The iterations are those in which at least
// one worker has a time; a cell (iteration, worker) without a time is missing: MissingCells says
// whether its iteration is dropped or written with an empty (censored) time.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fit/delay_trace.h"
#include "models/base/options_check.h"

namespace stragglersim::sim {

/// What becomes of an iteration in which some worker has no time.
enum class MissingCells {
  kDrop,    ///< the iteration is left out
  kCensor,  ///< the iteration is written, the missing times as empty (censored) fields
};

/// What one worker of a Chrome trace is.
enum class TraceGrouping {
  kDataParallelRank,  ///< one worker per pid
  kRank,              ///< one worker per (pid, tid)
};

struct CsvImportOptions {
  std::string iteration_column = "iteration";
  std::string worker_column = "worker";
  std::string seconds_column = "seconds";
  double scale = 1.0;  ///< seconds = field · scale; finite and > 0

  /// The first violated constraint; fields are named as the command line's options.
  [[nodiscard]] Validation validate() const;
};

struct ChromeImportOptions {
  /// The event names whose durations are summed (non-empty, each non-empty).
  std::vector<std::string> events = {"forward-compute", "backward-compute"};
  TraceGrouping group_by = TraceGrouping::kDataParallelRank;

  [[nodiscard]] Validation validate() const;
};

/// Times per (iteration, worker), before the missing-cell rule.
struct TimeTable {
  std::string path;
  /// [w]: the source's id of worker w (chrome: "pid" or "pid/tid"), in sorted order.
  std::vector<std::string> worker_ids;
  /// [t]: the source's iteration (csv) or step (chrome) numbers, increasing.
  std::vector<std::int64_t> source_iterations;
  /// [t][w]: seconds, nullopt for a missing cell.
  std::vector<std::vector<std::optional<double>>> seconds;
  /// Written iterations are 0..T−1 (chrome) instead of the source numbers (csv).
  bool renumbered = false;
  /// chrome: the workers are the files' ranks (one file per rank), not pids.
  bool ranks_by_file = false;
  /// csv rows that repeated an earlier (iteration, worker) with the same time (merged).
  std::size_t repeated_rows = 0;

  /// Cells [t][w] without a time.
  [[nodiscard]] std::size_t missing_cells() const;
};

/// Reads a CSV table. Throws TraceFileError "PATH:LINE: message (expected ...)" for: a file
/// that cannot be opened (line 0), an empty file, a header without one of the chosen columns or
/// naming it twice, a row with too few fields, an iteration that is not an integer ≥ 0, an empty
/// worker id, a malformed time, a scaled time that is negative or not finite, a repeated
/// (iteration, worker) with another time, and a file without data rows.
/// Illegal: options that do not validate().
TimeTable import_csv_times(const std::string& path, const CsvImportOptions& options = {});

/// Reads a Chrome trace. Throws TraceFileError "PATH: message (expected ...)" for a file that
/// cannot be opened or decompressed, invalid JSON or nesting deeper than 64 levels, a document
/// that is neither a list nor an object with a `traceEvents` list, and no selected complete
/// event; "PATH: event N: message (expected ...)" (N the 0-based index in the event list) for an
/// event that is not an object, and for a selected event whose pid (or tid, grouped by rank) is
/// not an integer, whose dur is not a number ≥ 0, or whose args.step is not an integer.
/// Illegal: options that do not validate().
TimeTable import_chrome_times(const std::string& path, const ChromeImportOptions& options = {});

/// Reads one Chrome trace per rank (or one file); the errors of the one-file form, each naming
/// its file, and "PATH: rank R is also the rank of OTHER (expected one file per rank)",
/// "PATH: 'distributedInfo.rank' is not an integer ≥ 0; got V (expected the file's rank)" and
/// "PATH: event N: 'ts' is not a number; got V (expected a timestamp in microseconds, to find
/// the ProfilerStep#N event enclosing it)". Illegal: no path.
TimeTable import_chrome_times(const std::vector<std::string>& paths,
                              const ChromeImportOptions& options = {});

/// A TimeTable under a missing-cell rule, as trace file text.
struct ImportedTrace {
  /// `iteration,worker,seconds` rows, iteration-major, workers 0..n−1 in each; seconds in the
  /// shortest form that reads back as the same double, empty when censored.
  std::string csv;
  int workers = 0;
  std::size_t iterations = 0;  ///< iterations written
  std::size_t missing_cells = 0;
  std::size_t dropped_iterations = 0;
  std::size_t censored_cells = 0;
  /// [t]: the source number of written iteration t.
  std::vector<std::int64_t> source_iterations;
  /// Of the times written (censored ones left out): the median (the mean of the two middle
  /// times for an even count), the mean and the largest; NaN when every time is censored.
  double median = 0.0;
  double mean = 0.0;
  double max = 0.0;
};

/// Applies `missing` to `table`. Throws TraceFileError "PATH: ..." when no iteration is left (every
/// iteration has a missing cell and `missing` is kDrop).
ImportedTrace write_imported_trace(const TimeTable& table, MissingCells missing);

}  // namespace stragglersim::sim

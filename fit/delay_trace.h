#pragma once
// Measured per-worker times read from a CSV file (docs/model.md "Trace delays"): the input of
// the trace delay model and of `stragglersim fit`.
//
// Format: a header line naming the columns, then one row per observation. Two forms:
//   iteration,worker,seconds   one row per worker per iteration (any column order, extra
//                              columns ignored): every iteration must have exactly one row for
//                              every worker 0..n−1; rows may come in any order and iterations
//                              need not be contiguous (they are sorted increasingly);
//   worker,seconds             a per-worker pool: each worker's times in file order, any count.
// Workers are numbered from 0 (0..n−1, no gaps), as the MPI backend's worker_times.csv writes
// them; iteration numbers are any integers ≥ 0 (worker_times.csv counts them from 1).
// `seconds` is a finite time ≥ 0; an empty `seconds` field is a right-censored observation
// (worker_times.csv writes one for a result that was abandoned or never finished): it is kept
// as +∞ and its line is listed in `censored_lines`. Blank lines are skipped, spaces around
// fields and CRLF line ends are accepted, fields may be double-quoted.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/base/error.h"

namespace stragglersim::sim {

/// A malformed trace file; what() = "PATH:LINE: message (expected ...)". LINE is 1-based;
/// line 0 stands for the file as a whole (it cannot be opened).
class TraceFileError : public InputError {
 public:
  using InputError::InputError;
};

struct DelayTrace {
  std::string path;
  int workers = 0;              ///< workers are numbered 0..workers−1 in the file
  bool has_iterations = false;  ///< the header had an `iteration` column
  /// [t][worker], only when has_iterations (iterations in increasing order).
  std::vector<std::vector<double>> per_iteration;
  /// [worker] -> that worker's times in file order.
  std::vector<std::vector<double>> per_worker;
  /// The iteration numbers of per_iteration, increasing (empty without an iteration column).
  std::vector<std::int64_t> iterations;
  /// 1-based lines whose `seconds` was empty (censored, stored as +∞), increasing.
  std::vector<std::int64_t> censored_lines;
};

/// Reads a trace file. Throws TraceFileError naming the file and line for: a missing or
/// unreadable file, an empty file, a header without `worker` and `seconds` columns, a row with
/// too few fields, a malformed number (iteration and worker: integers ≥ 0), a negative or
/// non-finite time, no data rows, a duplicate (iteration, worker), a worker missing from an
/// iteration, and gaps in the worker numbering.
DelayTrace read_delay_trace(const std::string& path);

}  // namespace stragglersim::sim

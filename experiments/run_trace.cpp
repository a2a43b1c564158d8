// trace.csv of a run (experiments/run_trace.h): the file written as rows are produced, and each
// training row's cells, checked finite before any of them is written.

#include "experiments/run_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/run_summary.h"

namespace stragglersim::experiments {

/// Real seconds (steady clock) since `start`: the measured phase fields of summary.json.
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TraceWriter::TraceWriter(const std::filesystem::path& path)
    : path_(path), file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) {
    fail(errno);
  }
}

TraceWriter::~TraceWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
  }
}

void TraceWriter::add(fmt::memory_buffer& buffer) {
  constexpr std::size_t kBytes = std::size_t{1} << 20;
  // A clock read per row (tens of ns) against formatting the row (hundreds): slow iterations
  // are flushed within 2 s too.
  const auto now = std::chrono::steady_clock::now();
  if (buffer.size() >= kBytes || now - last_ >= std::chrono::seconds(2)) {
    write(buffer);
    std::fflush(file_);
    last_ = now;
    seconds_ += seconds_since(now);
  }
}

void TraceWriter::finish(fmt::memory_buffer& buffer) {
  const auto started = std::chrono::steady_clock::now();
  write(buffer);
  const bool failed = std::fclose(file_) != 0;
  file_ = nullptr;
  seconds_ += seconds_since(started);
  if (failed) {
    fail(errno);
  }
}

void TraceWriter::write(fmt::memory_buffer& buffer) {
  if (buffer.size() > 0 && std::fwrite(buffer.data(), 1, buffer.size(), file_) != buffer.size()) {
    fail(errno);
  }
  buffer.clear();
}

/// A full or read-only file system: exit status 2, as for any output path (no summary.json, so
/// the run counts as not finished).
void TraceWriter::fail(int error) const {
  throw ConfigError(fmt::format(
      "{}: cannot write file ({}); got \"{}\"; expected a writable file system with free space",
      path_.string(),
      std::strerror(error),
      path_.string()));
}
namespace {

/// A trace cell that is empty where the run has no value (gradient errors of Nesterov, row 0).
std::string optional_cell(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

/// The one check of every number of a training row before any of it is written: a non-finite
/// value (wall_time overflowing under drain, a test loss) ends the run with NumericalError
/// (exit 3) and the trace ends at the previous row. test_auc is exempt: with one class in the
/// test set the AUC is undefined, written as an empty cell.
void check_row_finite(const TraceColumns& columns, const sim::TraceRow& row) {
  const auto check = [&](const char* column, double value) {
    if (!std::isfinite(value)) {
      throw sim::NumericalError(
          fmt::format("iteration {}: non-finite {} {} (delays or data too large)",
                      row.iteration,
                      column,
                      value));
    }
  };
  const auto check_optional = [&](const char* column, const std::optional<double>& value) {
    if (value) {
      check(column, *value);
    }
  };
  check("time", row.time);
  check("iteration_time", row.iteration_time);
  check("loss", row.loss);
  check("grad_norm", row.grad_norm);
  check("decoding_error", row.decoding_error);
  check_optional("gradient_error", row.gradient_error);
  check_optional("gradient_error_relative", row.gradient_error_relative);
  if (columns.test) {
    check_optional("test_loss", row.test_loss);
    check_optional("test_metric", row.test_metric);
  }
  if (columns.drain) {
    check("wall_time", row.wall_time);
  }
  if (columns.threads) {
    check("real_time", row.real_seconds);
  }
}

/// The cells of the asynchronous rules (staleness) and of the anytime rule (rows used).
void write_rule_cells(const TraceColumns& columns,
                      const sim::TraceRow& row,
                      fmt::memory_buffer& buffer,
                      TrainingTally& tally) {
  if (columns.staleness) {
    fmt::format_to(std::back_inserter(buffer),
                   ",{},{}",
                   optional_cell(row.staleness_mean),
                   optional_cell(row.staleness_max));
    tally.staleness_sum += row.staleness_mean.value_or(0.0);
    tally.staleness_max = std::max(tally.staleness_max, row.staleness_max.value_or(0.0));
  }
  if (columns.rows) {
    buffer.push_back(',');
    if (row.rows_used) {
      fmt::format_to(std::back_inserter(buffer), "{}", *row.rows_used);
      tally.rows_sum += static_cast<double>(*row.rows_used);
    }
  }
  if (columns.deadline) {
    buffer.push_back(',');
    if (row.deadline) {
      fmt::format_to(std::back_inserter(buffer), "{}", *row.deadline);
      tally.deadlines.add(*row.deadline);
    }
  }
}

}  // namespace

/// Appends one trace row to `buffer` and adds it to `tally`.
void write_row(const RunPlan& plan,
               const TraceColumns& columns,
               const std::vector<sim::ThreadedIterationRecord>* records,
               const sim::TraceRow& row,
               fmt::memory_buffer& buffer,
               TrainingTally& tally) {
  check_row_finite(columns, row);
  fmt::format_to(std::back_inserter(buffer),
                 "{},{},{},{},{},{},{},{},{},{}",
                 row.iteration,
                 row.time,
                 row.iteration_time,
                 row.loss,
                 row.grad_norm,
                 row.decoding_error,
                 optional_cell(row.gradient_error),
                 optional_cell(row.gradient_error_relative),
                 row.workers_heard,
                 row.partitions_covered);
  if (columns.test) {
    fmt::format_to(std::back_inserter(buffer), ",{},{}", *row.test_loss, *row.test_metric);
  }
  if (columns.auc) {
    // Empty where the AUC is undefined: a test set of one class.
    buffer.push_back(',');
    if (row.test_auc && std::isfinite(*row.test_auc)) {
      fmt::format_to(std::back_inserter(buffer), "{}", *row.test_auc);
    }
  }
  if (columns.drain) {
    fmt::format_to(std::back_inserter(buffer), ",{}", row.wall_time);
  }
  if (columns.threads) {
    // write_row(t) runs right after iterate(t), so the last record is this row's iteration.
    const bool has_record = row.iteration > 0 && !records->empty();
    const double real_stop = has_record ? records->back().real_stop_seconds : 0.0;
    if (has_record) {
      tally.real_stop_sum += real_stop;
      tally.real_wall_sum += records->back().real_wall_seconds;
      tally.heard_same += records->back().same_set ? 1U : 0U;
    }
    fmt::format_to(
        std::back_inserter(buffer), ",{},{},{}", row.real_seconds, real_stop, tally.real_wall_sum);
  }
  write_rule_cells(columns, row, buffer, tally);
  buffer.push_back('\n');
  if (row.iteration > 0) {
    tally.times.add(row.iteration_time);
    tally.error_sum += row.decoding_error;
    tally.heard_sum += row.workers_heard;
    tally.workers.add(row);
  }
  tally.best = std::min(tally.best, row.loss);
  if (plan.target_loss && !tally.time_to_target && row.loss <= *plan.target_loss) {
    tally.time_to_target = row.time;
    tally.iterations_to_target = row.iteration;
  }
  tally.last = row;
}

}  // namespace stragglersim::experiments

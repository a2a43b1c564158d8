#include "experiments/run_output.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <boost/version.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <utility>

#include "experiments/build_info.h"
#include "experiments/config/config_error.h"
#include "experiments/predict/predictions.h"
#include "experiments/run_diagnostics.h"
#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "models/metrics.h"
#include "models/worker_pool.h"
#include "sim/backend.h"
#include "sim/fastpath/delay_only.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

nlohmann::json build_info() {
  return {
      {"git_revision", kGitRevision},
      {"version", kVersion},
      {"compiler", fmt::format("{} {}", kCompilerId, kCompilerVersion)},
      {"boost",
       fmt::format(
           "{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100)},
      {"eigen",
       fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION)},
      {"fmt",
       fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
      {"nlohmann_json",
       fmt::format("{}.{}.{}",
                   NLOHMANN_JSON_VERSION_MAJOR,
                   NLOHMANN_JSON_VERSION_MINOR,
                   NLOHMANN_JSON_VERSION_PATCH)},
  };
}

namespace {

/// Thrown out of a row callback when a signal asked the run to stop after this row.
struct Interrupted {};

/// Real seconds (steady clock) since `start`: the measured phase fields of summary.json.
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// trace.csv written as rows are produced: a run's memory does not grow with its iterations and
/// a killed run leaves every row flushed before it. Rows are handed over in a buffer that is
/// written out when it passes 1 MiB or 2 s after the last write (and at the end).
class TraceWriter {
 public:
  explicit TraceWriter(const std::filesystem::path& path)
      : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (file_ == nullptr) {
      fail(errno);
    }
  }
  ~TraceWriter() {
    if (file_ != nullptr) {
      std::fclose(file_);
    }
  }
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  TraceWriter(TraceWriter&&) = delete;
  TraceWriter& operator=(TraceWriter&&) = delete;

  /// Takes the rows in `buffer` (cleared once written).
  void add(fmt::memory_buffer& buffer) {
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
  /// Writes what is left and closes the file.
  void finish(fmt::memory_buffer& buffer) {
    const auto started = std::chrono::steady_clock::now();
    write(buffer);
    const bool failed = std::fclose(file_) != 0;
    file_ = nullptr;
    seconds_ += seconds_since(started);
    if (failed) {
      fail(errno);
    }
  }
  /// Real seconds spent writing, flushing and closing the file (not formatting the rows).
  [[nodiscard]] double seconds() const { return seconds_; }

 private:
  void write(fmt::memory_buffer& buffer) {
    if (buffer.size() > 0 && std::fwrite(buffer.data(), 1, buffer.size(), file_) != buffer.size()) {
      fail(errno);
    }
    buffer.clear();
  }
  /// A full or read-only file system: exit status 2, as for any output path (no summary.json,
  /// so the run counts as not finished).
  [[noreturn]] void fail(int error) const {
    throw ConfigError(fmt::format(
        "{}: cannot write file ({}); got \"{}\"; expected a writable file system with free space",
        path_.string(),
        std::strerror(error),
        path_.string()));
  }

  std::filesystem::path path_;
  std::FILE* file_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  double seconds_ = 0.0;
};

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

RunSetUp set_up(const RunPlan& plan) {
  const models::StopScope scope;
  RunSetUp out;
  if (!plan.delay_only()) {
    // A pool of the run's threads for the f* solve (the simulated backend's count).
    models::WorkerPool pool(plan.backend.traits.real_time ? 1 : plan.threads);
    out.optimum = reference_optimum(plan, &pool);
  }
  models::throw_if_stop_requested();
  // The iteration-time prediction beside the measured totals (docs/model.md §6).
  const auto started = std::chrono::steady_clock::now();
  out.theory = predictions(plan, /*convergence=*/false);
  out.predictions_seconds = seconds_since(started);
  models::throw_if_stop_requested();
  return out;
}

nlohmann::json base_summary(const RunPlan& plan, const RunSetUp& setup) {
  nlohmann::json s;
  s["name"] = plan.name;
  s["seed"] = plan.seed;
  s["config"] = plan.resolved;
  s["build"] = build_info();
  s["theory"] = setup.theory;
  return s;
}

/// Ends the run after this row when the stop hook asks (Interrupted is caught by end_of_rows).
void stop_after_row(const StopHook& should_stop) {
  if (should_stop && should_stop()) {
    throw Interrupted{};
  }
}

/// Runs `produce_rows` and records how it ended in `outcome`: ok, failed (numerical trouble,
/// the rows so far kept) or interrupted (the stop hook asked after a row).
template <typename ProduceRows>
void end_of_rows(ProduceRows&& produce_rows, RunOutcome& outcome) {
  try {
    std::forward<ProduceRows>(produce_rows)();
  } catch (const sim::NumericalError& e) {
    outcome.status = "failed";
    outcome.error = e.what();
  } catch (const Interrupted&) {
    outcome.status = "interrupted";
  } catch (const models::StopRequested&) {
    // A real backend abandoned an iteration its workers held when the signal came.
    outcome.status = "interrupted";
  }
}

// The summary of a delay-only run: its status, the iteration-time statistics of `stats` and the
// warnings (the plan's, and `silent` iterations with no worker heard, the first at
// `first_silent`).
void write_delay_only_summary(const RunPlan& plan,
                              const RunSetUp& setup,
                              const sim::DelayOnlySimulator& simulator,
                              const sim::DelayOnlyStatistics& stats,
                              std::uint64_t silent,
                              std::uint64_t first_silent,
                              RunOutcome& outcome) {
  outcome.summary = base_summary(plan, setup);
  outcome.summary["status"] = outcome.status;
  if (!outcome.error.empty()) {
    outcome.summary["error"] = outcome.error;
  }
  outcome.summary["iterations"] = stats.iterations;
  outcome.summary["total_time"] = stats.total_time;
  outcome.summary["total_wall_time"] = stats.total_wall_time;
  outcome.summary["mean_iteration_time"] = stats.mean;
  outcome.summary["iteration_time_sd"] = std::sqrt(stats.variance());
  outcome.summary["iteration_time_standard_error"] = stats.standard_error();
  if (stats.groups > 0) {
    outcome.summary["group_erasure_fraction"] = stats.erasure_fraction();
  }
  outcome.summary["fast_path"] = simulator.uses_selection();
  std::vector<RunWarning> warnings = plan_warnings(plan);
  if (auto w = silent_iterations_warning(silent, first_silent, stats.iterations)) {
    warnings.push_back(std::move(*w));
  }
  outcome.summary["warnings"] = warnings_json(warnings);
  outcome.summary["sampler"] =
      simulator.sampler() == sim::Sampler::kOrderStatistics ? "order_statistics" : "workers";
}

RunOutcome run_delay_only(const RunPlan& plan,
                          const RunSetUp& setup,
                          TraceWriter& trace,
                          const StopHook& should_stop,
                          const ProgressHook& progress) {
  fmt::memory_buffer buffer;
  fmt::format_to(std::back_inserter(buffer),
                 "iteration,time,iteration_time,workers_heard,partitions_covered\n0,0,0,0,0\n");
  sim::DelayOnlySimulator simulator(plan.make_delays(),
                                    plan.scheme.rule,
                                    plan.scheme.code,
                                    plan.stragglers,
                                    plan.seed,
                                    plan.network,
                                    plan.sampler);
  double time = 0.0;
  // Totals of the rows written, for a run that ends early (interrupted or failed).
  sim::DelayOnlyStatistics written;
  RunOutcome outcome;
  sim::DelayOnlyStatistics stats;
  std::uint64_t silent = 0;
  std::uint64_t first_silent = 0;
  end_of_rows(
      [&] {
        stats = simulator.run(
            plan.iterations,
            [&](const sim::DelayOnlyIteration& it) {
              time += it.iteration_time;
              if (!std::isfinite(time)) {
                throw sim::NumericalError(
                    fmt::format("iteration {}: non-finite simulated time {} (iteration time {}; "
                                "delays too large)",
                                it.iteration,
                                time,
                                it.iteration_time));
              }
              fmt::format_to(std::back_inserter(buffer),
                             "{},{},{},{},{}\n",
                             it.iteration,
                             time,
                             it.iteration_time,
                             it.workers_heard,
                             it.groups_covered);
              if (it.workers_heard == 0 && silent++ == 0) {
                first_silent = it.iteration;
              }
              written.add(it.iteration_time);
              written.total_time += it.iteration_time;
              written.total_wall_time += it.wall_time;
              trace.add(buffer);
              if (progress) {
                progress({it.iteration, plan.iterations, time, std::nullopt});
              }
              stop_after_row(should_stop);
            },
            plan.time_budget);
      },
      outcome);
  trace.finish(buffer);
  if (outcome.status != "ok") {
    stats = written;
  }
  write_delay_only_summary(plan, setup, simulator, stats, silent, first_silent, outcome);
  return outcome;
}

/// A trace cell that is empty where the run has no value (gradient errors of Nesterov, row 0).
std::string optional_cell(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

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

/// Each worker's part in the updates, rows t ≥ 1 (workers.csv): the iterations it was heard in
/// (asynchronous rules: its gradients the updates took), its messages the updates used, the
/// rows it finished (anytime) and the staleness of its used gradients (asynchronous rules).
struct WorkerTally {
  std::vector<std::uint64_t> heard;
  std::vector<std::uint64_t> used;
  std::vector<std::int64_t> rows;
  std::vector<double> staleness_sum;
  std::vector<std::uint64_t> staleness_max;

  void resize(int workers) {
    const auto n = static_cast<std::size_t>(workers);
    heard.assign(n, 0);
    used.assign(n, 0);
    rows.assign(n, 0);
    staleness_sum.assign(n, 0.0);
    staleness_max.assign(n, 0);
  }

  void add(const sim::TraceRow& row) {
    for (const int w : row.heard) {
      ++heard[static_cast<std::size_t>(w)];
    }
    for (std::size_t l = 0; l < row.used.size(); ++l) {
      const auto w = static_cast<std::size_t>(row.used[l]);
      ++used[w];
      if (l < row.used_staleness.size()) {
        staleness_sum[w] += static_cast<double>(row.used_staleness[l]);
        staleness_max[w] = std::max(staleness_max[w], row.used_staleness[l]);
      }
    }
    for (std::size_t w = 0; w < row.worker_rows.size(); ++w) {
      rows[w] += row.worker_rows[w];
    }
  }

  [[nodiscard]] std::uint64_t total_used() const {
    return std::accumulate(used.begin(), used.end(), std::uint64_t{0});
  }

  /// workers.csv: worker,heard,used,share[,rows][,staleness_mean,staleness_max]; share is the
  /// worker's used messages over all used messages (empty when none was used).
  [[nodiscard]] std::string csv(bool with_rows, bool with_staleness) const {
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out),
                   "worker,heard,used,share{}{}\n",
                   with_rows ? ",rows" : "",
                   with_staleness ? ",staleness_mean,staleness_max" : "");
    const std::uint64_t total = total_used();
    for (std::size_t w = 0; w < used.size(); ++w) {
      fmt::format_to(std::back_inserter(out), "{},{},{},", w, heard[w], used[w]);
      if (total > 0) {
        fmt::format_to(std::back_inserter(out),
                       "{}",
                       static_cast<double>(used[w]) / static_cast<double>(total));
      }
      if (with_rows) {
        fmt::format_to(std::back_inserter(out), ",{}", rows[w]);
      }
      if (with_staleness) {
        out.push_back(',');
        if (used[w] > 0) {
          fmt::format_to(std::back_inserter(out),
                         "{},{}",
                         staleness_sum[w] / static_cast<double>(used[w]),
                         staleness_max[w]);
        } else {
          out.push_back(',');
        }
      }
      out.push_back('\n');
    }
    return {out.data(), out.size()};
  }
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

}  // namespace

std::string worker_times_csv(const std::vector<sim::WorkerTime>& times,
                             std::uint64_t iterations,
                             int workers) {
  const auto n = static_cast<std::size_t>(workers);
  std::vector<double> grid(static_cast<std::size_t>(iterations) * n,
                           std::numeric_limits<double>::quiet_NaN());
  for (const auto& t : times) {
    if (t.iteration >= 1 && t.iteration <= iterations) {
      grid[static_cast<std::size_t>(t.iteration - 1) * n + static_cast<std::size_t>(t.worker)] =
          t.seconds;
    }
  }
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "iteration,worker,seconds\n");
  for (std::size_t k = 0; k < grid.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{},{},", k / n + 1, k % n);
    if (!std::isnan(grid[k])) {
      fmt::format_to(std::back_inserter(out), "{}", grid[k]);
    }
    out.push_back('\n');
  }
  return {out.data(), out.size()};
}

namespace {

/// heard.csv of a real backend: per iteration the real and the simulated heard sets (workers in
/// arrival order, separated by spaces), whether they hold the same workers, the near-tie gap
/// (simulated seconds) and the real and simulated stop times.
std::string heard_csv(const std::vector<sim::ThreadedIterationRecord>& records) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "iteration,same_set,near_tie_gap,real_iteration_time,iteration_time,heard,"
                 "simulated_heard\n");
  for (const auto& r : records) {
    fmt::format_to(std::back_inserter(out),
                   "{},{},{},{},{},{},{}\n",
                   r.iteration,
                   r.same_set ? 1 : 0,
                   r.near_tie_gap,
                   r.real_stop_seconds,
                   r.simulated_stop,
                   fmt::join(r.heard, " "),
                   fmt::join(r.simulated_heard, " "));
  }
  return {out.data(), out.size()};
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

/// The summary fields of the asynchronous rules (staleness) and of the anytime rule (rows used).
void add_rule_summary(const RunPlan& plan,
                      const TraceColumns& columns,
                      const TrainingTally& tally,
                      nlohmann::json& s) {
  const auto iterations = static_cast<double>(tally.last.iteration);
  if (columns.staleness) {
    s["update_rule"] = plan.scheme.rule->name();
    s["update_k"] = plan.update->k;
    s["mean_staleness"] =
        iterations > 0 ? nlohmann::json(tally.staleness_sum / iterations) : nlohmann::json();
    s["max_staleness"] = tally.staleness_max;
  }
  if (columns.rows) {
    s["anytime_window"] = *plan.scheme.rule->compute_window();
    s["mean_rows_fraction"] = iterations > 0
                                  ? nlohmann::json(tally.rows_sum / iterations /
                                                   static_cast<double>(plan.objective->rows()))
                                  : nlohmann::json();
  }
  if (columns.deadline) {
    const std::uint64_t with = tally.deadlines.n;
    s["mean_deadline"] = with > 0 ? nlohmann::json(tally.deadlines.mean) : nlohmann::json();
    s["iterations_without_deadline"] = tally.last.iteration - with;
  }
}

/// The optional parts of a training summary: test set, target loss, drain and threads.
void add_optional_summary(const RunPlan& plan,
                          const TraceColumns& columns,
                          const TrainingTally& tally,
                          nlohmann::json& s) {
  const sim::TraceRow& last = tally.last;
  if (columns.test && last.test_metric) {
    s["final_test_loss"] = *last.test_loss;
    s["final_test_metric"] = *last.test_metric;
    s["test_metric"] = std::string(plan.objective->loss().metric_name());
    if (const int classes = plan.objective->loss().traits().classes;
        classes > 0 && !last.test_confusion.empty()) {
      nlohmann::json counts = nlohmann::json::array();
      nlohmann::json recall = nlohmann::json::array();
      for (int t = 0; t < classes; ++t) {
        const auto begin = last.test_confusion.begin() + static_cast<std::ptrdiff_t>(t * classes);
        const std::vector<std::int64_t> row(begin, begin + classes);
        const std::int64_t total = std::accumulate(row.begin(), row.end(), std::int64_t{0});
        counts.push_back(row);
        recall.push_back(
            total > 0 ? nlohmann::json(static_cast<double>(row[static_cast<std::size_t>(t)]) /
                                       static_cast<double>(total))
                      : nlohmann::json());
      }
      s["test_confusion"] = {{"classes", classes}, {"counts", counts}, {"class_accuracy", recall}};
    }
    if (last.test_auc) {  // null where undefined (a test set of one class)
      s["final_test_auc"] =
          std::isfinite(*last.test_auc) ? nlohmann::json(*last.test_auc) : nlohmann::json();
    }
  }
  if (plan.target_loss) {
    s["target_loss"] = *plan.target_loss;
    s["time_to_target"] =
        tally.time_to_target ? nlohmann::json(*tally.time_to_target) : nlohmann::json();
    s["iterations_to_target"] =
        tally.iterations_to_target ? nlohmann::json(*tally.iterations_to_target) : nlohmann::json();
  }
  if (columns.drain) {
    s["total_wall_time"] = last.wall_time;
  }
  add_rule_summary(plan, columns, tally, s);
  if (columns.threads) {
    s["seconds_per_unit"] = tally.seconds_per_unit;
    s["total_real_wall_time"] = tally.real_wall_sum;
    s["total_real_time"] = last.real_seconds;
    s["total_real_stop_time"] = tally.real_stop_sum;
    if (last.iteration > 0) {
      const auto t = static_cast<double>(last.iteration);
      s["mean_real_iteration_time"] = tally.real_stop_sum / t;
      s["heard_same_as_simulated"] = static_cast<double>(tally.heard_same) / t;
    }
  }
}

/// contribution_share_min / _max: the smallest and largest share of the used messages that one
/// worker sent (1/n each when every worker contributed equally; null before any was used).
void add_contribution_summary(const WorkerTally& workers, nlohmann::json& s) {
  const std::uint64_t total = workers.total_used();
  if (total == 0) {
    s["contribution_share_min"] = nullptr;
    s["contribution_share_max"] = nullptr;
    return;
  }
  const auto [lo, hi] = std::minmax_element(workers.used.begin(), workers.used.end());
  s["contribution_share_min"] = static_cast<double>(*lo) / static_cast<double>(total);
  s["contribution_share_max"] = static_cast<double>(*hi) / static_cast<double>(total);
}

nlohmann::json training_summary(const RunPlan& plan,
                                const RunSetUp& setup,
                                const TraceColumns& columns,
                                const RunOutcome& outcome,
                                const TrainingTally& tally,
                                const TrainingDiagnostics& diagnostics) {
  nlohmann::json s = base_summary(plan, setup);
  s["status"] = outcome.status;
  if (!outcome.error.empty()) {
    s["error"] = outcome.error;
  }
  const sim::TraceRow& last = tally.last;
  s["step"] = plan.step;
  s["smoothness"] = plan.smoothness;
  s["iterations"] = last.iteration;
  s["total_time"] = last.time;
  s["mean_iteration_time"] = tally.times.mean;
  s["iteration_time_sd"] = tally.times.sd();
  s["final_loss"] = last.loss;
  s["best_loss"] = tally.best;
  s["final_grad_norm"] = last.grad_norm;
  if (tally.times.n > 0) {
    s["mean_decoding_error"] = tally.error_sum / static_cast<double>(tally.times.n);
    s["mean_workers_heard"] = tally.heard_sum / static_cast<double>(tally.times.n);
  }
  add_contribution_summary(tally.workers, s);
  add_optional_summary(plan, columns, tally, s);
  std::vector<RunWarning> warnings = plan_warnings(plan);
  for (auto& w : diagnostics.finish(s)) {
    warnings.push_back(std::move(w));
  }
  s["warnings"] = warnings_json(warnings);
  return s;
}

/// The asynchronous loop of a plan with an update rule, on its own clock.
void train_asynchronously(const RunPlan& plan,
                          const sim::TrainingOptions& options,
                          sim::Optimizer& optimizer,
                          const std::function<void(const sim::TraceRow&)>& on_row) {
  sim::AsynchronousCluster cluster(
      plan.make_delays(), plan.update->mode, plan.update->k, plan.seed, plan.network);
  sim::AsynchronousOptions async{options, plan.update->step, std::nullopt};
  if (plan.batch) {
    async.minibatch = sim::MinibatchOptions{*plan.batch, plan.seed};
  }
  sim::train_asynchronous(*plan.objective,
                          plan.test_objective.get(),
                          *plan.scheme.code,
                          optimizer,
                          cluster,
                          async,
                          on_row);
}

/// The pool and backend of a training run. execute_run owns them and lets them go only after it
/// wrote the run's files: a backend's destructor may end the process (MPI_Abort when a worker
/// rank never answers the stop), and must not lose summary.json or heard.csv.
struct TrainingResources {
  std::optional<models::WorkerPool> pool;
  std::unique_ptr<sim::Backend> backend;
};

RunOutcome run_training(const RunPlan& plan,
                        const RunSetUp& setup,
                        TraceWriter& writer,
                        const StopHook& should_stop,
                        const ProgressHook& progress,
                        TrainingResources& resources) {
  const TraceColumns columns(plan);
  fmt::memory_buffer buffer;
  const std::string header = columns.header();
  buffer.append(header.data(), header.data() + header.size());
  // Wall-clock backends time real cores: their master computes on one thread, leaving the rest
  // to the workers.
  models::WorkerPool& pool =
      resources.pool.emplace(plan.backend.traits.real_time ? 1 : plan.threads);
  resources.backend = plan.make_backend(&pool);
  sim::Backend* const backend = resources.backend.get();
  const std::vector<sim::ThreadedIterationRecord>* records = backend->real_records();
  STRAGGLERSIM_ASSERT((records != nullptr) == columns.threads,
                      "a backend keeps real records exactly when its row says it is real time");
  auto optimizer = plan.make_optimizer();
  RunOutcome outcome;
  TrainingTally tally;
  tally.seconds_per_unit = backend->seconds_per_unit();
  tally.workers.resize(plan.workers);
  TrainingDiagnostics diagnostics(plan, setup.optimum);
  end_of_rows(
      [&] {
        const auto on_row = [&](const sim::TraceRow& row) {
          write_row(plan, columns, records, row, buffer, tally);
          diagnostics.add(row);
          writer.add(buffer);
          if (progress) {
            progress({row.iteration, plan.iterations, row.time, row.loss});
          }
          stop_after_row(should_stop);
        };
        const sim::TrainingOptions options{plan.iterations, &pool, plan.time_budget};
        if (plan.update) {
          train_asynchronously(plan, options, *optimizer, on_row);
        } else {
          sim::train(
              *plan.objective, plan.test_objective.get(), *optimizer, *backend, options, on_row);
        }
      },
      outcome);
  writer.finish(buffer);
  if (records != nullptr) {
    outcome.heard_csv = heard_csv(*records);
  }
  if (const auto times = backend->finish()) {
    outcome.worker_times_csv = worker_times_csv(*times, tally.last.iteration, plan.workers);
  }
  outcome.workers_csv = tally.workers.csv(columns.rows, columns.staleness);
  outcome.summary = training_summary(plan, setup, columns, outcome, tally, diagnostics);
  return outcome;
}

}  // namespace

RunOutcome execute_run(const RunPlan& plan,
                       const std::filesystem::path& out_dir,
                       const StopHook& should_stop,
                       const ProgressHook& progress) {
  const auto started = std::chrono::steady_clock::now();
  const RunSetUp setup = set_up(plan);
  std::filesystem::create_directories(out_dir);
  // summary.json, written last and atomically, marks a complete run; trace.csv grows row by row.
  // The files a run writes at its end go first, so that none of an earlier run's (a training
  // run's workers.csv under a delay-only one, a real backend's heard.csv) stays beside this one.
  for (const char* name : {"summary.json", "workers.csv", "heard.csv", "worker_times.csv"}) {
    remove_regular_file(out_dir / name);
  }
  TraceWriter trace(out_dir / "trace.csv");
  TrainingResources resources;  // outlives the writes below (TrainingResources)
  const auto iterations_started = std::chrono::steady_clock::now();
  RunOutcome outcome = plan.delay_only()
                           ? run_delay_only(plan, setup, trace, should_stop, progress)
                           : run_training(plan, setup, trace, should_stop, progress, resources);
  const double iterations_seconds = seconds_since(iterations_started) - trace.seconds();
  // Every row may be finite while a total or a variance of the times overflows (delays near
  // 1e300): numerical trouble too, not an "ok" run with an infinity in its summary.
  for (const auto& [key, value] : outcome.summary.items()) {
    if (outcome.status == "ok" && key.find("time") != std::string::npos &&
        value.is_number_float() && !std::isfinite(value.get<double>())) {
      outcome.status = "failed";
      outcome.error = fmt::format("non-finite {} (delays or data too large)", key);
      outcome.summary["status"] = outcome.status;
      outcome.summary["error"] = outcome.error;
    }
  }
  // Measured, not simulated: excluded from every same-bytes comparison (docs/model.md §7).
  outcome.summary["plan_seconds"] =
      plan.plan_seconds ? nlohmann::json(*plan.plan_seconds) : nlohmann::json(nullptr);
  outcome.summary["predictions_seconds"] = setup.predictions_seconds;
  outcome.summary["iterations_seconds"] = iterations_seconds;
  outcome.summary["writing_seconds"] = trace.seconds();
  outcome.summary["wall_clock_seconds"] = seconds_since(started);
  outcome.summary["data_bytes_read"] =
      plan.data_bytes_before_plan
          ? nlohmann::json(models::data_bytes_read() - *plan.data_bytes_before_plan)
          : nlohmann::json(nullptr);
  if (!outcome.heard_csv.empty()) {
    write_file_atomically(out_dir / "heard.csv", outcome.heard_csv);
  }
  if (!outcome.worker_times_csv.empty()) {
    write_file_atomically(out_dir / "worker_times.csv", outcome.worker_times_csv);
  }
  if (!outcome.workers_csv.empty()) {
    write_file_atomically(out_dir / "workers.csv", outcome.workers_csv);
  }
  write_file_atomically(out_dir / "summary.json", outcome.summary.dump(2) + "\n");
  return outcome;
}

}  // namespace stragglersim::experiments

#pragma once
// What summary.json reports beyond the raw totals (docs/model.md §7 "summary.json"): the optimum
// f* and the suboptimality reached, the per-group coverage of a group code, and warnings for
// degenerate runs. Gathered row by row while the trace is written, so memory stays O(groups).

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config/run_plan.h"
#include "models/worker_pool.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

/// Relative suboptimality levels (f − f*)/(f(x₀) − f*) whose first time and iteration the
/// summary reports, and their keys in summary.json and index.csv.
inline constexpr std::array<double, 3> kSuboptimalityLevels = {1e-1, 1e-2, 1e-3};
inline constexpr std::array<const char*, 3> kSuboptimalityKeys = {"1e-1", "1e-2", "1e-3"};

/// f* of a plan with data, or why it is not computed.
struct OptimumReference {
  std::optional<double> value;  ///< f* = min f (regulariser included); nullopt when not computed
  double gradient_norm = 0.0;   ///< ‖∇f(x*)‖ of the solve, its certificate
  /// "normal equations (COD)", "newton", "conjugate gradient" or "l-bfgs"
  /// (models::solve_optimum), or "not computed: <why>" (too costly, or the iterative solve
  /// missed its certificate within its budget).
  std::string method;
  /// The certificate and cost of the solve (models::Optimum), set when a solve was attempted.
  std::optional<double> newton_decrement;
  int iterations = 0;
  int iteration_limit = 0;
  int data_passes = 0;
  std::string stop;
  double seconds = 0.0;
  /// "solved" or "cache" (plan_optimum); nullopt when no solve was attempted.
  std::optional<std::string> source;
};

/// f* by plan_optimum (models::solve_optimum with optimum_options, on `pool`) unless
/// optimum_cost_problem refuses the solve as far more costly than the run or the solve fails
/// (then value is nullopt and method says why).
OptimumReference reference_optimum(const RunPlan& plan, models::WorkerPool* pool = nullptr);

/// One warning of summary.json: a stable code and a sentence.
struct RunWarning {
  std::string code;
  std::string message;
};

/// Warnings known before the first iteration: a deadline below every worker's smallest possible
/// delay (DelayModel::lower_bound), so no worker can ever be heard.
std::vector<RunWarning> plan_warnings(const RunPlan& plan);

/// Row-by-row observer of a training run: suboptimality levels, gradient error, group coverage
/// and the degenerate-run warnings (no worker heard, a group erased in more than half of the
/// iterations, a loss increase).
class TrainingDiagnostics {
 public:
  TrainingDiagnostics(const RunPlan& plan, OptimumReference optimum);
  /// Adds row t (row 0 first, every row in order).
  void add(const sim::TraceRow& row);
  /// Writes the fields into `summary` (f_star, f_star_method, final_suboptimality,
  /// time/iterations_to_relative_suboptimality, mean_gradient_error, group_coverage,
  /// group_longest_outage) and returns the warnings of the rows.
  std::vector<RunWarning> finish(nlohmann::json& summary) const;

  /// Groups of workers with identical supports, in order of their first worker; empty unless the
  /// code's layout is kGroups.
  [[nodiscard]] const std::vector<std::vector<int>>& groups() const { return groups_; }

 private:
  /// f_star and its provenance, final_suboptimality and the time/iterations to each level.
  void write_optimum(nlohmann::json& summary) const;
  /// group_coverage and group_longest_outage; warns of groups erased in most iterations.
  void write_group_coverage(nlohmann::json& summary, std::vector<RunWarning>& warnings) const;

  OptimumReference optimum_;
  double initial_loss_ = 0.0;
  double last_loss_ = 0.0;
  std::uint64_t last_iteration_ = 0;
  std::array<std::optional<double>, 3> level_time_;
  std::array<std::optional<std::uint64_t>, 3> level_iteration_;
  double gradient_error_sum_ = 0.0;
  std::uint64_t gradient_errors_ = 0;
  // Loss increases between consecutive rows beyond rounding.
  std::uint64_t increases_ = 0;
  std::uint64_t first_increase_ = 0;
  std::uint64_t largest_increase_at_ = 0;
  double largest_increase_ = 0.0;
  // Iterations in which no worker was heard.
  std::uint64_t silent_ = 0;
  std::uint64_t first_silent_ = 0;
  // Group coverage: worker → group, per group the covered count, the current and the longest
  // uncovered run.
  std::vector<std::vector<int>> groups_;
  std::vector<int> group_of_;
  std::vector<std::uint64_t> covered_;
  std::vector<std::uint64_t> outage_;
  std::vector<std::uint64_t> longest_outage_;
  std::vector<char> heard_group_;
};

/// The no-worker-heard warning from a count of silent iterations (shared by the delay-only and
/// training paths); nullopt when there were none.
std::optional<RunWarning> silent_iterations_warning(std::uint64_t silent,
                                                    std::uint64_t first,
                                                    std::uint64_t iterations);

/// Prints "warning: <code>: <message>" per warning on stderr.
void print_warnings(std::span<const RunWarning> warnings);

/// The same for the "warnings" array of a summary (what `run` and `sweep` print).
void print_warnings(const nlohmann::json& summary, std::string_view prefix = {});

/// One warning code over the runs of a sweep: how many runs had it, and the first of them (by
/// folder name, so the line does not depend on the order runs finish in) with its message.
struct WarningCount {
  std::string code;
  std::size_t runs = 0;
  std::string first_run;
  std::string message;
};

/// Adds the "warnings" of `summary` (the run in `folder`) to `counts`: one entry per code,
/// sorted by code; a code counts once per run.
void count_warnings(const nlohmann::json& summary,
                    const std::string& folder,
                    std::vector<WarningCount>& counts);

/// "warning: <code>: <runs> of <total> runs; first <first_run>: <message>" per entry, on stderr.
void print_warning_counts(std::span<const WarningCount> counts, std::size_t total);

/// The "warnings" array of summary.json.
nlohmann::json warnings_json(std::span<const RunWarning> warnings);

}  // namespace stragglersim::experiments

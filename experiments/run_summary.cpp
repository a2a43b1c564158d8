// summary.json of a run (experiments/run_summary.h): the build, the plan, the prediction, and the
// totals gathered from the rows of a delay-only or a training run.

#include "experiments/run_summary.h"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <boost/version.hpp>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "experiments/build_info.h"
#include "experiments/run_output.h"

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

nlohmann::json base_summary(const RunPlan& plan, const RunSetUp& setup) {
  nlohmann::json s;
  s["name"] = plan.name;
  s["seed"] = plan.seed;
  s["config"] = plan.resolved;
  s["build"] = build_info();
  s["theory"] = setup.theory;
  return s;
}

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

namespace {

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

}  // namespace

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

}  // namespace stragglersim::experiments

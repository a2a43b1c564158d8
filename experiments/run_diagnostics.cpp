#include "experiments/run_diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "experiments/predict/plan_optimum.h"
#include "experiments/predict/predictions.h"
#include "models/optimum.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json optional_json(const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

/// Workers with identical supports, grouped in order of their first worker (kGroups codes only).
std::vector<std::vector<int>> support_groups(const codes::GradientCode& code) {
  std::vector<std::vector<int>> groups;
  if (code.structure().layout != codes::CodeLayout::kGroups) {
    return groups;
  }
  std::map<std::vector<int>, std::size_t> index;
  for (int w = 0; w < code.workers(); ++w) {
    const auto s = code.support(w);
    const auto [it, added] = index.try_emplace(std::vector<int>(s.begin(), s.end()), groups.size());
    if (added) {
      groups.emplace_back();
    }
    groups[it->second].push_back(w);
  }
  return groups;
}

/// Groups named in the group warning at most.
constexpr std::size_t kListedGroups = 5;

/// "3 (workers 6, 7)" for the group warning.
std::string group_label(std::size_t g, const std::vector<int>& workers) {
  return fmt::format("{} (workers {})", g, fmt::join(workers, ", "));
}

}  // namespace

OptimumReference reference_optimum(const RunPlan& plan, models::WorkerPool* pool) {
  OptimumReference ref;
  if (plan.delay_only()) {
    ref.method = "not computed: delay-only run";
    return ref;
  }
  if (auto problem = optimum_cost_problem(plan)) {
    ref.method = "not computed: " + *problem;
    return ref;
  }
  const PlanOptimum solved = plan_optimum(plan, pool);
  const models::Optimum& opt = solved.optimum;
  ref.gradient_norm = opt.gradient_norm;
  ref.newton_decrement = opt.newton_decrement;
  ref.iterations = opt.iterations;
  ref.iteration_limit = opt.iteration_limit;
  ref.data_passes = opt.data_passes;
  ref.stop = opt.stop;
  ref.seconds = solved.seconds;
  ref.source = solved.source;
  if (opt.converged) {
    ref.value = opt.value;
    ref.method = opt.method;
  } else {
    ref.method = "not computed: " + opt.failure;
  }
  return ref;
}

std::vector<RunWarning> plan_warnings(const RunPlan& plan) {
  std::vector<RunWarning> out;
  const auto shape = plan.scheme.rule->shape();
  if (shape && shape->kind == sim::RuleKind::kDeadline) {
    const auto delays = plan.make_delays();
    double fastest = std::numeric_limits<double>::infinity();
    for (int i = 0; i < delays->workers(); ++i) {
      fastest = std::min(fastest, delays->lower_bound(i));
    }
    if (shape->deadline < fastest) {
      out.push_back({"deadline_below_minimum_delay",
                     fmt::format("the deadline {} s is below the smallest possible delay of every "
                                 "worker ({} s): no worker can ever be heard",
                                 shape->deadline,
                                 fastest)});
    }
  }
  return out;
}

std::optional<RunWarning> silent_iterations_warning(std::uint64_t silent,
                                                    std::uint64_t first,
                                                    std::uint64_t iterations) {
  if (silent == 0) {
    return std::nullopt;
  }
  return RunWarning{"no_worker_heard",
                    fmt::format("no worker was heard in {} of {} iterations (first: iteration {}); "
                                "those steps used no data gradient",
                                silent,
                                iterations,
                                first)};
}

void print_warnings(std::span<const RunWarning> warnings) {
  for (const auto& w : warnings) {
    std::cerr << fmt::format("warning: {}: {}\n", w.code, w.message);
  }
}

void print_warnings(const nlohmann::json& summary, std::string_view prefix) {
  if (!summary.contains("warnings")) {
    return;
  }
  for (const auto& w : summary["warnings"]) {
    std::cerr << fmt::format("warning: {}{}: {}\n",
                             prefix,
                             w["code"].get<std::string>(),
                             w["message"].get<std::string>());
  }
}

void count_warnings(const nlohmann::json& summary,
                    const std::string& folder,
                    std::vector<WarningCount>& counts) {
  if (!summary.contains("warnings")) {
    return;
  }
  std::vector<std::string> seen;
  for (const auto& w : summary["warnings"]) {
    const std::string code = w["code"].get<std::string>();
    if (std::find(seen.begin(), seen.end(), code) != seen.end()) {
      continue;
    }
    seen.push_back(code);
    auto it =
        std::lower_bound(counts.begin(), counts.end(), code, [](const auto& c, const auto& k) {
          return c.code < k;
        });
    if (it == counts.end() || it->code != code) {
      it = counts.insert(it, WarningCount{code, 0, folder, w["message"].get<std::string>()});
    } else if (folder < it->first_run) {
      it->first_run = folder;
      it->message = w["message"].get<std::string>();
    }
    ++it->runs;
  }
}

void print_warning_counts(std::span<const WarningCount> counts, std::size_t total) {
  for (const auto& c : counts) {
    std::cerr << fmt::format("warning: {}: {} of {} runs; first {}: {}\n",
                             c.code,
                             c.runs,
                             total,
                             c.first_run,
                             c.message);
  }
}

nlohmann::json warnings_json(std::span<const RunWarning> warnings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : warnings) {
    out.push_back({{"code", w.code}, {"message", w.message}});
  }
  return out;
}

TrainingDiagnostics::TrainingDiagnostics(const RunPlan& plan, OptimumReference optimum)
    : optimum_(std::move(optimum)), groups_(support_groups(*plan.scheme.code)) {
  group_of_.assign(static_cast<std::size_t>(plan.scheme.code->workers()), -1);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (const int w : groups_[g]) {
      group_of_[static_cast<std::size_t>(w)] = static_cast<int>(g);
    }
  }
  covered_.assign(groups_.size(), 0);
  outage_.assign(groups_.size(), 0);
  longest_outage_.assign(groups_.size(), 0);
  heard_group_.assign(groups_.size(), 0);
}

void TrainingDiagnostics::add(const sim::TraceRow& row) {
  if (row.iteration == 0) {
    initial_loss_ = row.loss;
  } else {
    // A rise within a few ulps is rounding of a converged run, not a bad step.
    const double rise = row.loss - last_loss_;
    if (rise > 1e-12 * std::max(1.0, std::abs(last_loss_))) {
      first_increase_ = increases_ == 0 ? row.iteration : first_increase_;
      ++increases_;
      if (rise > largest_increase_) {
        largest_increase_ = rise;
        largest_increase_at_ = row.iteration;
      }
    }
    if (row.workers_heard == 0) {
      first_silent_ = silent_ == 0 ? row.iteration : first_silent_;
      ++silent_;
    }
    if (row.gradient_error) {
      gradient_error_sum_ += *row.gradient_error;
      ++gradient_errors_;
    }
    if (!groups_.empty()) {
      std::fill(heard_group_.begin(), heard_group_.end(), 0);
      for (const int w : row.heard) {
        heard_group_[static_cast<std::size_t>(group_of_[static_cast<std::size_t>(w)])] = 1;
      }
      for (std::size_t g = 0; g < groups_.size(); ++g) {
        if (heard_group_[g] != 0) {
          ++covered_[g];
          outage_[g] = 0;
        } else {
          longest_outage_[g] = std::max(longest_outage_[g], ++outage_[g]);
        }
      }
    }
  }
  if (optimum_.value) {
    const double initial_gap = initial_loss_ - *optimum_.value;
    for (std::size_t l = 0; l < kSuboptimalityLevels.size(); ++l) {
      // x₀ already optimal (gap ≤ 0): every level counts as reached at iteration 0.
      const bool reached = initial_gap <= 0.0 ||
                           (row.loss - *optimum_.value) <= kSuboptimalityLevels[l] * initial_gap;
      if (reached && !level_iteration_[l]) {
        level_iteration_[l] = row.iteration;
        level_time_[l] = row.time;
      }
    }
  }
  last_loss_ = row.loss;
  last_iteration_ = row.iteration;
}

void TrainingDiagnostics::write_optimum(nlohmann::json& summary) const {
  summary["f_star"] = optional_json(optimum_.value);
  summary["f_star_method"] = optimum_.method;
  if (optimum_.source) {
    summary["f_star_source"] = *optimum_.source;
    summary["f_star_seconds"] = optimum_.seconds;
    summary["f_star_iterations"] = optimum_.iterations;
    summary["f_star_iteration_limit"] = optimum_.iteration_limit;
    summary["f_star_data_passes"] = optimum_.data_passes;
    summary["f_star_stop"] = optimum_.stop;
    summary["f_star_newton_decrement"] = optional_json(optimum_.newton_decrement);
    summary["f_star_gradient_norm"] = optimum_.gradient_norm;
  }
  if (optimum_.value) {
    summary["final_suboptimality"] = last_loss_ - *optimum_.value;
    nlohmann::json times;
    nlohmann::json iterations;
    for (std::size_t l = 0; l < kSuboptimalityLevels.size(); ++l) {
      times[kSuboptimalityKeys[l]] = optional_json(level_time_[l]);
      iterations[kSuboptimalityKeys[l]] = optional_json(level_iteration_[l]);
    }
    summary["time_to_relative_suboptimality"] = times;
    summary["iterations_to_relative_suboptimality"] = iterations;
  }
}

void TrainingDiagnostics::write_group_coverage(nlohmann::json& summary,
                                               std::vector<RunWarning>& warnings) const {
  if (groups_.empty() || last_iteration_ == 0) {
    return;
  }
  const auto t = static_cast<double>(last_iteration_);
  nlohmann::json coverage = nlohmann::json::array();
  std::vector<std::string> lost;
  std::size_t lost_count = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const double fraction = static_cast<double>(covered_[g]) / t;
    coverage.push_back(fraction);
    if (2 * covered_[g] < last_iteration_ && ++lost_count <= kListedGroups) {
      lost.push_back(fmt::format("{} covered in {:.3g}", group_label(g, groups_[g]), fraction));
    }
  }
  if (lost_count > kListedGroups) {
    lost.back() += fmt::format("; and {} more", lost_count - kListedGroups);
  }
  summary["group_coverage"] = coverage;
  summary["group_longest_outage"] = longest_outage_;
  if (lost_count > 0) {
    warnings.push_back(
        {"group_mostly_erased",
         fmt::format("{} of {} groups were erased in more than half of the {} iterations: "
                     "group {}",
                     lost_count,
                     groups_.size(),
                     last_iteration_,
                     fmt::join(lost, "; group "))});
  }
}

std::vector<RunWarning> TrainingDiagnostics::finish(nlohmann::json& summary) const {
  write_optimum(summary);
  summary["mean_gradient_error"] =
      gradient_errors_ > 0
          ? nlohmann::json(gradient_error_sum_ / static_cast<double>(gradient_errors_))
          : nlohmann::json();

  std::vector<RunWarning> warnings;
  if (auto w = silent_iterations_warning(silent_, first_silent_, last_iteration_)) {
    warnings.push_back(std::move(*w));
  }
  write_group_coverage(summary, warnings);
  if (increases_ > 0) {
    warnings.push_back(
        {"loss_increase",
         fmt::format("the loss increased in {} of {} iterations (first: iteration {}; largest "
                     "increase {:.6g} at iteration {})",
                     increases_,
                     last_iteration_,
                     first_increase_,
                     largest_increase_,
                     largest_increase_at_)});
  }
  return warnings;
}

}  // namespace stragglersim::experiments

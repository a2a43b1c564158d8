// `stragglersim validate CONFIG.json --trace times.csv [--holdout H] [--threads N] [--json]`:
// predictions from the first part of a trace against the replay of the rest (docs/validate.md).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"
#include "experiments/trace_validation.h"

namespace stragglersim::experiments {
namespace {

struct ValidateArguments {
  std::string config;
  std::string trace;
  double holdout = 0.5;
  double suboptimality = 0.0;  ///< 0: the config's target_loss
  int repetitions = 10;
  bool fixed_step = false;
  int threads = 1;  ///< candidates estimated at once (set to the cores below)
  bool json = false;
};

std::string cell(double v, const char* format) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : std::string("-");
}

void print_header(const Validation& v, const std::string& config) {
  const auto& s = v.stationarity;
  std::cout << fmt::format(
      "{} on {}: fit on the first {} iterations, replay of the last {}\n"
      "stationarity: mean time per iteration {:.6g} (fit) vs {:.6g} (held out), z = {:.3g} "
      "(long-run sd {:.4g}, batches of {}), p = {:.3g}: {}\n"
      "fitted by AIC: {}; block replay: L = {}\n",
      config,
      v.trace,
      v.fit_iterations,
      v.holdout_iterations,
      s.fit_mean,
      s.holdout_mean,
      s.statistic,
      s.long_run_sd,
      s.batch,
      s.p_value,
      s.stationary()
          ? fmt::format("stationary at level {}", s.level)
          : fmt::format("NOT stationary (p < {}): the prediction does not apply", s.level),
      v.fitted_delay.dump(),
      v.block_length);
}

/// The time-to-target table: each model's prediction and the held-out replay, by replay rank.
void print_time_to_target_rows(const TimeToTargetValidation& t) {
  std::size_t width = 6;
  for (const auto& r : t.rows) width = std::max(width, r.scheme.size());
  std::string header = fmt::format("{:>4} {:<{}}", "rank", "scheme", width);
  for (const auto& model : t.models) {
    header += fmt::format(" {:>26}", model.substr(0, 26));
  }
  std::cout << header << fmt::format(" {:>22}\n", "replayed ± s.e.");
  for (const auto& r : t.rows) {
    if (!r.problem.empty()) {
      std::cout << fmt::format("{:>4} {:<{}} not compared: {}\n", "-", r.scheme, width, r.problem);
      continue;
    }
    std::string line = fmt::format("{:>4} {:<{}}", r.rank, r.scheme, width);
    for (const double p : r.predicted) {
      line += fmt::format(" {:>26}",
                          std::isnan(p)      ? std::string("not predicted")
                          : std::isfinite(p) ? fmt::format("{:.3f}", p)
                                             : std::string("not reached"));
    }
    line +=
        fmt::format(" {:>22}",
                    r.reached == r.runs ? fmt::format("{:.3f} ± {:.3f}", r.replayed, r.replayed_se)
                                        : fmt::format("{}/{} reached", r.reached, r.runs));
    std::cout << line << '\n';
  }
}

/// A model's recommendation and its rank under the replay, one line.
std::string pick_text(const TimeToTargetPick& p) {
  if (!std::isfinite(p.best_replayed)) {
    return fmt::format(
        "{} (predicted {:.3f} s to target): no scheme reaches the target in every replay run "
        "({}/{} of its runs did)",
        p.scheme,
        p.predicted,
        p.reached,
        p.runs);
  }
  return fmt::format(
      "{} (predicted {:.3f} s to target): replayed {}; ranks {} of {} under the replay; {} the "
      "replay's best ({}, {:.3f} ± {:.3f} s)",
      p.scheme,
      p.predicted,
      std::isfinite(p.replayed) ? fmt::format("{:.3f} ± {:.3f} s", p.replayed, p.replayed_se)
                                : fmt::format("{}/{} runs reached the target", p.reached, p.runs),
      p.rank,
      p.of,
      p.rank == 1                    ? std::string("it is")
      : std::isfinite(p.behind_best) ? fmt::format("{:.1f}% behind", 100.0 * p.behind_best)
                                     : std::string("behind"),
      p.best,
      p.best_replayed,
      p.best_se);
}

void print_time_to_target(const TimeToTargetValidation& t) {
  if (!t.not_compared.empty()) {
    std::cout << fmt::format("time to target: not compared ({})\n", t.not_compared);
    return;
  }
  std::cout << fmt::format(
      "time to target: loss {:.6g} (f* = {:.6g}, f - f* <= {:.4g}), horizon {} iterations; "
      "predicted by each model as advise predicts (its methods in --json); replayed: {} runs of "
      "the held-out part from random start rows, mean ± s.e. (k/{} reached: not every run got "
      "there)\n",
      t.target_loss,
      t.f_star,
      t.target_gap,
      t.horizon,
      t.repetitions,
      t.repetitions);
  print_time_to_target_rows(t);
  for (const auto& p : t.picks) {
    std::cout << fmt::format("{}: recommends {}\n", p.model, pick_text(p));
  }
  for (const auto& p : t.picks) {
    if (p.model == t.chosen) {
      std::cout << fmt::format(
          "recommended (by the chosen model, {}): {}\n", p.model, pick_text(p));
    }
  }
}

void print_table(const Validation& v, const std::string& config) {
  print_header(v, config);
  std::cout << fmt::format("{:<28} {:<36} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
                           "model",
                           "scheme",
                           "predicted",
                           "replayed",
                           "rel. error",
                           "median err",
                           "q90 err",
                           "method");
  for (const auto& r : v.rows) {
    if (!r.problem.empty()) {
      std::cout << fmt::format("{:<28} {:<36} not compared: {}\n", r.model, r.scheme, r.problem);
      continue;
    }
    std::cout << fmt::format(
        "{:<28} {:<36} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
        r.model,
        r.scheme,
        cell(r.predicted, "{:.4f}"),
        cell(r.replayed, "{:.4f}"),
        cell(100.0 * r.relative_error, "{:+.2f}%"),
        cell(100.0 * (r.predicted_median - r.replayed_median) / r.replayed_median, "{:+.2f}%"),
        cell(100.0 * (r.predicted_q90 - r.replayed_q90) / r.replayed_q90, "{:+.2f}%"),
        r.method);
  }
  for (const auto& m : v.verdicts) {
    std::cout << fmt::format(
        "{}: recommends {} (replayed {:.4f} s); the replay's best is {} ({:.4f} s): {}\n",
        m.model,
        m.recommended,
        m.recommended_replayed,
        m.best,
        m.best_replayed,
        m.recommended_is_best ? fmt::format("within {:.0f}%", 100.0 * v.tolerance)
                              : fmt::format("NOT within {:.0f}%", 100.0 * v.tolerance));
  }
  const nlohmann::json scores = validation_json(v)["scores"];
  std::string text;
  for (std::size_t m = 0; m < v.scores.size(); ++m) {
    text += fmt::format("{}{} {} = {}",
                        text.empty() ? "" : "; ",
                        v.scores[m].model,
                        score_text(scores[m], v.holdout_lag1),
                        cell(v.scores[m].score, "{:.4f}"));
  }
  std::cout << fmt::format(
      "held-out error (scheme error: the mean over the compared schemes of the mean, median and "
      "q90 "
      "errors; persistence: |lag-1 autocorrelation of the mean time - the held-out part's|; the "
      "score is their sum): {}\n"
      "chosen: {} ({})\n",
      text,
      v.chosen,
      v.choice_reason);
  print_time_to_target(v.time_to_target);
  if (!v.stationarity.stationary()) {
    std::cout << "the trace is not stationary: the prediction does not apply\n";
  }
}

int command_validate(const ValidateArguments& a) {
  const nlohmann::json config = read_json_file(a.config);
  const std::filesystem::path base_dir = std::filesystem::path(a.config).parent_path();
  TimeToTargetOptions time_to_target;
  if (a.suboptimality > 0.0) {
    time_to_target.suboptimality = a.suboptimality;
  }
  time_to_target.repetitions = a.repetitions;
  time_to_target.fixed_step = a.fixed_step;
  time_to_target.threads = a.threads;
  const Validation v =
      validate_file(config, a.config, base_dir, a.trace, a.holdout, time_to_target);
  if (a.json) {
    std::cout << validation_json(v).dump(2) << '\n';
  } else {
    print_table(v, a.config);
  }
  return 0;
}

}  // namespace

Subcommand add_validate_command(CLI::App& app) {
  auto a = std::make_shared<ValidateArguments>();
  a->threads = hardware_cores();
  auto* cmd = app.add_subcommand(
      "validate", "check a trace's predictions: fit the first part, replay the held-out rest");
  cmd->add_option("config", a->config, "config file (JSON): workers, data, candidate schemes")
      ->required();
  cmd->add_option("--trace", a->trace, "CSV: iteration,worker,seconds")->required();
  cmd->add_option("--holdout", a->holdout, "held-out fraction of the iterations, in (0, 1)");
  cmd->add_option("--suboptimality",
                  a->suboptimality,
                  "time to target f - f* <= S (f(x0) - f*) instead of target_loss")
      ->check(CLI::Range(1e-12, 0.999999))
      ->default_str("");  // not given: the config's target_loss
  cmd->add_option("--repetitions",
                  a->repetitions,
                  "simulated runs per scheme and model, and replay runs per scheme (default 10)")
      ->check(CLI::Range(1, 10000));
  cmd->add_flag("--fixed-step",
                a->fixed_step,
                "the candidates of advise --fixed-step (the config's step); default: advise's, "
                "each at its own tuned step and parameters");
  cmd->add_option("--threads",
                  a->threads,
                  "candidates estimated at once (default: the machine's cores); the output is the "
                  "same at any count")
      ->check(CLI::Range(1, thread_cap()));
  cmd->add_flag("--json", a->json, "print JSON");
  return {cmd, [a] { return command_validate(*a); }};
}

}  // namespace stragglersim::experiments

// `stragglersim validate CONFIG.json --trace times.csv [--holdout H] [--json]`: predictions from
// the first part of a trace against the replay of the rest (docs/validate.md).

#include <fmt/format.h>

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
  std::string scores;
  for (const auto& m : v.scores) {
    scores += fmt::format("{}{} {} (lag-1 {:.2f})",
                          scores.empty() ? "" : ", ",
                          m.model,
                          cell(100.0 * m.score, "{:.2f}%"),
                          m.lag1);
  }
  std::cout << fmt::format(
      "held-out error (mean over the compared schemes of the mean, median and q90 errors, plus "
      "|lag-1 autocorrelation of the mean time - held out's {:.2f}|): {}\n"
      "chosen: {} ({})\n",
      v.holdout_lag1,
      scores,
      v.chosen,
      v.choice_reason);
  if (!v.stationarity.stationary()) {
    std::cout << "the trace is not stationary: the prediction does not apply\n";
  }
}

int command_validate(const ValidateArguments& a) {
  const nlohmann::json config = read_json_file(a.config);
  const std::filesystem::path base_dir = std::filesystem::path(a.config).parent_path();
  const Validation v = validate_file(config, a.config, base_dir, a.trace, a.holdout);
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
  auto* cmd = app.add_subcommand(
      "validate", "check a trace's predictions: fit the first part, replay the held-out rest");
  cmd->add_option("config", a->config, "config file (JSON): workers, data, candidate schemes")
      ->required();
  cmd->add_option("--trace", a->trace, "CSV: iteration,worker,seconds")->required();
  cmd->add_option("--holdout", a->holdout, "held-out fraction of the iterations, in (0, 1)");
  cmd->add_flag("--json", a->json, "print JSON");
  return {cmd, [a] { return command_validate(*a); }};
}

}  // namespace stragglersim::experiments

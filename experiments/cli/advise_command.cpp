// `stragglersim advise CONFIG.json [--json] [--fit TIMES.csv] [--suboptimality S]
// [--repetitions R] [--measure N] [--write FILE] [--fixed-step] [--threads N] [-q]`: schemes
// ranked by predicted time to target, each at its own tuned step and K, r or deadline unless
// --fixed-step (docs/advise.md).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "experiments/advice_tuning.h"
#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"
#include "experiments/fit_report.h"
#include "experiments/progress_line.h"
#include "experiments/run_output.h"
#include "experiments/scheme_advice.h"
#include "experiments/trace_validation.h"

namespace stragglersim::experiments {
namespace {

struct AdviseArguments {
  std::string config;
  bool json = false;
  std::string fit;
  std::string fit_model = "auto";
  double suboptimality = 0.0;
  int repetitions = 10;
  int measure = 0;
  std::string write;
  bool fixed_step = false;  ///< every scheme at the config's step and listed parameters
  bool quiet = false;       ///< no estimate of the tuning's time and no progress line
  int threads = 1;          ///< candidates estimated at once (set to the cores below)
};

std::string cell(double v, const char* format = "{:.4f}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : std::string("-");
}

/// The scheme column: 38 characters, wider when a label is (a collective config's labels name
/// their aggregation).
std::size_t label_width(const Advice& advice) {
  std::size_t width = 38;
  for (const auto& c : advice.ranked) {
    width = std::max(width, c.label.size());
  }
  return width;
}

/// The "tuned at" column: as wide as its widest entry.
std::size_t tuning_width(const Advice& advice) {
  std::size_t width = 8;
  for (const auto& c : advice.ranked) {
    if (c.tuning) {
      width = std::max(width, tuning_summary(*c.tuning).size());
    }
  }
  return width;
}

/// The line above the table and the column heads.
void print_header(const Advice& advice, const std::string& config_path, bool measured) {
  std::cout << fmt::format(
      "{}: target loss {:.6g} (f* = {:.6g}, f - f* <= {:.4g} = {:.3g} of f(x0) "
      "- f*), horizon {} "
      "iterations\n",
      config_path,
      advice.target_loss,
      advice.f_star,
      advice.target_gap,
      advice.target_gap / advice.initial_gap,
      advice.horizon);
  if (advice.tuned) {
    std::cout << fmt::format(
        "tuned: each scheme at its best step ({} x the config's step {:.6g}) and K, r or "
        "deadline, chosen on tuning runs; its row estimated on fresh runs (--fixed-step: "
        "without tuning)\n",
        fmt::join(kStepMultipliers, ", "),
        advice.base_step);
  }
  std::cout << fmt::format(
      "{:>4} {:<{}} {:>10} {:>10} {:>11}{}{}  {}\n",
      "rank",
      "scheme",
      label_width(advice),
      "iter time",
      "iterations",
      "total",
      measured ? fmt::format(" {:>20}", "measured ± s.e.") : "",
      advice.tuned ? fmt::format("  {:<{}}", "tuned at", tuning_width(advice)) : "",
      "methods (iteration time; iterations)");
}

/// One row of the table (a predicted candidate).
void print_row(const Advice& advice, const SchemeCandidate& c, int rank, bool measured) {
  const std::string its = c.iterations ? fmt::format("{:.4g}", *c.iterations) : "not reached";
  const std::string m =
      measured
          ? fmt::format(" {:>20}",
                        c.measured_reached == c.measured_runs
                            ? fmt::format("{:.3f} ± {:.3f}", c.measured_mean, c.measured_se)
                            : fmt::format("{}/{} reached", c.measured_reached, c.measured_runs))
          : "";
  // A baseline's or adaptive rule's total is simulated directly; its iteration time is
  // derived from it.
  const std::string methods =
      c.simulated_directly() ? "total: " + c.total_method
                             : fmt::format("{}; {}", c.iteration_time_method, c.iterations_method);
  const std::string tuned = advice.tuned
                                ? fmt::format("  {:<{}}",
                                              c.tuning ? tuning_summary(*c.tuning) : std::string(),
                                              tuning_width(advice))
                                : std::string();
  std::cout << fmt::format("{:>4} {:<{}} {:>10} {:>10} {:>11}{}{}  {}\n",
                           rank,
                           c.label,
                           label_width(advice),
                           c.has_iteration_time() ? cell(c.iteration_time) : "-",
                           its,
                           cell(c.total, "{:.3f}"),
                           m,
                           tuned,
                           methods);
}

void print_table(const Advice& advice, const std::string& config_path) {
  const bool measured = !advice.ranked.empty() && advice.ranked.front().measured_runs > 0;
  print_header(advice, config_path, measured);
  const std::size_t width = label_width(advice);
  int rank = 0;
  for (const auto& c : advice.ranked) {
    ++rank;
    if (!c.problem.empty()) {
      std::cout << fmt::format("{:>4} {:<{}} not predicted: {}\n", rank, c.label, width, c.problem);
      continue;
    }
    print_row(advice, c, rank, measured);
  }
  for (const auto& c : advice.ranked) {
    if (!c.caveat.empty()) {
      std::cout << fmt::format("caveat: {}: {}\n", c.label, c.caveat);
    }
  }
}

/// The held-out choice of `--fit` (entry_points.h fitted_delay), one line.
void print_model_choice(const nlohmann::json& choice) {
  std::string scores;
  for (const auto& m : choice.value("scores", nlohmann::json::array())) {
    scores += fmt::format("{}{} {}",
                          scores.empty() ? "" : ", ",
                          m["model"].get<std::string>(),
                          score_text(m, choice.value("holdout_lag1", 0.0)));
  }
  std::cout << fmt::format("model: {} ({}{})\n",
                           choice["chosen"].get<std::string>(),
                           choice["reason"].get<std::string>(),
                           scores.empty() ? "" : fmt::format("; held-out error: {}", scores));
}

/// The table, the recommendation and (with --fit) the model it was predicted with.
void print_report(const Advice& advice, const AdviseArguments& a, const FittedDelay& fitted) {
  print_table(advice, a.config);
  if (advice.ranked.empty() || !std::isfinite(advice.ranked.front().total)) {
    std::cout << "no scheme reaches the target within the horizon\n";
    return;
  }
  const auto& best = advice.ranked.front();
  std::cout << fmt::format("recommended: {} (predicted {:.3f} s to target{})\nconfig block: {}\n",
                           best.label,
                           best.total,
                           best.caveat.empty() ? "" : "; see its caveat above",
                           best.block.dump());
  if (!a.fit.empty()) {
    print_model_choice(fitted.choice);
    std::cout << fmt::format(
        "predicted with the delay fitted to {}: {}\n", a.fit, advice.predicted_delay.dump());
  }
}

/// The tuning's estimate of its time on stderr, and its progress line on a terminal.
void show_tuning(AdviceOptions& options, std::optional<ProgressLine>& line) {
  options.note = [](const std::string& note) { std::cerr << note << '\n'; };
  if (::isatty(STDERR_FILENO) == 0) {
    return;
  }
  line.emplace(std::cerr);
  options.progress = [&line](std::size_t done, std::size_t total) {
    line->update_text([done, total](double elapsed) {
      const double eta = elapsed / static_cast<double>(done) *
                         static_cast<double>(total > done ? total - done : 0);
      return fmt::format("tuning: grid point {}/{}  ETA {:.0f} s", done, total, eta);
    });
  };
}

int command_advise(const AdviseArguments& a) {
  std::optional<OutputFile> write;  // reserved before the work
  if (!a.write.empty()) {
    write.emplace(a.write, "--write");
  }
  const nlohmann::json config = read_json_file(a.config);
  const std::filesystem::path base_dir = std::filesystem::path(a.config).parent_path();
  AdviceOptions options;
  FittedDelay fitted;
  if (a.fit_model != "auto" && a.fit_model != "family" && a.fit_model != "block" &&
      a.fit_model != "empirical") {
    throw ConfigError(fmt::format(
        "--fit-model: unknown model; got \"{}\"; expected one of: auto, block, empirical, family",
        a.fit_model));
  }
  if (!a.fit.empty()) {
    fitted = fitted_delay(config, a.config, base_dir, a.fit, a.fit_model);
    options.predicted_delay = fitted.block;
  }
  if (a.suboptimality > 0.0) {
    options.suboptimality = a.suboptimality;
  }
  options.repetitions = a.repetitions;
  options.measure = a.measure;
  options.fixed_step = a.fixed_step;
  options.threads = a.threads;
  std::optional<ProgressLine> line;
  if (!a.quiet && !a.fixed_step) {
    show_tuning(options, line);
  }
  const Advice advice = advise(config, a.config, base_dir, options);
  if (line) {
    line->finish();
  }
  nlohmann::json j = advice_json(advice);
  if (!a.fit.empty()) {
    j["model_choice"] = fitted.choice;
  }
  if (write && !j["recommended_config"].is_null()) {
    write->commit(j["recommended_config"].dump(2) + "\n");
  }
  if (a.json) {
    std::cout << j.dump(2) << '\n';
    return 0;
  }
  print_report(advice, a, fitted);
  return 0;
}

}  // namespace

Subcommand add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseArguments>();
  a->threads = hardware_cores();
  auto* cmd =
      app.add_subcommand("advise", "rank coding schemes by predicted time to a target loss");
  cmd->add_option("config", a->config, "config file (JSON) with data and target_loss")->required();
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->add_option("--fit",
                  a->fit,
                  "predict with a delay model of this CSV of measured times, chosen by held-out "
                  "error");
  cmd->add_option("--fit-model",
                  a->fit_model,
                  "the model --fit builds: auto (held-out choice), family (AIC), block, empirical")
      ->default_str("auto");
  cmd->add_option("--suboptimality",
                  a->suboptimality,
                  "target f - f* <= S (f(x0) - f*) instead of target_loss")
      ->check(CLI::Range(1e-12, 0.999999))
      ->default_str("");  // not given: the config's target_loss
  cmd->add_option("--repetitions", a->repetitions, "simulated runs per scheme (default 10)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--measure", a->measure, "also measure each scheme over N seeded runs (0: none)")
      ->check(CLI::Range(0, 10000));
  cmd->add_flag("--fixed-step",
                a->fixed_step,
                "every scheme at the config's step and listed K, r and deadline (no tuning)");
  cmd->add_option("--threads",
                  a->threads,
                  "candidates estimated at once (default: the machine's cores); the output is the "
                  "same at any count")
      ->check(CLI::Range(1, thread_cap()));
  add_output_option(*cmd, "--write", a->write, "write the recommended config here", false);
  add_quiet_flag(*cmd, a->quiet);
  add_max_memory_option(*cmd);
  return {cmd, [a] { return command_advise(*a); }};
}

}  // namespace stragglersim::experiments

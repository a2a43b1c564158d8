// `stragglersim theory CONFIG.json [--json]`: what theory predicts for a config.

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "experiments/cli/commands.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_output.h"

namespace stragglersim::experiments {
namespace {

void print_value(const nlohmann::json& j, const char* key, const char* label) {
  if (j.contains(key) && !j[key].is_null()) {
    std::cout << fmt::format("{:<34} {:.6g}\n", label, j[key].get<double>());
  }
}

/// The bound (or why there is none), whether it is vacuous, and the exact least-squares curve.
void print_convergence(const nlohmann::json& p) {
  if (p.contains("bound") && p["bound"].is_array()) {
    const bool capped = p.contains("bound_iterations") &&
                        p["bound"].size() < p["bound_iterations"].get<std::size_t>() + 1;
    std::cout << fmt::format(
        "{:<34} {:.6g}{}\n",
        capped ? fmt::format("bound on E[f(x_t) - f*] at t={}", p["bound"].size() - 1)
               : std::string("bound on E[f(x_T) - f*] at T"),
        p["bound"].back().get<double>(),
        p["bound_vacuous"].get<bool>() ? "  (vacuous: the floor is >= f(x0) - f*)"
                                       : "  (not vacuous)");
  } else if (p.contains("bound_problem")) {
    std::cout << fmt::format(
        "{:<34} null: {}\n", "bound on E[f(x_T) - f*]", p["bound_problem"].get<std::string>());
  }
  if (p.contains("exact_curve") && p["exact_curve"].is_array()) {
    const auto& sd = p["exact_curve_sd"];
    const bool sd_at_end = sd.is_array() && sd.size() == p["exact_curve"].size();
    std::cout << fmt::format("{:<34} {:.6g}{}\n",
                             "exact E[f(x_T) - f*] at T",
                             p["exact_curve"].back().get<double>(),
                             sd_at_end
                                 ? fmt::format("  (sd across runs {:.6g})", sd.back().get<double>())
                                 : std::string());
    if (!sd_at_end && p.contains("exact_curve_sd_problem")) {
      std::cout << fmt::format(
          "{:<34} {}\n", "exact sd of f(x_T) - f*", p["exact_curve_sd_problem"].get<std::string>());
    }
  } else if (p.contains("exact_curve_problem")) {
    std::cout << fmt::format(
        "{:<34} null: {}\n", "exact E[f(x_T) - f*]", p["exact_curve_problem"].get<std::string>());
  }
}

/// `--measure N`: the mean gap of N simulated runs next to the exact curve and the bound, per t.
void measure(const RunPlan& plan, int repetitions, const std::string& csv, nlohmann::json& p) {
  if (plan.delay_only() || !p.contains("f_star")) {
    return;
  }
  const MeasuredGap m = measure_gap(plan, repetitions, plan.seed, p["f_star"].get<double>());
  p["measured_gap"] = m.mean;
  p["measured_gap_se"] = m.se;
  p["measured_gap_sd"] = m.sd;
  p["measured_repetitions"] = repetitions;
  if (csv.empty()) {
    return;
  }
  auto cell = [&](const char* key, std::size_t t) {
    return p.contains(key) && p[key].is_array() ? fmt::format("{}", p[key][t].get<double>())
                                                : std::string();
  };
  auto cell_or_empty = [&](const char* key, std::size_t t) {
    return p.contains(key) && p[key].is_array() && t < p[key].size() ? cell(key, t) : std::string();
  };
  std::string text =
      "iteration,measured_mean,measured_se,exact,bound,measured_sd,exact_sd,measured_sd_se\n";
  for (std::size_t t = 0; t < m.mean.size(); ++t) {
    text += fmt::format("{},{},{},{},{},{},{},{}\n",
                        t,
                        m.mean[t],
                        m.se[t],
                        cell("exact_curve", t),
                        cell("bound", t),
                        m.sd[t],
                        cell_or_empty("exact_curve_sd", t),
                        m.sd_se[t]);
  }
  write_file_atomically(csv, text);
}

void print_measured(const nlohmann::json& p) {
  if (p.contains("measured_gap")) {
    std::cout << fmt::format("{:<34} {:.6g} +- {:.3g} (s.e., {} runs)\n",
                             "measured mean f(x_T) - f* at T",
                             p["measured_gap"].back().get<double>(),
                             p["measured_gap_se"].back().get<double>(),
                             p["measured_repetitions"].get<int>());
  }
}

/// Exit status 3 and a message when a prediction is not finite (e.g. "shift": 1e308), as in `run`;
/// nullopt otherwise.
std::optional<int> non_finite_prediction(const nlohmann::json& p, const std::string& config) {
  // A non-finite prediction (e.g. "shift": 1e308) is numerical trouble, as in `run`.
  for (const auto& [key, value] : p.items()) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      std::cerr << fmt::format("error: {}: theory: non-finite {} = {} (delays or data too large)\n",
                               config,
                               key,
                               value.get<double>());
      return 3;
    }
  }
  if (!p.contains("iteration_time_problem") && !p["expected_iteration_time"].is_number()) {
    std::cerr << fmt::format(
        "error: {}: theory: the expected iteration time is not finite (delays too large)\n",
        config);
    return 3;
  }
  return std::nullopt;
}

/// The speedup table against n (ErasureHead configs).
void print_speedup_table(const nlohmann::json& p) {
  if (p.contains("speedup_vs_n")) {
    std::cout << fmt::format("\n{:>8} {:>6} {:>10} {:>10} {:>12} {:>10} {:>10}\n",
                             "n",
                             "r",
                             "uncoded",
                             "frc",
                             "erasurehead",
                             "vs uncoded",
                             "vs frc");
    for (const auto& row : p["speedup_vs_n"]) {
      std::cout << fmt::format("{:>8} {:>6} {:>10.4f} {:>10.4f} {:>12.4f} {:>10.4f} {:>10.4f}\n",
                               row["workers"].get<int>(),
                               row["r"].get<int>(),
                               row["uncoded"].get<double>(),
                               row["frc"].get<double>(),
                               row["erasurehead"].get<double>(),
                               row["speedup_vs_uncoded"].get<double>(),
                               row["speedup_vs_frc"].get<double>());
    }
  }
}

int command_theory(const std::string& config, bool json, int repetitions, const std::string& csv) {
  if (!csv.empty()) {
    check_output_file(csv, "--csv");
  }
  const RunPlan plan = plan_run_file(config);
  nlohmann::json p = theory_report(plan);
  if (const auto status = non_finite_prediction(p, config)) {
    return *status;
  }
  if (repetitions > 0) {
    measure(plan, repetitions, csv, p);
  }
  print_warnings(p);
  if (json) {
    std::cout << p.dump(2) << '\n';
    return 0;
  }
  std::cout << fmt::format("{}: {} workers, code {}, rule {}\n",
                           plan.name,
                           plan.workers,
                           plan.scheme.code->name(),
                           plan.scheme.rule->name());
  if (p.contains("iteration_time_problem")) {
    std::cout << p["iteration_time_problem"].get<std::string>() << '\n';
    print_convergence(p);
    print_measured(p);
    return 0;
  }
  std::cout << fmt::format("{:<34} {}\n", "method", p["method"].get<std::string>());
  if (p.contains("fallback_reason")) {
    std::cout << fmt::format("{:<34} {} draws: {}\n",
                             "simulated instead",
                             p["draws"].get<std::uint64_t>(),
                             p["fallback_reason"].get<std::string>());
  }
  print_value(p, "expected_iteration_time", "expected iteration time (s)");
  print_value(p, "iteration_time_se", "its standard error (s)");
  print_value(p, "iteration_time_sd", "iteration time sd (s)");
  print_value(p, "group_erasure_probability", "group-erasure probability q");
  print_value(p, "q2", "two groups erased q2");
  print_value(p, "smoothness", "smoothness beta");
  print_value(p, "pl_constant", "PL constant mu");
  print_value(p, "f_star", "f*");
  print_value(p, "zeta_star_squared", "zeta^2 at x* (sum_g |grad F_g|^2)");
  print_value(p, "group_smoothness_squared", "L^2 = sum_g beta_g^2");
  print_value(p, "initial_gap", "f(x0) - f*");
  print_value(p, "mean_coefficient", "mean coefficient c = E[alpha_g]");
  print_value(p, "minimiser_shift", "shift of the biased minimiser");
  print_value(p, "contraction", "contraction rho");
  print_value(p, "noise_floor", "noise floor of E[f - f*]");
  print_convergence(p);
  print_measured(p);
  print_value(p, "iterations_to_target", "iterations to target loss");
  print_value(p, "time_to_target", "time to target loss (s)");
  if (p.contains("policy_note")) {
    std::cout << p["policy_note"].get<std::string>() << '\n';
    print_value(p, "iteration_time_se", "iteration time standard error (s)");
  }
  if (p.contains("convergence_problem")) {
    std::cout << "convergence: " << p["convergence_problem"].get<std::string>() << '\n';
  }
  if (p.contains("speedup_at_config_n")) {
    const auto& row = p["speedup_at_config_n"];
    std::cout << fmt::format("{:<34} {:.4f} vs uncoded, {:.4f} vs exact FRC (n = {})\n",
                             "speedup at this config's n",
                             row["speedup_vs_uncoded"].get<double>(),
                             row["speedup_vs_frc"].get<double>(),
                             row["workers"].get<int>());
  }
  print_speedup_table(p);
  return 0;
}

}  // namespace

Subcommand add_theory_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto repetitions = std::make_shared<int>(0);
  auto csv = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("theory", "predictions for a config: iteration time, q, PL bound");
  cmd->add_option("config", *config, "config file (JSON)")->required();
  cmd->add_flag("--json", *json, "print JSON");
  add_max_memory_option(*cmd);
  cmd->add_option("--measure", *repetitions, "also simulate N runs (fixed data, delay seeds vary)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--csv",
                  *csv,
                  "with --measure: write iteration,measured_mean,measured_se,"
                  "exact,bound,measured_sd,exact_sd,measured_sd_se here");
  return {cmd, [config, json, repetitions, csv] {
            return command_theory(*config, *json, *repetitions, *csv);
          }};
}

}  // namespace stragglersim::experiments

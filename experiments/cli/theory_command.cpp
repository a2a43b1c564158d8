// `stragglersim theory CONFIG.json [--json]`: what theory predicts for a config.

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/measured_convergence.h"
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
        p["bound_vacuous"].get<bool>() ? "  (vacuous: never below f(x0) - f*)" : "  (not vacuous)");
    if (p.contains("bound_smallest") && !p["bound_smallest"].is_null()) {
      std::cout << fmt::format("{:<34} {:.6g} at t={}\n",
                               "smallest bound",
                               p["bound_smallest"]["value"].get<double>(),
                               p["bound_smallest"]["iteration"].get<int>());
    }
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

/// The local PL certificate: its radius, weight and constant, or why the global one is kept.
void print_certificate(const nlohmann::json& p) {
  if (!p.contains("local_pl")) {
    return;
  }
  const auto& c = p["local_pl"];
  if (c["certified"].get<bool>()) {
    std::cout << fmt::format(
        "{:<34} {:.6g} on |x - x*| <= {:.6g} (min weight {:.3g}, "
        "lambda_min(A^T A/m) {:.3g})\n",
        "local PL constant mu_R",
        c["pl_constant"].get<double>(),
        c["radius"].get<double>(),
        c["min_weight"].get<double>(),
        c["gram_min_eigenvalue"].get<double>());
  } else {
    std::cout << fmt::format("{:<34} not certified ({}); the global constant is used\n",
                             "local PL constant",
                             c["note"].get<std::string>());
  }
  print_value(p, "bound_pl_constant", "PL constant in the bound");
}

/// The measured rate and floor (fit_rate_and_floor) beside the theorem's contraction and floor.
void add_rate_and_floor(const MeasuredGap& m, nlohmann::json& p) {
  const auto fit = fit_rate_and_floor(m.runs);
  if (!fit) {
    p["measured_fit_problem"] = "the fit needs at least 2 runs and 4 iterations";
    return;
  }
  p["measured_floor"] = fit->floor;
  p["measured_floor_ci"] = {fit->floor_interval.low, fit->floor_interval.high};
  p["measured_floor_window"] = {fit->floor_first, m.runs.size() - 1};
  p["measured_rate"] = fit->rate ? nlohmann::json(*fit->rate) : nlohmann::json();
  p["measured_rate_ci"] = fit->rate
                              ? nlohmann::json({fit->rate_interval.low, fit->rate_interval.high})
                              : nlohmann::json();
  p["measured_rate_window"] = {1, fit->fit_last};
  // Least squares: the exact curve's floor and rate on the same windows, the truth to compare.
  if (p.contains("exact_curve") && p["exact_curve"].is_array()) {
    const auto curve = p["exact_curve"].get<std::vector<double>>();
    const CurveRateFloor exact = curve_rate_and_floor(curve, fit->floor_first, fit->fit_last);
    p["exact_curve_floor"] = exact.floor;
    p["exact_curve_rate"] = exact.rate ? nlohmann::json(*exact.rate) : nlohmann::json();
  }
}

/// `--measure N`: the mean gap of N simulated runs next to the exact curve and the bound, per t.
void measure(const RunPlan& plan, int repetitions, OutputFile* csv, nlohmann::json& p) {
  if (plan.delay_only() || !p.contains("f_star")) {
    return;
  }
  const MeasuredGap m = measure_gap(plan, repetitions, plan.seed, p["f_star"].get<double>());
  p["measured_gap"] = m.mean;
  p["measured_gap_se"] = m.se;
  p["measured_gap_sd"] = m.sd;
  p["measured_gap_sd_se"] = m.sd_se;
  p["measured_repetitions"] = repetitions;
  add_rate_and_floor(m, p);
  if (csv == nullptr) {
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
      "iteration,measured_mean,measured_se,exact,bound,measured_sd,exact_sd,measured_sd_se,"
      "bound_pl_routes\n";
  // Without the convex route the bound is the PL routes'; empty where no PL route applies.
  auto pl_cell = [&](std::size_t t) {
    if (!p.contains("bound_pl_routes")) {
      return cell("bound", t);
    }
    return p["bound_pl_routes"][t].is_null() ? std::string() : cell("bound_pl_routes", t);
  };
  for (std::size_t t = 0; t < m.mean.size(); ++t) {
    text += fmt::format("{},{},{},{},{},{},{},{},{}\n",
                        t,
                        m.mean[t],
                        m.se[t],
                        cell("exact_curve", t),
                        cell("bound", t),
                        m.sd[t],
                        cell_or_empty("exact_curve_sd", t),
                        m.sd_se[t],
                        pl_cell(t));
  }
  csv->commit(text);
}

void print_measured(const nlohmann::json& p) {
  if (!p.contains("measured_gap")) {
    return;
  }
  std::cout << fmt::format("{:<34} {:.6g} +- {:.3g} (s.e., {} runs)\n",
                           "measured mean f(x_T) - f* at T",
                           p["measured_gap"].back().get<double>(),
                           p["measured_gap_se"].back().get<double>(),
                           p["measured_repetitions"].get<int>());
  // One fitted value with its interval and window, beside the theorem's value for it.
  auto fitted =
      [&](const char* label, const char* key, const std::string& window, const char* theorem_key) {
        if (!p.contains(key) || p[key].is_null()) {
          return;
        }
        const std::string ci = std::string(key) + "_ci";
        std::cout << fmt::format("{:<34} {:.6g} [{:.6g}, {:.6g}] ({}; theorem {})\n",
                                 label,
                                 p[key].get<double>(),
                                 p[ci][0].get<double>(),
                                 p[ci][1].get<double>(),
                                 window,
                                 p.contains(theorem_key) && !p[theorem_key].is_null()
                                     ? fmt::format("{:.6g}", p[theorem_key].get<double>())
                                     : std::string("none"));
      };
  if (p.contains("measured_floor")) {
    fitted("measured floor (95% CI)",
           "measured_floor",
           fmt::format("t >= {}", p["measured_floor_window"][0].get<int>()),
           "noise_floor");
    fitted("measured rate per step (95% CI)",
           "measured_rate",
           fmt::format("t = 1..{}", p["measured_rate_window"][1].get<int>()),
           "contraction");
  }
  if (p.contains("exact_curve_floor")) {
    std::cout << fmt::format("{:<34} floor {:.6g}, rate {} (same windows)\n",
                             "exact curve's floor and rate",
                             p["exact_curve_floor"].get<double>(),
                             p["exact_curve_rate"].is_null()
                                 ? std::string("none")
                                 : fmt::format("{:.6g}", p["exact_curve_rate"].get<double>()));
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
  // A collective's bounds leave E[T] null (its `collective` block holds them).
  const bool bounds = p.contains("collective") && p["collective"]["form"] == "bounds";
  if (!p.contains("iteration_time_problem") && !p.contains("time_per_update") && !bounds &&
      !p["expected_iteration_time"].is_number()) {
    std::cerr << fmt::format(
        "error: {}: theory: the expected iteration time is not finite (delays too large)\n",
        config);
    return 3;
  }
  return std::nullopt;
}

/// ErasureHead's speedup when it and uncoded both reduce by the config's ring.
void print_ring_speedup_table(const nlohmann::json& p) {
  if (!p.contains("ring_speedup_vs_n")) {
    return;
  }
  if (p.contains("ring_speedup_at_config_n")) {
    std::cout << fmt::format("{:<34} {:.4f} vs uncoded, both over the ring (n = {})\n",
                             "speedup at this config's n",
                             p["ring_speedup_at_config_n"]["speedup_ring"].get<double>(),
                             p["ring_speedup_at_config_n"]["workers"].get<int>());
  }
  std::cout << fmt::format("\n{:>8} {:>6} {:>12} {:>10} {:>12} {:>10} {:>10}\n",
                           "n",
                           "r",
                           "ring cost C",
                           "uncoded",
                           "erasurehead",
                           "vs uncoded",
                           "with ring");
  for (const auto& row : p["ring_speedup_vs_n"]) {
    std::cout << fmt::format("{:>8} {:>6} {:>12.6g} {:>10.4f} {:>12.4f} {:>10.4f} {:>10.4f}\n",
                             row["workers"].get<int>(),
                             row["r"].get<int>(),
                             row["ring_cost"].get<double>(),
                             row["uncoded"].get<double>(),
                             row["erasurehead"].get<double>(),
                             row["speedup_parameter_server"].get<double>(),
                             row["speedup_ring"].get<double>());
  }
}

/// The speedup table against n (ErasureHead configs; over the ring with a ring all-reduce).
void print_speedup_table(const nlohmann::json& p) {
  print_ring_speedup_table(p);
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

/// A collective's iteration time: the bounds when the form is not exact, the rule's stop t* and
/// the range of the schedule's offsets.
void print_collective(const nlohmann::json& p) {
  if (!p.contains("collective")) {
    return;
  }
  const auto& c = p["collective"];
  if (c["form"] == "bounds") {
    std::cout << fmt::format("{:<34} between {:.6g} and {:.6g}\n",
                             "expected iteration time (s)",
                             c["lower"].get<double>(),
                             c["upper"].get<double>());
  }
  if (c["stop_time"].is_number()) {
    std::cout << fmt::format("{:<34} {:.6g} ({})\n",
                             "rule's stop E[t*] (s)",
                             c["stop_time"].get<double>(),
                             c["stop_method"].get<std::string>());
  }
  std::cout << fmt::format("{:<34} {:.6g} to {:.6g}\n",
                           "all-reduce offsets w_j (s)",
                           c["offset_min"].get<double>(),
                           c["offset_max"].get<double>());
}

/// A time-optimal method's seconds per update: exact, or its bounds, with the formula and the
/// papers' bound where there is one.
void print_time_per_update(const nlohmann::json& p) {
  const auto& t = p["time_per_update"];
  std::cout << fmt::format("{:<34} {}\n", "method", p["method"].get<std::string>());
  const double lower = t["lower"].get<double>();
  if (t["exact"].get<bool>()) {
    std::cout << fmt::format("{:<34} {:.6g} (exact)\n", "seconds per update", lower);
  } else if (t["upper"].is_null()) {
    std::cout << fmt::format("{:<34} at least {:.6g}\n", "seconds per update", lower);
  } else {
    std::cout << fmt::format("{:<34} between {:.6g} and {:.6g}\n",
                             "seconds per update",
                             lower,
                             t["upper"].get<double>());
  }
  std::cout << fmt::format("{:<34} {}\n", "formula", t["formula"].get<std::string>());
  if (!t["paper_bound"].is_null()) {
    std::cout << fmt::format(
        "{:<34} {:.6g}\n", "papers' bound per update", t["paper_bound"].get<double>());
  }
}

// The theory report as text: the scheme, the method, every predicted value and the tables.
void print_theory_text(const RunPlan& plan, nlohmann::json& p) {
  std::cout << fmt::format("{}: {} workers, code {}, rule {}\n",
                           plan.name,
                           plan.workers,
                           plan.scheme.code->name(),
                           plan.scheme.rule->name());
  if (p.contains("iteration_time_problem") || p.contains("time_per_update")) {
    if (p.contains("time_per_update")) {
      print_time_per_update(p);
    } else {
      std::cout << p["iteration_time_problem"].get<std::string>() << '\n';
    }
    print_convergence(p);
    print_measured(p);
    return;
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
  print_collective(p);
  print_value(p, "group_erasure_probability", "group-erasure probability q");
  print_value(p, "q2", "two groups erased q2");
  print_value(p, "smoothness", "smoothness beta");
  print_value(p, "pl_constant", "PL constant mu");
  print_value(p, "f_star", "f*");
  print_certificate(p);
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
}

int command_theory(
    const std::string& config, bool json, int repetitions, const std::string& csv, bool quiet) {
  std::optional<OutputFile> csv_file;  // reserved before the work
  if (!csv.empty() && repetitions == 0) {
    throw ConfigError(
        "<command line>: --csv without --measure; got no --measure; expected --measure N with N "
        ">= 1 (the CSV holds the measured runs)");
  }
  if (!csv.empty()) {
    csv_file.emplace(csv, "--csv");
  }
  const RunPlan plan = plan_run_file(config);
  nlohmann::json p = theory_report(plan);
  if (const auto status = non_finite_prediction(p, config)) {
    return *status;
  }
  if (repetitions > 0) {
    measure(plan, repetitions, csv_file ? &*csv_file : nullptr, p);
  }
  if (!quiet) {
    print_warnings(p);
  }
  if (json) {
    std::cout << p.dump(2) << '\n';
    return 0;
  }
  print_theory_text(plan, p);
  return 0;
}

}  // namespace

Subcommand add_theory_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto repetitions = std::make_shared<int>(0);
  auto csv = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("theory", "predictions for a config: iteration time, q, PL bound");
  cmd->add_option("config", *config, "config file (JSON)")->required();
  cmd->add_flag("--json", *json, "print JSON");
  add_max_memory_option(*cmd);
  cmd->add_option(
         "--measure", *repetitions, "also simulate N runs (fixed data, delay seeds vary; 0: none)")
      ->check(CLI::Range(0, 100000));
  add_output_option(*cmd,
                    "--csv",
                    *csv,
                    "with --measure: write iteration,measured_mean,measured_se,"
                    "exact,bound,measured_sd,exact_sd,measured_sd_se here",
                    false);
  add_quiet_flag(*cmd, *quiet);
  return {cmd, [config, json, repetitions, csv, quiet] {
            return command_theory(*config, *json, *repetitions, *csv, *quiet);
          }};
}

}  // namespace stragglersim::experiments

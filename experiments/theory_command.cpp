// `stragglersim theory CONFIG.json [--json]`: what theory predicts for a config.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "experiments/commands.h"
#include "experiments/config/run_plan.h"
#include "experiments/entry_points.h"

namespace stragglersim::experiments {
namespace {

void print_value(const nlohmann::json& j, const char* key, const char* label) {
  if (j.contains(key) && !j[key].is_null()) {
    std::cout << fmt::format("{:<34} {:.6g}\n", label, j[key].get<double>());
  }
}

int command_theory(const std::string& config, bool json) {
  const RunPlan plan = plan_run_file(config);
  const nlohmann::json p = theory_report(plan);
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
    return 0;
  }
  std::cout << fmt::format("{:<34} {}\n", "method", p["method"].get<std::string>());
  print_value(p, "expected_iteration_time", "expected iteration time (s)");
  print_value(p, "iteration_time_sd", "iteration time sd (s)");
  print_value(p, "group_erasure_probability", "group-erasure probability q");
  print_value(p, "q2", "two groups erased q2");
  print_value(p, "smoothness", "smoothness beta");
  print_value(p, "pl_constant", "PL constant mu");
  print_value(p, "f_star", "f*");
  print_value(p, "zeta_squared", "zeta^2");
  print_value(p, "contraction", "contraction 1 - mu*gamma*(1-q)");
  print_value(p, "noise_floor", "noise floor of E[f - f*]");
  if (p.contains("bound")) {
    std::cout << fmt::format(
        "{:<34} {:.6g}\n", "bound on E[f(x_T) - f*] at T", p["bound"].back().get<double>());
  }
  print_value(p, "iterations_to_target", "iterations to target loss");
  print_value(p, "time_to_target", "time to target loss (s)");
  if (p.contains("convergence_problem")) {
    std::cout << "convergence: " << p["convergence_problem"].get<std::string>() << '\n';
  }
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
  return 0;
}

}  // namespace

Subcommand add_theory_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("theory", "predictions for a config: iteration time, q, PL bound");
  cmd->add_option("config", *config, "config file (JSON)")->required();
  cmd->add_flag("--json", *json, "print JSON");
  return {cmd, [config, json] { return command_theory(*config, *json); }};
}

}  // namespace stragglersim::experiments

// `stragglersim theory CONFIG.json [--json]`: what theory predicts for a config.

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "experiments/commands.h"
#include "experiments/config/predictions.h"
#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {
namespace {

void print_value(const nlohmann::json& j, const char* key, const char* label) {
  if (j.contains(key) && !j[key].is_null()) {
    std::cout << fmt::format("{:<34} {:.6g}\n", label, j[key].get<double>());
  }
}

int command_theory(const std::string& config, bool json) {
  const RunPlan plan = plan_run_file(config);
  nlohmann::json p = predictions(plan);
  p["name"] = plan.name;
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
    const auto t = p["bound_iterations"].get<std::uint64_t>();
    std::cout << fmt::format("{:<34} {:.6g}\n",
                             t == plan.iterations
                                 ? std::string("bound on E[f(x_T) - f*] at T")
                                 : fmt::format("bound on E[f(x_t) - f*] at t={}", t),
                             p["bound"].back().get<double>());
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
  add_max_memory_option(*cmd);
  return {cmd, [config, json] { return command_theory(*config, *json); }};
}

}  // namespace stragglersim::experiments

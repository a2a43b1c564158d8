#include "experiments/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "experiments/build_info.h"
#include "experiments/config_error.h"
#include "experiments/run_output.h"
#include "experiments/run_plan.h"

namespace stragglersim::experiments {

namespace {

int command_run(const std::string& config, const std::string& out_dir) {
  const RunPlan plan = plan_run_file(config);
  const RunOutcome outcome = execute_run(plan, out_dir);
  if (outcome.status != "ok") {
    std::cerr << fmt::format("error: {}: {}\n", config, outcome.error);
    std::cerr << fmt::format("the trace up to the last good iteration is in {}\n", out_dir);
    return 3;
  }
  const auto& s = outcome.summary;
  if (plan.delay_only()) {
    std::cout << fmt::format(
        "{}: {} iterations, mean iteration time {:.6g} ± {:.2g} (s.e.), total {:.6g} s\n",
        plan.name,
        s["iterations"].get<std::uint64_t>(),
        s["mean_iteration_time"].get<double>(),
        s["iteration_time_standard_error"].get<double>(),
        s["total_time"].get<double>());
  } else {
    std::cout << fmt::format("{}: {} iterations in {:.6g} simulated s, final loss {:.6g}",
                             plan.name,
                             s["iterations"].get<std::uint64_t>(),
                             s["total_time"].get<double>(),
                             s["final_loss"].get<double>());
    if (s.contains("final_test_metric")) {
      std::cout << fmt::format(", test {} {:.4g}",
                               s["test_metric"].get<std::string>(),
                               s["final_test_metric"].get<double>());
    }
    std::cout << '\n';
  }
  std::cout << fmt::format("wrote {}/trace.csv and {}/summary.json\n", out_dir, out_dir);
  return 0;
}

}  // namespace

int run_cli(const std::vector<std::string>& args) {
  CLI::App app{"stragglersim: stragglers and gradient coding in synchronous distributed GD"};
  app.set_version_flag("--version", fmt::format("stragglersim {} ({})", kVersion, kGitRevision));
  app.require_subcommand(1);

  std::string config;
  std::string out_dir;
  auto* run = app.add_subcommand("run", "run one experiment from a JSON config");
  run->add_option("config", config, "config file (JSON)")->required();
  run->add_option("--out", out_dir, "output folder for trace.csv and summary.json")->required();

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (run->parsed()) {
      return command_run(config, out_dir);
    }
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace stragglersim::experiments

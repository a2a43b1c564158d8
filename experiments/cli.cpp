#include "experiments/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "experiments/build_info.h"
#include "experiments/code_report.h"
#include "experiments/config_error.h"
#include "experiments/factories.h"
#include "experiments/json_reader.h"
#include "experiments/run_output.h"
#include "experiments/run_plan.h"
#include "sim/random_stream.h"

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

struct CodesArgs {
  int workers = 0;
  int partitions = 0;
  std::string code;
  std::uint64_t seed = 1;
  int stragglers = -1;
  int wait_for = 0;
  int samples = 200;
  bool json = false;
  std::string csv;
};

/// `stragglersim codes`: builds the code through the same factory table as a config (so the
/// same validation and messages apply, with "<command line>" as the file) and reports on it.
int command_codes(const CodesArgs& args) {
  nlohmann::json code_json;
  try {
    code_json = nlohmann::json::parse(args.code);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(fmt::format("<command line>:/code: invalid JSON: {}", e.what()));
  }
  const std::string file = "<command line>";
  JsonReader reader(code_json, file, "/code");
  const std::string kind = reader.choice("kind", "code", names_of(code_factories()), std::nullopt);
  const ClusterShape shape{
      file,
      args.workers,
      args.partitions > 0 ? args.partitions : args.workers,
      args.partitions > 0,
      sim::derive_seed(args.seed, static_cast<std::uint64_t>(sim::Stream::kCode))};
  std::shared_ptr<const codes::GradientCode> code;
  for (const auto& row : code_factories()) {
    if (row.name == kind) {
      code = row.make(reader, shape);
    }
  }
  if (args.stragglers > args.workers || args.wait_for > args.workers) {
    throw ConfigError(
        fmt::format("<command line>: --stragglers and --wait-for must be at most "
                    "workers = {}; got {} and {}",
                    args.workers,
                    args.stragglers,
                    args.wait_for));
  }
  CodeReportOptions options;
  options.stragglers = args.stragglers;
  options.wait_for = args.wait_for;
  options.samples = args.samples;
  options.seed = args.seed;
  options.include_assignment = !args.csv.empty();
  const CodeReport report = analyse_code(*code, options);
  if (!args.csv.empty()) {
    write_file_atomically(args.csv, report.assignment_csv);
  }
  if (args.json) {
    nlohmann::json j = to_json(report);
    j.erase("assignment_csv");
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << format_table(report);
  }
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

  CodesArgs codes_args;
  auto* codes_cmd = app.add_subcommand(
      "codes", "inspect a gradient code: loads, B as CSV, decoding error over straggler patterns");
  codes_cmd->add_option("--workers", codes_args.workers, "n")
      ->required()
      ->check(CLI::Range(1, 100000));
  codes_cmd->add_option("--partitions", codes_args.partitions, "k (default: the code's own)");
  codes_cmd
      ->add_option("--code",
                   codes_args.code,
                   R"(the code object of a config, e.g. '{"kind": "crc", "s": 2}')")
      ->required();
  codes_cmd->add_option("--seed", codes_args.seed, "seed (the code stream is derived as in a run)");
  codes_cmd->add_option(
      "--stragglers", codes_args.stragglers, "stragglers per pattern (default: the code's s)");
  codes_cmd->add_option(
      "--wait-for", codes_args.wait_for, "workers heard per pattern (overrides --stragglers)");
  codes_cmd->add_option("--samples", codes_args.samples, "random patterns when not exhaustive")
      ->check(CLI::Range(1, 10000000));
  codes_cmd->add_flag("--json", codes_args.json, "print JSON instead of a table");
  codes_cmd->add_option("--csv", codes_args.csv, "write B as CSV to this file");

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
    if (codes_cmd->parsed()) {
      return command_codes(codes_args);
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

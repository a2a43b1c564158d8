// `stragglersim codes`: inspect a gradient code.

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>

#include "experiments/cli/commands.h"
#include "experiments/code_report.h"
#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/entry_points.h"
#include "experiments/run_output.h"

namespace stragglersim::experiments {
namespace {

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
  std::optional<OutputFile> csv;  // reserved before the work
  if (!args.csv.empty()) {
    csv.emplace(args.csv, "--csv");
  }
  CodeRequest request;
  request.code = parse_json(args.code, "<command line>", "/code");
  request.workers = args.workers;
  request.partitions = args.partitions;
  request.seed = args.seed;
  request.stragglers = args.stragglers;
  request.wait_for = args.wait_for;
  request.samples = args.samples;
  request.include_assignment = !args.csv.empty();
  const CodeReport report = inspect_code(request);
  if (csv) {
    csv->commit(report.assignment_csv);
  }
  if (args.json) {
    std::cout << code_report_json(report).dump(2) << '\n';
  } else {
    std::cout << format_table(report);
  }
  return 0;
}

}  // namespace

Subcommand add_codes_command(CLI::App& app) {
  auto args = std::make_shared<CodesArgs>();
  auto* cmd = app.add_subcommand(
      "codes", "inspect a gradient code: loads, B as CSV, decoding error over straggler patterns");
  cmd->add_option("--workers", args->workers, "n")->required()->check(CLI::Range(1, 100000));
  cmd->add_option("--partitions", args->partitions, "k (default: the code's own)")
      ->check(CLI::Range(0, 10000000));
  cmd->add_option(
         "--code", args->code, R"(the code object of a config, e.g. '{"kind": "crc", "s": 2}')")
      ->required();
  cmd->add_option("--seed", args->seed, "seed (the code stream is derived as in a run)");
  cmd->add_option(
         "--stragglers", args->stragglers, "stragglers per pattern (default: the code's s)")
      ->default_str("");
  cmd->add_option(
         "--wait-for", args->wait_for, "workers heard per pattern (overrides --stragglers)")
      ->default_str("");
  cmd->add_option("--samples", args->samples, "random patterns when not exhaustive")
      ->check(CLI::Range(1, 10000000));
  cmd->add_flag("--json", args->json, "print JSON instead of a table");
  add_output_option(*cmd, "--csv", args->csv, "write B as CSV to this file", false);
  add_max_memory_option(*cmd);
  return {cmd, [args] { return command_codes(*args); }};
}

}  // namespace stragglersim::experiments

// `stragglersim codes`: inspect a gradient code.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "experiments/code_report.h"
#include "experiments/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "experiments/run_output.h"
#include "models/base/random_stream.h"

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
  const std::string file = "<command line>";
  const nlohmann::json code_json = parse_json(args.code, file, "/code");
  JsonReader reader(code_json, file, "/code");
  const std::string kind = reader.choice("kind", "code", names_of(code_factories()), std::nullopt);
  const ClusterShape shape{file,
                           args.workers,
                           args.partitions > 0 ? args.partitions : args.workers,
                           args.partitions > 0,
                           derive_seed(args.seed, static_cast<std::uint64_t>(Stream::kCode))};
  // Refuse before building: a dense code for 10⁵ workers needs hundreds of GB.
  const double d =
      code_json.contains("d") && code_json["d"].is_number() ? code_json["d"].get<double>() : 0.0;
  const double bytes = code_memory_estimate(kind, shape.workers, shape.partitions, d);
  if (!(bytes <= static_cast<double>(memory_limit()))) {
    throw ConfigError(fmt::format(
        "--workers: code '{}' would need about {} of memory; got {}; expected at most {} "
        "(--max-memory)",
        kind,
        format_bytes(bytes),
        args.workers,
        format_bytes(static_cast<double>(memory_limit()))));
  }
  if (!args.csv.empty() &&
      static_cast<double>(shape.workers) * static_cast<double>(shape.partitions) > 0x1p24) {
    throw ConfigError(fmt::format(
        "--csv: B is too large to write as CSV; got {} x {}; expected workers x partitions at "
        "most 16777216",
        shape.workers,
        shape.partitions));
  }
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
      "--stragglers", args->stragglers, "stragglers per pattern (default: the code's s)");
  cmd->add_option(
      "--wait-for", args->wait_for, "workers heard per pattern (overrides --stragglers)");
  cmd->add_option("--samples", args->samples, "random patterns when not exhaustive")
      ->check(CLI::Range(1, 10000000));
  cmd->add_flag("--json", args->json, "print JSON instead of a table");
  cmd->add_option("--csv", args->csv, "write B as CSV to this file");
  add_max_memory_option(*cmd);
  return {cmd, [args] { return command_codes(*args); }};
}

}  // namespace stragglersim::experiments

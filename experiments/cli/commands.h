#pragma once
// The subcommands of the command line, one module each. `add_<name>_command` registers the
// subcommand's options on `app` and returns the action to run once the line is parsed. The
// action returns the exit status and may throw ConfigError (exit 2, printed by run_cli).

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace stragglersim::experiments {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> action;
};

/// Adds `--max-memory SIZE` (e.g. 2G) to a subcommand: sets the process-wide memory limit
/// (experiments/config/memory_budget.h) when given.
void add_max_memory_option(CLI::App& command);

/// Adds `--quiet` to a subcommand: no progress line, no warnings or notes on stderr, and no
/// summary lines of run and sweep on stdout; errors are still printed (docs/cli.md).
void add_quiet_flag(CLI::App& command, bool& quiet);
/// Adds an output path option (a file when `folder` is false) whose value may not be empty:
/// "--out: empty path; got ""; expected a file to write" (exit 2), as the output writer says.
CLI::Option* add_output_option(CLI::App& command,
                               const std::string& name,
                               std::string& path,
                               const std::string& description,
                               bool folder);

/// `stragglersim run CONFIG.json --out DIR`.
Subcommand add_run_command(CLI::App& app);
/// `stragglersim codes --workers N --code JSON ...`.
Subcommand add_codes_command(CLI::App& app);
/// `stragglersim theory CONFIG.json [--json]`.
Subcommand add_theory_command(CLI::App& app);
/// `stragglersim check [--quick] [--out DIR]`.
Subcommand add_check_command(CLI::App& app);
/// `stragglersim sweep SWEEP.json --out DIR --jobs N`.
Subcommand add_sweep_command(CLI::App& app);
/// `stragglersim fit TIMES.csv [--json] [--per-worker] [--out FILE]`.
Subcommand add_fit_command(CLI::App& app);
/// `stragglersim trace import FILE --format csv|chrome ... --out TIMES.csv`.
Subcommand add_trace_command(CLI::App& app);
/// `stragglersim advise CONFIG.json [--json] [--fit TIMES.csv] ...`.
Subcommand add_advise_command(CLI::App& app);
/// `stragglersim validate CONFIG.json --trace TIMES.csv [--holdout H] [--json]`.
Subcommand add_validate_command(CLI::App& app);
/// `stragglersim list [codes|delays|rules|losses|backends|optimizers|generators] [--json]` and
/// `stragglersim list --schema` (the config's JSON Schema).
Subcommand add_list_command(CLI::App& app);
/// `stragglersim init [--data FILE] [--workers N] [-o FILE]`.
Subcommand add_init_command(CLI::App& app);
/// `stragglersim whatif TIMELINE [--meta META.yaml] [--json] [--timeline-out FILE]`.
Subcommand add_whatif_command(CLI::App& app);

}  // namespace stragglersim::experiments

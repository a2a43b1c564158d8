#pragma once
// The command line (docs/model.md §7): subcommands run, theory, check, codes, sweep.
// Exit status: 0 success, 2 bad input (ConfigError: "error: <file>:<pointer>: ..."),
// 3 a run that stopped on numerical trouble (its trace ends at the last good row).

#include <string>
#include <vector>

namespace stragglersim::experiments {

/// Runs the command line on `args` (args[0] is the program name) and returns the exit status.
int run_cli(const std::vector<std::string>& args);

}  // namespace stragglersim::experiments

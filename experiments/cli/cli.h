#pragma once
// The command line (docs/model.md §7, docs/cli.md): run, sweep, theory, codes, check, fit, advise,
// list and init.
// Exit status: 0 success, 2 bad input (ConfigError: "error: <file>:<pointer>: ..."),
// 3 a run that stopped on numerical trouble (its trace ends at the last good row).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stragglersim::experiments {

/// "unknown command 'runn'; did you mean 'run'? valid commands are: ..." when `word` (the first
/// argument) is neither an option nor one of `commands`; nullopt otherwise. The suggestion is the
/// nearest command (nearest_name of experiments/config/json_reader.h).
std::optional<std::string> unknown_command_message(const std::string& word,
                                                   std::vector<std::string> commands);

/// Runs the command line on `args` (args[0] is the program name) and returns the exit status.
int run_cli(const std::vector<std::string>& args);

}  // namespace stragglersim::experiments

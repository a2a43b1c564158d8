#include "experiments/cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string_view>

#include "experiments/build_info.h"
#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "sim/scheme.h"

namespace stragglersim::experiments {
namespace {

constexpr const char* kHelpFooter =
    "Every config key, output column and summary field, with its unit and default: docs/model.md "
    "(sweeps: docs/sweeps.md). Exit status: 0 ok, 2 bad input (nothing written), 3 numerical "
    "trouble (the trace kept up to the last good row), 130/143 interrupted, 1 an internal error.";

}  // namespace

void add_max_memory_option(CLI::App& command) {
  command
      .add_option_function<std::string>(
          "--max-memory",
          [](const std::string& text) { set_memory_limit(parse_memory_size(text)); },
          "refuse runs estimated to need more memory (K/M/G/T suffixes; default: half the "
          "physical memory)")
      ->type_name("SIZE");
}

void add_quiet_flag(CLI::App& command, bool& quiet) {
  command.add_flag("-q,--quiet",
                   quiet,
                   "print only errors (and the result of theory, advise and fit): no progress "
                   "line, no warnings or notes");
}

std::optional<std::string> unknown_command_message(const std::string& word,
                                                   std::vector<std::string> commands) {
  if (word.empty() || word.front() == '-' ||
      std::find(commands.begin(), commands.end(), word) != commands.end()) {
    return std::nullopt;
  }
  std::sort(commands.begin(), commands.end());
  return fmt::format("unknown command '{}'{}valid commands are: {}",
                     word,
                     did_you_mean(word, commands),
                     fmt::join(commands, ", "));
}

int run_cli(const std::vector<std::string>& args) {
  CLI::App app{"stragglersim: stragglers and gradient coding in synchronous distributed GD"};
  app.footer(kHelpFooter);
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", fmt::format("stragglersim {} ({})", kVersion, kGitRevision));
  app.require_subcommand(1);

  // The subcommand table: one row per module (experiments/<name>_command.cpp).
  const std::vector<Subcommand> commands = {
      add_run_command(app),
      add_codes_command(app),
      add_theory_command(app),
      add_check_command(app),
      add_sweep_command(app),
      add_list_command(app),
      add_fit_command(app),
      add_trace_command(app),
      add_advise_command(app),
      add_init_command(app),
      add_validate_command(app),
  };

  for (const auto& command : commands) {
    command.app->footer(kHelpFooter);
    // A required option has no default to show (its member's initial value is not one).
    for (CLI::Option* option : command.app->get_options()) {
      if (option->get_required()) {
        option->default_str("");
      }
    }
  }
  if (args.size() > 1) {
    std::vector<std::string> names;
    names.reserve(commands.size());
    for (const auto& command : commands) {
      names.push_back(command.app->get_name());
    }
    if (auto message = unknown_command_message(args[1], names)) {
      std::cerr << "error: " << *message << '\n';
      return 2;
    }
  }

  set_memory_limit(default_memory_limit());
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
  } catch (const ConfigError& e) {  // an option's own check (--max-memory)
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }
  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        return command.action();
      }
    }
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  } catch (const sim::NumericalError& e) {  // numerical trouble outside a run (advise's f*)
    std::cerr << "error: " << e.what() << '\n';
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace stragglersim::experiments

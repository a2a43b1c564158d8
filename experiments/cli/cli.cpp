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
#include "models/base/error.h"

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

CLI::Option* add_output_option(CLI::App& command,
                               const std::string& name,
                               std::string& path,
                               const std::string& description,
                               bool folder) {
  const std::string expected = folder ? "a folder to write into" : "a file to write";
  return command.add_option(name, path, description)
      ->check(CLI::Validator(
          [expected](const std::string& value) {
            return value.empty() ? fmt::format("empty path; got \"\"; expected {}", expected)
                                 : std::string();
          },
          folder ? "DIR" : "FILE"));
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

namespace {

// Every command takes -q/--quiet (docs/cli.md "Options every command shares"), so a script may
// pass it to each: a command whose module does not add it prints no notes to silence.
void accept_quiet(CLI::App& command) {
  if (command.get_option_no_throw("--quiet") == nullptr) {
    command.add_flag(std::string("-q,--quiet"))
        ->description("accepted by every command; this one prints no notes");
  }
}

// The subcommand table: one row per module (experiments/<name>_command.cpp), each with the
// shared footer and no default shown for a required option.
std::vector<Subcommand> add_commands(CLI::App& app) {
  std::vector<Subcommand> commands = {
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
      add_whatif_command(app),
  };
  for (const auto& command : commands) {
    command.app->footer(kHelpFooter);
    accept_quiet(*command.app);
    for (CLI::App* sub : command.app->get_subcommands([](CLI::App* /*every*/) { return true; })) {
      accept_quiet(*sub);
    }
    // A required option has no default to show (its member's initial value is not one).
    for (CLI::Option* option : command.app->get_options()) {
      if (option->get_required()) {
        option->default_str("");
      }
    }
  }
  return commands;
}

// True, after saying so on stderr, when `name` is no subcommand (with the nearest names).
bool refuse_unknown_command(const std::string& name, const std::vector<Subcommand>& commands) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const auto& command : commands) {
    names.push_back(command.app->get_name());
  }
  if (auto message = unknown_command_message(name, names)) {
    std::cerr << "error: " << *message << '\n';
    return true;
  }
  return false;
}

}  // namespace

int run_cli(const std::vector<std::string>& args) {
  CLI::App app{"stragglersim: stragglers and gradient coding in synchronous distributed GD"};
  app.footer(kHelpFooter);
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", fmt::format("stragglersim {} ({})", kVersion, kGitRevision));
  app.require_subcommand(1);

  const std::vector<Subcommand> commands = add_commands(app);
  if (args.size() > 1 && refuse_unknown_command(args[1], commands)) {
    return 2;
  }

  set_memory_limit(default_memory_limit());
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  // Command-line mistakes read like every other input error: "error: <option>: <problem>".
  app.failure_message([](const CLI::App* /*app*/, const CLI::Error& e) {
    return fmt::format("error: {}\nRun with --help for more information.\n", e.what());
  });
  // The one mapping from exceptions to exit statuses (exit_status_of): an Error carries
  // its own (2 bad input, 3 numerical trouble, 128 + signal interrupted); anything else is a bug.
  try {
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      const int code = app.exit(e);  // prints help, the version or the failure message
      return code == 0 ? 0 : kExitBadInput;
    }
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        return command.action();
      }
    }
  } catch (const std::exception& e) {
    const int status = exit_status_of(e);
    std::cerr << (status == 1 ? "error: internal error: " : "error: ") << e.what() << '\n';
    return status;
  }
  return 0;
}

}  // namespace stragglersim::experiments

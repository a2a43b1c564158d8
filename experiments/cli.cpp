#include "experiments/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "experiments/build_info.h"
#include "experiments/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/memory_budget.h"

namespace stragglersim::experiments {

void add_max_memory_option(CLI::App& command) {
  command
      .add_option_function<std::string>(
          "--max-memory",
          [](const std::string& text) { set_memory_limit(parse_memory_size(text)); },
          "refuse runs estimated to need more memory (K/M/G/T suffixes; default: half the "
          "physical memory)")
      ->type_name("SIZE");
}

int run_cli(const std::vector<std::string>& args) {
  CLI::App app{"stragglersim: stragglers and gradient coding in synchronous distributed GD"};
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
      add_advise_command(app),
  };

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
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace stragglersim::experiments

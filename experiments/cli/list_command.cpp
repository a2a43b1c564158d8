// `stragglersim list [CATEGORY] [--json]`: the plug-ins a config can name, each with its
// one-line description and the keys it accepts (with --json also what it requires of the rest of
// the run), printed from the factory rows themselves.
// `stragglersim list --schema`: the config's JSON Schema, built from the same rows.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/cli/commands.h"
#include "experiments/config/aggregation_registry.h"
#include "experiments/config/backend_registry.h"
#include "experiments/config/config_error.h"
#include "experiments/config/config_schema.h"
#include "experiments/config/factories.h"
#include "experiments/config/requirements.h"

namespace stragglersim::experiments {
namespace {

/// One category: where it sits in a config and its rows, as plain docs.
struct Category {
  std::string name;
  std::string where;  ///< the config object and its selector key
  std::vector<ChoiceDoc> rows;
};

template <typename Factory>
std::vector<ChoiceDoc> docs_of(const std::vector<FactoryRow<Factory>>& table) {
  std::vector<ChoiceDoc> rows;
  rows.reserve(table.size());
  for (const auto& row : table) {
    rows.push_back({row.name, row.description, row.keys, row.requirements});
  }
  return rows;
}

std::vector<Category> categories() {
  return {
      {"codes", "\"code\": {\"kind\": ..., \"decoder\"}", docs_of(code_factories())},
      {"delays", "\"delay\": {\"kind\": ...}", docs_of(delay_factories())},
      {"rules", "\"stopping\": {\"rule\": ...}", docs_of(stopping_factories())},
      {"losses", "\"loss\": {\"kind\": ..., \"l2\" (0)}", docs_of(loss_factories())},
      {"backends", "\"backend\": {\"kind\": ...}", backend_docs()},
      {"aggregations", "\"aggregation\": {\"kind\": ...}", aggregation_docs()},
      {"optimizers", "\"optimizer\": {\"kind\": ...}", optimizer_docs()},
      {"generators", "\"data\": {\"source\": \"synthetic\", \"generator\": ...}", generator_docs()},
  };
}

std::string key_text(const KeyDoc& key) {
  return key.default_value.empty() ? key.name : fmt::format("{} ({})", key.name, key.default_value);
}

void print_text(const Category& c) {
  std::cout << fmt::format("{}: {}\n", c.name, c.where);
  for (const auto& row : c.rows) {
    std::cout << fmt::format("  {:<22}{}\n", row.name, row.description);
    if (!row.keys.empty()) {
      std::vector<std::string> keys;
      keys.reserve(row.keys.size());
      for (const auto& k : row.keys) {
        keys.push_back(key_text(k));
      }
      std::cout << fmt::format("  {:<22}keys: {}\n", "", fmt::join(keys, ", "));
    }
  }
}

nlohmann::json to_json(const Category& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : c.rows) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : row.keys) {
      keys.push_back(
          {{"name", k.name},
           {"default",
            k.default_value.empty() ? nlohmann::json() : nlohmann::json(k.default_value)}});
    }
    rows.push_back({{"name", row.name},
                    {"description", row.description},
                    {"keys", keys},
                    {"requires", requirements_json(row.requirements)}});
  }
  return {{"where", c.where}, {"rows", rows}};
}

int command_list(const std::string& which, bool json) {
  const std::vector<Category> all = categories();
  std::vector<std::string> names;
  names.reserve(all.size());
  for (const auto& c : all) {
    names.push_back(c.name);
  }
  nlohmann::json out = nlohmann::json::object();
  bool found = false;
  for (const auto& c : all) {
    if (!which.empty() && c.name != which) {
      continue;
    }
    found = true;
    if (json) {
      out[c.name] = to_json(c);
    } else {
      print_text(c);
    }
  }
  if (!found) {
    throw ConfigError(fmt::format("<command line>: unknown category '{}'; valid values are: {}",
                                  which,
                                  fmt::join(names, ", ")));
  }
  if (json) {
    std::cout << out.dump(2) << '\n';
  }
  return 0;
}

}  // namespace

Subcommand add_list_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "list",
      "list the codes, delay models, rules, losses, backends, aggregations, optimizers and "
      "generators");
  auto which = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto schema = std::make_shared<bool>(false);
  sub->add_option(
      "category",
      *which,
      "codes, delays, rules, losses, backends, aggregations, optimizers or generators (all if "
      "none)");
  sub->add_flag("--json", *json, "print JSON instead of text");
  sub->add_flag(
      "--schema", *schema, "print the JSON Schema (draft 2020-12) of a run config instead");
  return {sub, [which, json, schema] {
            if (*schema && (*json || !which->empty())) {
              throw ConfigError(
                  "<command line>: --schema with a category or --json; got both; expected "
                  "--schema alone");
            }
            if (*schema) {
              std::cout << config_schema().dump(2) << '\n';
              return 0;
            }
            return command_list(*which, *json);
          }};
}

}  // namespace stragglersim::experiments

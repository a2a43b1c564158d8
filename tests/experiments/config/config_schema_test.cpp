// The config's JSON Schema follows the plan reader and the factory rows it is built from.
#include "experiments/config/config_schema.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "experiments/config/factories.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

/// The "valid keys are: a, b, ..." list of the plan reader's unknown-key error.
std::vector<std::string> plan_reader_keys() {
  // A run with data: its reader reads every top-level key (a delay-only run has no loss).
  auto c = testing::config_with_data(
      {{"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 60}, {"features", 3}});
  c["zzz_not_a_key"] = 1;
  const std::string message = testing::plan_error(c, ".");
  const std::string marker = "valid keys are: ";
  const auto at = message.find(marker);
  REQUIRE(at != std::string::npos);
  std::vector<std::string> keys;
  std::string rest = message.substr(at + marker.size());
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = rest.find(", ", start);
    keys.push_back(
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 2;
  }
  return keys;
}

/// The selector values of the oneOf branches of `object`.
std::set<std::string> branch_names(const nlohmann::json& object, const std::string& selector) {
  std::set<std::string> names;
  for (const auto& b : object["oneOf"]) {
    names.insert(b["properties"][selector]["const"].get<std::string>());
  }
  return names;
}

template <typename Table>
std::set<std::string> row_names(const Table& table) {
  const auto names = names_of(table);
  return {names.begin(), names.end()};
}

}  // namespace

TEST_CASE("config schema: top-level keys are the plan reader's", "[experiments][config][schema]") {
  CHECK(top_level_keys() == plan_reader_keys());
  const auto schema = config_schema();
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  CHECK(schema["additionalProperties"] == false);
  std::vector<std::string> properties;
  for (const auto& item : schema["properties"].items()) {
    properties.push_back(item.key());
  }
  CHECK(properties == top_level_keys());
}

TEST_CASE("config schema: one branch per factory row with the row's keys",
          "[experiments][config][schema]") {
  const auto p = config_schema()["properties"];
  CHECK(branch_names(p["code"], "kind") == row_names(code_factories()));
  CHECK(branch_names(p["delay"], "kind") == row_names(delay_factories()));
  CHECK(branch_names(p["loss"], "kind") == row_names(loss_factories()));
  CHECK(branch_names(p["stopping"], "rule") == row_names(stopping_factories()));
  CHECK(p["code"]["properties"]["kind"]["enum"] == nlohmann::json(names_of(code_factories())));
  CHECK(p["code"]["required"] == nlohmann::json({"kind"}));
  // Each branch accepts exactly the selector, the shared keys and the row's keys.
  for (const auto& row : delay_factories()) {
    for (const auto& b : p["delay"]["oneOf"]) {
      if (b["properties"]["kind"]["const"] != row.name) {
        continue;
      }
      std::set<std::string> keys;
      for (const auto& item : b["properties"].items()) {
        keys.insert(item.key());
      }
      std::set<std::string> expected = {"kind"};
      for (const auto& k : row.keys) {
        expected.insert(k.name);
      }
      CHECK(keys == expected);
      CHECK(b["additionalProperties"] == false);
    }
  }
  // sgc: d and p besides kind and decoder; the optional selector of the optimizer.
  for (const auto& b : p["code"]["oneOf"]) {
    if (b["properties"]["kind"]["const"] == "sgc") {
      CHECK(b["properties"].size() == 4);
      CHECK(b["properties"].contains("p"));
      CHECK(b["properties"]["decoder"]["enum"].size() == 3);
    }
  }
  CHECK(p["optimizer"]["required"] == nlohmann::json({"iterations"}));
  // data: null, one branch per generator, one per file source.
  CHECK(p["data"]["oneOf"].size() == 1 + generator_docs().size() + data_source_docs().size());
}

}  // namespace stragglersim::experiments

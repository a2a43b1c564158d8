#include "experiments/config/config_schema.h"

#include <algorithm>

#include "experiments/config/aggregation_registry.h"
#include "experiments/config/backend_registry.h"
#include "experiments/config/factories.h"
#include "experiments/config/requirements.h"

namespace stragglersim::experiments {
namespace {

using nlohmann::json;

json integer_at_least(int min) { return {{"type", "integer"}, {"minimum", min}}; }
json number_at_least(double min) { return {{"type", "number"}, {"minimum", min}}; }
json enum_of(const std::vector<std::string>& values) { return {{"enum", values}}; }

/// One oneOf branch: the selector fixed to `name`, the shared keys and the row's, no others.
json branch(const std::string& selector,
            const std::string& name,
            const std::string& description,
            const json& shared,
            const std::vector<KeyDoc>& keys) {
  json properties = shared;
  properties[selector] = {{"const", name}};
  for (const auto& key : keys) {
    if (!properties.contains(key.name)) {
      properties[key.name] = json::object();
    }
    if (!key.default_value.empty()) {
      properties[key.name]["description"] = "default " + key.default_value;
    }
  }
  return {{"type", "object"},
          {"description", description},
          {"properties", properties},
          {"required", json::array({selector})},
          {"additionalProperties", false}};
}

/// An object whose `selector` picks one of `rows` (the selector may be absent when it has a
/// default, which then counts as that row).
template <typename Rows>
json selected_object(const std::string& selector,
                     const Rows& rows,
                     const json& shared,
                     bool required,
                     const std::string& fallback = "") {
  json branches = json::array();
  std::vector<std::string> names;
  for (const auto& row : rows) {
    const std::string requires_text = requirements_text(row.requirements);
    json b = branch(
        selector,
        row.name,
        requires_text.empty() ? row.description : row.description + "; requires: " + requires_text,
        shared,
        row.keys);
    if (!required && row.name == fallback) {
      b["required"] = json::array();
    }
    branches.push_back(b);
    names.push_back(row.name);
  }
  json object = {
      {"type", "object"}, {"properties", {{selector, enum_of(names)}}}, {"oneOf", branches}};
  if (required) {
    object["required"] = json::array({selector});
  }
  return object;
}

json data_schema() {
  // Synthetic data: one branch per generator (source and generator fixed).
  json branches = json::array({{{"type", "null"}}});
  for (const auto& row : generator_docs()) {
    json b = branch("generator", row.name, row.description, {}, row.keys);
    b["properties"]["source"] = {{"const", "synthetic"}};
    b["required"] = json::array({"source", "generator"});
    branches.push_back(b);
  }
  for (const auto& row : data_source_docs()) {
    branches.push_back(branch("source", row.name, row.description, {}, row.keys));
  }
  return {{"description", "the training data, or null for a delay-only run"}, {"oneOf", branches}};
}

json backend_schema() {
  return selected_object("kind", backend_factories(), json::object(), false, kDefaultBackend);
}

json aggregation_schema() {
  return selected_object(
      "kind", aggregation_factories(), json::object(), false, kDefaultAggregation);
}

json optimizer_schema() {
  const json shared = {
      {"step", {{"oneOf", {{{"type", "number"}, {"exclusiveMinimum", 0}}, {{"const", "auto"}}}}}},
      {"iterations", integer_at_least(0)},
      {"time_budget", {{"type", "number"}, {"exclusiveMinimum", 0}}},
      {"batch", integer_at_least(1)},
      {"schedule",
       {{"type", "object"},
        {"properties",
         {{"kind", enum_of({"constant", "inverse_t", "cosine"})},
          {"half_life", {{"type", "number"}, {"exclusiveMinimum", 0}}},
          {"floor", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}}}},
        {"additionalProperties", false}}},
      {"start",
       {{"type", "object"},
        {"properties",
         {{"kind", enum_of({"zero", "gaussian"})},
          {"scale", {{"type", "number"}, {"exclusiveMinimum", 0}}}}},
        {"additionalProperties", false}}}};
  json object = selected_object("kind", optimizer_docs(), shared, false, "gd");
  // momentum belongs to gd only (Nesterov has its own).
  for (auto& b : object["oneOf"]) {
    if (b["properties"]["kind"]["const"] == "gd") {
      b["properties"]["momentum"] = {{"type", "number"},
                                     {"minimum", 0},
                                     {"exclusiveMaximum", 1},
                                     {"description", "default 0"}};
    } else {
      b["properties"].erase("momentum");
    }
  }
  object["required"] = json::array({"iterations"});
  return object;
}

json network_schema() {
  return {{"type", "object"},
          {"properties",
           {{"latency", number_at_least(0.0)},
            {"bandwidth", {{"type", "number"}, {"exclusiveMinimum", 0}}},
            {"serial", {{"type", "boolean"}}},
            {"message_bytes", number_at_least(0.0)},
            {"value_bytes", {{"type", "integer"}, {"minimum", 1}, {"maximum", 64}}}}},
          {"additionalProperties", false}};
}

json properties() {
  const json decoder = enum_of({"exact", "one_step", "optimal"});
  return {
      {"name", {{"type", "string"}}},
      {"seed", integer_at_least(0)},
      {"data_seed", integer_at_least(0)},
      {"workers", integer_at_least(1)},
      {"partitions", integer_at_least(1)},
      {"threads", integer_at_least(1)},
      {"data", data_schema()},
      {"loss", selected_object("kind", loss_factories(), {{"l2", number_at_least(0.0)}}, true)},
      {"code", selected_object("kind", code_factories(), {{"decoder", decoder}}, true)},
      {"stopping", selected_object("rule", stopping_factories(), json::object(), true)},
      {"rescale", enum_of({"empirical", "expected", "none"})},
      {"delay", selected_object("kind", delay_factories(), json::object(), true)},
      {"stragglers", enum_of({"cancel", "drain", "finish"})},
      {"sampler", enum_of({"auto", "order_statistics", "workers"})},
      {"optimizer", optimizer_schema()},
      {"target_loss", {{"type", "number"}}},
      {"divergence_bound", {{"type", "number"}, {"exclusiveMinimum", 1}}},
      {"network", network_schema()},
      {"backend", backend_schema()},
      {"aggregation", aggregation_schema()},
  };
}

}  // namespace

json config_schema() {
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "stragglersim run config"},
          {"description",
           "A run config of stragglersim (docs/model.md section 7). Names, types and keys only: "
           "ranges and the rules between keys are checked by stragglersim run."},
          {"type", "object"},
          {"required", {"workers", "data", "code", "stopping", "delay", "optimizer"}},
          {"properties", properties()},
          {"additionalProperties", false}};
}

std::vector<std::string> top_level_keys() {
  std::vector<std::string> keys;
  const json all = properties();
  for (const auto& item : all.items()) {
    keys.push_back(item.key());
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace stragglersim::experiments

#pragma once
// The JSON Schema (draft 2020-12) of a run config, built from the factory rows (each code, delay
// model, loss, stopping rule, data source and generator as one `oneOf` branch with its keys) and
// the top-level keys the plan reader accepts. `stragglersim list --schema` prints it; editors
// use it to complete and check configs. It checks names, types and keys; ranges and the rules
// between keys (d divides workers, r <= workers, ...) stay with `run` (docs/cli.md).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stragglersim::experiments {

/// The schema as JSON.
[[nodiscard]] nlohmann::json config_schema();

/// The top-level keys of a run config, sorted: the keys the schema's root "properties" lists,
/// equal to the plan reader's "valid keys are: ..." list.
[[nodiscard]] std::vector<std::string> top_level_keys();

}  // namespace stragglersim::experiments

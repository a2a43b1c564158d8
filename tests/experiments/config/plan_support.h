#pragma once
// Helpers shared by the tests that plan runs from JSON configs. Header-only, tests only.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"

namespace stragglersim::testing {

/// The message of the ConfigError that plan_run throws for `config` (relative data paths taken
/// from `base`), or "no error".
inline std::string plan_error(const nlohmann::json& config, const std::filesystem::path& base) {
  try {
    (void)experiments::plan_run(config, "cfg.json", base);
  } catch (const experiments::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

/// A small logistic run on `data` with loss kind `loss`: seed 5, 6 workers, FRC d = 2, the first
/// 3 of 6, shifted-exponential delays, 5 GD steps of 0.5, l2 = 0.001.
inline nlohmann::json config_with_data(const nlohmann::json& data,
                                       const std::string& loss = "logistic") {
  auto c = nlohmann::json::parse(R"({
    "name": "data", "seed": 5, "workers": 6,
    "loss": {"kind": "logistic", "l2": 0.001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 3},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
    "optimizer": {"kind": "gd", "step": 0.5, "iterations": 5}
  })");
  c["data"] = data;
  c["loss"]["kind"] = loss;
  return c;
}

}  // namespace stragglersim::testing

#pragma once
// Helpers shared by the tests that plan runs from JSON configs. Header-only, tests only.

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::testing {

/// The folder temp/stragglersim_<suite>_<pid>, created if missing and never emptied: one per
/// suite and process, shared by its test cases.
inline std::filesystem::path process_scratch(const std::string& suite) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stragglersim_" + suite + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

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

/// A delay-only config around `delay`: 4 workers, uncoded, waiting for all, one iteration.
inline nlohmann::json four_worker_delay_only(const nlohmann::json& delay) {
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "t", "workers": 4, "data": null, "code": {"kind": "uncoded"},
    "stopping": {"rule": "all"}, "optimizer": {"iterations": 1}})");
  c["delay"] = delay;
  return c;
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

/// A small logistic run named `name`: seed 7, 6 workers, 240 x 5 Gaussian-mixture rows with a
/// quarter held out for testing, FRC d = 2, the first 3 of 6, shifted-exponential delays, 10 GD
/// steps of 0.5, l2 = 0.001.
inline nlohmann::json small_logistic_config(const std::string& name = "t") {
  auto c = config_with_data(nlohmann::json::parse(R"({
    "source": "synthetic", "generator": "gaussian_mixture", "rows": 240, "features": 5,
    "test_fraction": 0.25})"));
  c["name"] = name;
  c["seed"] = 7;
  c["optimizer"]["iterations"] = 10;
  return c;
}

/// Runs a planned config to the end on the simulated backend and returns its trace rows (with
/// the test metric when `with_test`).
inline std::vector<sim::TraceRow> train_plan(const experiments::RunPlan& plan,
                                             bool with_test = false) {
  sim::SimulatedBackend backend(plan.objective, plan.scheme, plan.make_cluster(plan.seed));
  auto optimizer = plan.make_optimizer();
  std::vector<sim::TraceRow> rows;
  sim::train(*plan.objective,
             with_test ? plan.test_objective.get() : nullptr,
             *optimizer,
             backend,
             sim::TrainingOptions{plan.iterations},
             [&](const sim::TraceRow& r) { rows.push_back(r); });
  return rows;
}

}  // namespace stragglersim::testing

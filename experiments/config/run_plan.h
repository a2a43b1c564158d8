#pragma once
// A config turned into everything one run needs (docs/model.md §7 "Config"). `plan_run` validates
// the whole config, loads the data and builds the code, rule and objective before anything is
// written, so a bad config never leaves output behind.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/objective.h"
#include "sim/delay_model.h"
#include "sim/mpi_backend.h"
#include "sim/optimizer.h"
#include "sim/order_statistics.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"
#include "sim/threaded_backend.h"

namespace stragglersim::experiments {

enum class OptimizerKind { kGd, kNesterov };
enum class BackendKind { kSimulated, kThreads, kMpi };

struct RunPlan {
  std::string name;
  std::uint64_t seed = 1;
  int workers = 0;
  int partitions = 0;
  /// The config with every default filled in: what the summary records.
  nlohmann::json resolved;

  /// Null for a delay-only run ("data": null).
  std::shared_ptr<const models::Objective> objective;
  std::shared_ptr<const models::Objective> test_objective;

  sim::Scheme scheme;
  /// Builds a fresh delay model for the code's loads (one per run: models may keep state).
  std::function<std::unique_ptr<sim::DelayModel>()> make_delays;
  sim::StragglerPolicy stragglers = sim::StragglerPolicy::kCancel;
  /// How a delay-only run draws iterations ("sampler": auto picks order statistics where exact).
  sim::Sampler sampler = sim::Sampler::kWorkers;

  OptimizerKind optimizer = OptimizerKind::kGd;
  /// The step γ (resolved: "auto" becomes 1/β).
  double step = 0.0;
  /// β of the objective (0 for a delay-only run).
  double smoothness = 0.0;
  std::uint64_t iterations = 0;
  std::optional<double> target_loss;
  BackendKind backend = BackendKind::kSimulated;
  /// Options of the threads backend (seconds_per_unit, timeout, faults; policy = stragglers).
  sim::ThreadedOptions threaded;
  /// Options of the mpi backend (inject; the threads keys in `master`).
  sim::MpiOptions mpi;

  [[nodiscard]] bool delay_only() const { return objective == nullptr; }
  /// A fresh optimiser at x₀ = 0.
  [[nodiscard]] std::unique_ptr<sim::Optimizer> make_optimizer() const;
};

/// Validates `config` (read from `file`; relative data paths resolve against `base_dir`) and
/// builds the run. Throws ConfigError with file, JSON pointer, value and accepted values.
RunPlan plan_run(const nlohmann::json& config,
                 const std::string& file,
                 const std::filesystem::path& base_dir);

/// Reads and parses a JSON file; ConfigError on a missing file or a syntax error.
nlohmann::json read_json_file(const std::filesystem::path& path);

/// Reads `path` and plans the run it describes.
RunPlan plan_run_file(const std::filesystem::path& path);

}  // namespace stragglersim::experiments

#pragma once
// `stragglersim fit` (docs/fit.md): a trace file's times fitted by every delay family, as JSON and
// as the config "delay" block of the best fit. Shared by `fit` and `advise --fit`.

#include <nlohmann/json.hpp>
#include <string>

#include "fit/delay_fit.h"

namespace stragglersim::experiments {

struct TraceFit {
  std::string path;
  sim::DelayFitReport report;
  std::size_t censored = 0;    ///< times left out: empty `seconds` fields (right-censored)
  std::size_t iterations = 0;  ///< 0 for a per-worker pool (no iteration column)
  /// With --per-worker: each worker's own fits (no heterogeneous family, no test).
  std::vector<sim::DelayFitReport> per_worker;
};

/// Reads `path` with sim::read_delay_trace (a malformed file is ConfigError naming file:line)
/// and fits every family; `per_worker` also fits each worker alone.
[[nodiscard]] TraceFit fit_trace_file(const std::string& path, bool per_worker);

/// The config block of a fitted family: {"kind": family, its parameters, "tail": "load"} (and
/// "factors" for heterogeneous).
[[nodiscard]] nlohmann::json delay_block(const sim::FamilyFit& fit);

/// What `fit --json` prints (docs/fit.md lists every key).
[[nodiscard]] nlohmann::json fit_json(const TraceFit& fit);

/// The best fit's block; ConfigError naming the file when no family could be fitted.
[[nodiscard]] nlohmann::json best_delay_block(const TraceFit& fit);

}  // namespace stragglersim::experiments

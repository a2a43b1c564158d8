#pragma once
// `validate`'s time-to-target comparison (docs/validate.md "Time to target"): does the scheme
// `advise` recommends from the first part of a measured trace reach the target first on the rest?
//
// The candidates are those `advise` ranks (experiments/scheme_advice.h: the codes, the baselines
// K-sync, K-async and Anytime, the adaptive rules, the time-optimal methods and, over a
// collective "aggregation", the collective schemes beside the parameter server's) with the
// chosen model's delay, which places the deadline candidates and the `proportional` loads; those
// blocks are then fixed ("factors": "delay" replaced by the fit part's per-worker means over
// the fastest's), so that every model and the replay rank the same schemes. Each model (fitted on
// the first part: the AIC family, the block replay, the empirical marginals) predicts every
// candidate's time to target as `advise` does with it as the predicted delay; the held-out part,
// replayed as the trace delay (cycle mode, a random start row per run), gives each candidate's
// time to target over R seeded training runs (mean ± s.e.; +∞ unless every run reaches the
// target). Per model, its recommended scheme (the smallest predicted time) and that scheme's
// rank under the replay among every compared candidate.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fit/delay_trace.h"

namespace stragglersim::experiments {

/// The stream (derive_seed of the config's seed) of the held-out replay's runs: not advise's, not
/// --measure's.
inline constexpr std::uint64_t kTimeToTargetReplayStream = 0x4e1d;

struct TimeToTargetOptions {
  /// Relative target s ∈ (0, 1) as `advise --suboptimality`; without it the config's target_loss.
  std::optional<double> suboptimality;
  /// R: each model's simulated training runs per scheme (advise's --repetitions) and the replay's
  /// runs per scheme.
  int repetitions = 10;
  /// The candidates as `advise --fixed-step` ranks them (the config's step); otherwise advise's
  /// default, each at its own tuned step and parameters.
  bool fixed_step = false;
  /// Candidates estimated at once (advise's --threads; below 1: 1). No number depends on it.
  int threads = 1;
};

/// One candidate: every model's predicted time to target and the replayed one.
struct TimeToTargetRow {
  std::string scheme;
  nlohmann::json block;  ///< the candidate's config block
  std::string problem;   ///< non-empty: not compared (and why)
  /// Per model (model order): the predicted time to target (+∞: not reached in the horizon; NaN:
  /// not predicted, the reason in `methods`) and how it was computed.
  std::vector<double> predicted;
  std::vector<std::string> methods;
  int runs = 0;                                               ///< replay runs
  int reached = 0;                                            ///< of which reached the target
  double replayed = std::numeric_limits<double>::infinity();  ///< mean; +∞ unless all reached
  double replayed_se = 0.0;
  std::size_t rank = 0;  ///< 1-based rank under the replay among the compared rows
};

/// A model's recommendation and where the replay puts it.
struct TimeToTargetPick {
  std::string model;
  std::string scheme;  ///< the smallest predicted time to target
  double predicted = 0.0;
  double replayed = 0.0;  ///< +∞ when some replay run did not reach the target
  double replayed_se = 0.0;
  int reached = 0;
  int runs = 0;
  std::size_t rank = 0;
  std::size_t of = 0;  ///< compared candidates
  std::string best;    ///< the replay's fastest scheme
  double best_replayed = 0.0;
  double best_se = 0.0;
  /// (replayed − best) / best: how far behind the replay's best the recommendation is.
  double behind_best = 0.0;
};

struct TimeToTargetValidation {
  /// Non-empty when time to target is not compared at all (no data, no target), and why.
  std::string not_compared;
  double f_star = 0.0;
  double target_loss = 0.0;
  double target_gap = 0.0;  ///< ε
  std::uint64_t horizon = 0;
  int repetitions = 0;
  std::vector<std::string> models;
  std::vector<TimeToTargetRow> rows;  ///< compared ones by replay rank, then the others
  /// One per model that recommends a scheme, in model order.
  std::vector<TimeToTargetPick> picks;
  std::string chosen;  ///< the model validate chose (its pick is the recommendation)
};

/// What the comparison needs from validate: the config and the two parts of the trace.
struct TimeToTargetInputs {
  const nlohmann::json& config;
  const std::string& file;
  const std::filesystem::path& base_dir;
  const sim::DelayTrace& fit;
  const sim::DelayTrace& holdout;
  std::string tail;                 ///< "load" or "none", the config's
  nlohmann::json fitted_delay;      ///< the AIC family's block
  std::size_t block_length = 1;     ///< the block replay's L
  std::vector<std::string> models;  ///< model order: the family, block replay, empirical
  std::string chosen;
};

/// The comparison (a `not_compared` reason for a delay-only config or one without a target).
/// ConfigError as `advise` for a target below f*.
[[nodiscard]] TimeToTargetValidation validate_time_to_target(const TimeToTargetInputs& inputs,
                                                             const TimeToTargetOptions& options);

/// 1 + the number of entries of `replayed` smaller than replayed[i] (ties share the rank; +∞,
/// a scheme some run of which did not reach the target, ranks after every finite one).
[[nodiscard]] std::size_t replay_rank(const std::vector<double>& replayed, std::size_t i);

/// Each model's pick against the replay (rows with their replayed values and ranks set).
[[nodiscard]] std::vector<TimeToTargetPick> time_to_target_picks(
    const std::vector<TimeToTargetRow>& rows, const std::vector<std::string>& models);

/// The "time_to_target" object of `validate --json` (docs/validate.md).
[[nodiscard]] nlohmann::json time_to_target_json(const TimeToTargetValidation& t);

}  // namespace stragglersim::experiments

#pragma once
// `stragglersim advise` (docs/advise.md): the schemes the program supports, ranked by predicted
// time to reach a target loss on the config's data, workers and delay model.
//
// For each candidate scheme (experiments/scheme_candidates.h: the config with its code, stopping
// and rescale replaced):
//   iteration time     theory's E[Z] (sim/theory/iteration_time_theory.h: closed form or
//                      numerical) where it models the scheme, else a delay-only simulation
//   iterations         T = min{t : E[f(x_t)] − f* ≤ ε} from the exact least-squares curve where it
//                      is exact (least squares, exact schemes: a deterministic gap), else the mean
//                      over `repetitions` simulated training runs of each run's first t with f(x_t)
//                      − f* ≤ ε (not reached unless every run reaches it)
//   total              T · E[Z]
// ε = target_loss − f* (the config's target_loss) or ε = s·(f(x₀) − f*) (--suboptimality s).
// The baselines without a code (K-sync, K-async, Anytime minibatch) are ranked by their time to
// ε simulated directly: the mean over `repetitions` training runs of each run's simulated time
// at its first row within ε (K-async's first updates are faster than its stationary rate, so
// T · E[Z] would overstate it); their iteration time is that mean over the mean T.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/scheme_candidates.h"

namespace stragglersim::experiments {

struct AdviceOptions {
  /// Relative target s ∈ (0, 1): f − f* ≤ s·(f(x₀) − f*); without it the config's target_loss.
  std::optional<double> suboptimality;
  /// Simulated training runs per scheme where the exact curve does not apply.
  int repetitions = 10;
  /// Also measure every scheme's time to target over this many seeded runs (0: no), with the
  /// delay the predictions use.
  int measure = 0;
  /// Predict (and measure) with this delay block instead of the config's (`advise --fit`: a
  /// fitted model); the recommended config keeps the config's own delay.
  std::optional<nlohmann::json> predicted_delay;
  /// Every candidate at the config's step and its listed parameters (the authors' protocol;
  /// `advise --fixed-step`). Otherwise each is ranked at its own best step and K, r, deadline or
  /// window (experiments/advice_tuning.h, docs/advise.md "Tuning").
  bool fixed_step = false;
  /// Candidates estimated at once, on a worker pool of this many threads (1: one after the other;
  /// below 1: 1). No number depends on it: each candidate's estimate is computed by one task, in
  /// the order and with the seeds of the one-thread run (docs/advise.md "Threads").
  int threads = 1;
  /// Tuning: called once with the estimate of the work (from a measured probe) before it starts.
  std::function<void(const std::string&)> note;
  /// Tuning: called after every grid point with the points done and the points in all (one
  /// call at a time, from the pool's threads).
  std::function<void(std::size_t, std::size_t)> progress;
};

/// Iterations simulated for each candidate's coverage check.
inline constexpr std::uint64_t kCoverageDraws = 2000;
/// A candidate whose least-covered partition is covered in fewer iterations than this fraction
/// is flagged: its gradient estimate all but never contains that data. An update rule's (a few
/// gradients per update) is held to this fraction of the mean share of its partitions.
inline constexpr double kBiasedCoverage = 0.10;

struct Advice {
  double f_star = 0.0;
  double initial_gap = 0.0;  ///< f(x₀) − f*
  double target_loss = 0.0;
  double target_gap = 0.0;              ///< ε
  std::uint64_t horizon = 0;            ///< the config's iterations: the longest run considered
  std::vector<SchemeCandidate> ranked;  ///< by total, unreached and failed last
  nlohmann::json config;                ///< the input config, its own delay
  nlohmann::json predicted_delay;       ///< the delay block the predictions used
  /// The config's resolved step (1/β for "auto"): the tuning grid's unit; 0 under fixed_step.
  double base_step = 0.0;
  bool tuned = false;
  /// The set-up the candidates' plans share (the data set and β, computed once; the same bytes
  /// as each plan's own); null: each plan computes its own.
  std::shared_ptr<SetupCache> setup;
};

/// Ranks the candidates for `config` (read from `file`, paths relative to `base_dir`).
/// ConfigError when the config has no data, or neither a target_loss nor a suboptimality.
[[nodiscard]] Advice advise(const nlohmann::json& config,
                            const std::string& file,
                            const std::filesystem::path& base_dir,
                            const AdviceOptions& options);

/// As `advise`, for the given candidates only (their blocks as given: no candidate is added and
/// no deadline placed): each is planned, predicted and ranked with `options` (its predicted delay,
/// target and repetitions). `validate` predicts one fixed list of candidates with each model.
[[nodiscard]] Advice advise_candidates(const nlohmann::json& config,
                                       const std::string& file,
                                       const std::filesystem::path& base_dir,
                                       const AdviceOptions& options,
                                       std::vector<SchemeCandidate> candidates);

/// Time to `target_loss` of `runs` seeded training runs of `plan` (run i: delay seed
/// derive_seed(seed, i)): the counted time of the first row with loss ≤ target, +∞ if none.
[[nodiscard]] std::vector<double> measure_time_to_target(const RunPlan& plan,
                                                         int runs,
                                                         std::uint64_t seed,
                                                         double target_loss);

/// Sets `c`'s least-covered partition, its coverage fraction and the caveat, from
/// kCoverageDraws iterations of the event engine under `plan` (its delay, rule, policy and
/// network; the seed derived from the plan's), or updates of the asynchronous clock for an update
/// rule. A partition is covered in an iteration when a heard worker (one whose gradient the
/// update used) holds it.
void check_coverage(const RunPlan& plan, SchemeCandidate& c);

/// Plans `candidate` on the config with the predicted delay and estimates its time to target as
/// `advise` does (docs/advise.md): the exact curve or `repetitions` simulated runs whose delay
/// seeds come from `stream` (derived from the plan's seed). With `divergence_not_reached` a run
/// that stops with a NumericalError (a non-finite loss) counts as not reaching the target.
/// Returns the plan (nullopt, and `candidate.problem` set, when it does not plan).
/// `cache` (optional) keeps the iteration time of each block without its step: the step does
/// not change it, and the tuning estimates a block at every step of its grid. `full` (optional):
/// the uncoded candidate estimated at the same step, whose iterations an exact linear-algebra
/// decode under GD takes instead of simulating a factorisation per iteration (not reached when
/// it does not reach the target). `prune_above` (the tuning's best time so far): the runs stop
/// as soon as the estimate is sure to exceed it (a lower bound of the mean time to target over
/// the runs, the unfinished runs' hits no earlier than their current row, is above it) or a run
/// ends without reaching the target; the candidate's total is then +∞, and its other fields
/// are not an estimate. An estimate that ends at or below `prune_above` is the unpruned one.
/// +∞: no pruning; the largest finite double (no point reached yet): only at a run's miss.
struct CachedIterationTime {
  double iteration_time = 0.0;
  std::string method;
  double stop_time = 0.0;
};
using IterationTimeCache = std::map<std::string, CachedIterationTime>;
std::optional<RunPlan> estimate_candidate(
    const Advice& advice,
    const std::string& file,
    const std::filesystem::path& base_dir,
    int repetitions,
    std::uint64_t stream,
    bool divergence_not_reached,
    SchemeCandidate& candidate,
    IterationTimeCache* cache = nullptr,
    const SchemeCandidate* full = nullptr,
    double prune_above = std::numeric_limits<double>::infinity());

/// The delay-seed stream of advise's simulated runs (the fixed-step estimates and a tuned
/// candidate's reported estimate; distinct from the tuning stream and --measure's).
inline constexpr std::uint64_t kAdviceStream = 0xad51;

/// What `advise --json` prints.
[[nodiscard]] nlohmann::json advice_json(const Advice& advice);

}  // namespace stragglersim::experiments

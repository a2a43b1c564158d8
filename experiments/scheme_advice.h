#pragma once
// `stragglersim advise` (docs/advise.md): the schemes the program supports, ranked by predicted
// time to reach a target loss on the config's data, workers and delay model.
//
// For each candidate scheme (the config with its code, stopping and rescale replaced):
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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"

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
  /// Tuning: called once with the estimate of the work (from a measured probe) before it starts.
  std::function<void(const std::string&)> note;
  /// Tuning: called after every grid point with the points done and the points in all.
  std::function<void(std::size_t, std::size_t)> progress;
};

/// A tuned candidate's choice (docs/advise.md "Tuning"): the grid it was chosen from, on the
/// tuning repetitions, and the chosen point.
struct TuningChoice {
  double step = 0.0;             ///< the chosen step γ
  double step_multiplier = 1.0;  ///< γ over the config's (resolved) step
  /// The chosen values of the tuned parameters, by JSON pointer into the block ("/stopping/r").
  nlohmann::json parameters = nlohmann::json::object();
  /// The grid: "/optimizer/step" and each tuned parameter's pointer, with their values.
  nlohmann::json grid = nlohmann::json::object();
  std::size_t grid_points = 0;
  /// The pointers whose chosen value sits at an end of its grid that is not the parameter's
  /// own bound (the grid did not bracket the optimum).
  std::vector<std::string> at_edge;
  /// The chosen point's time to target on the tuning repetitions (+∞: no point reached it).
  double tuning_total = std::numeric_limits<double>::infinity();
};

struct SchemeCandidate {
  std::string label;  ///< e.g. "erasurehead frc d=2 r=10"
  /// {"code", "stopping", "rescale"} (and "partitions", "aggregation", "network" where the
  /// candidate sets them): replaces the config's.
  nlohmann::json block;
  /// The aggregation the candidate runs on when the config's is a collective ("parameter_server"
  /// or the collective's kind, also the label's prefix); empty for a parameter-server config.
  std::string aggregation;
  std::string problem;  ///< non-empty when the candidate was not predicted (and why)
  /// K-sync, K-async or Anytime minibatch: a baseline without a code, whose time to target is
  /// simulated directly (`validate` compares its time to target, not an iteration time).
  bool baseline = false;
  /// An adaptive rule (adaptive_r, adaptive_deadline) or code (dynamic_frc): its r, deadline or
  /// groups follow the run's history, which the theory does not model, so its time to target is
  /// simulated directly too.
  bool adaptive = false;
  /// A time-optimal method (Rennala, Malenia, Ringmaster, MindFlayer, Rescaled ASGD; docs/model.md
  /// §4): an update rule of the asynchronous loop, simulated directly as the baselines are.
  bool time_optimal = false;
  /// Baselines, adaptive rules and the time-optimal methods: ranked by a time to target
  /// simulated over training runs.
  [[nodiscard]] bool simulated_directly() const { return baseline || adaptive || time_optimal; }
  /// False for a scheme simulated directly that did not reach the target in every run: its
  /// iteration time is derived from the time at target, so it has none (shown "-", JSON null).
  [[nodiscard]] bool has_iteration_time() const { return !simulated_directly() || iterations; }
  double iteration_time = 0.0;
  std::string iteration_time_method;
  /// A collective candidate's E[t*], the rule's stop before the all-reduce (NaN when not
  /// predicted): where the deadline candidates over the collective are placed.
  double stop_time = std::numeric_limits<double>::quiet_NaN();
  /// To target (a mean over runs when simulated); nullopt: not reached in the horizon.
  std::optional<double> iterations;
  std::string iterations_method;
  double total = 0.0;  ///< iterations · iteration_time; +∞ when not reached
  std::string total_method = "iterations_to_target * iteration_time";
  double total_se = 0.0;  ///< simulated directly: the standard error of total over the runs
  // --measure: seeded runs' time to target (time of the first row with loss ≤ target).
  int measured_runs = 0;
  int measured_reached = 0;
  double measured_mean = 0.0;
  double measured_se = 0.0;
  // Heard-set bias: the partition whose gradient the heard workers cover least often, over
  // kCoverageDraws simulated iterations with the delay the predictions use.
  int least_covered_partition = -1;
  double least_covered_fraction = 1.0;  ///< fraction of iterations in which it is covered
  std::string caveat;                   ///< non-empty when that fraction is below kBiasedCoverage
  /// Set when the candidate was tuned (AdviceOptions::fixed_step false).
  std::optional<TuningChoice> tuning;
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
};

/// The candidates for n workers: uncoded (all), ignore-stragglers (uncoded, first_r at ½ and ¾),
/// exact FRC (d = 2, 3 when d | n, decodable), CRC (s = 1, 2, decodable), ErasureHead (FRC
/// d = 2, 3, first_r_or_decodable at r = ¼, ½, ¾ of n; FRC d = 2 with a deadline), BGC
/// (d = 2, 3, first_r at ½), ErasureHead (FRC d = 2) with the adaptive r (r ≥ ½) and the
/// adaptive deadline (median + 1 MAD) when 2 | n, and the baselines without a code: K-sync
/// (first_r at ½ with
/// rescale empirical), K-async (k_async, K = ½) and, with a deadline, Anytime minibatch (window =
/// the deadline), then the time-optimal methods: Rennala (B = n), Malenia (S = n), Ringmaster
/// (R = n, stop_stale), MindFlayer (B = n, cut-off = the deadline, with a deadline) and Rescaled
/// ASGD. `deadline` (seconds, 0: none) is the deadline's `after`, the window and the cut-off.
[[nodiscard]] std::vector<SchemeCandidate> scheme_candidates(int workers, double deadline);

/// Heterogeneity-aware candidates when the predicted `delay` block has per-worker `factors`
/// (heterogeneous, heterogeneous_markov, or such a fit) or is a replayed trace ("factors":
/// "delay": each worker's mean over the fastest's), and n is even and > 2: `proportional` d = 2
/// with those factors and k = 4n (the block's "partitions"), exact (`decodable`) and
/// ErasureHead's (first_r_or_decodable at r = ½ of n). None otherwise.
[[nodiscard]] std::vector<SchemeCandidate> proportional_candidates(int workers,
                                                                   const nlohmann::json& delay);

/// The candidates over the collective of a config's "aggregation" block (docs/advise.md
/// "Collectives"), labelled "<kind>: ...": uncoded (all), backup workers (uncoded first_r at ¾
/// and ½ of n, rescale empirical), ErasureHead over it (FRC d = 2 first_r at ½ and ¾ of n,
/// d = 3 at ½), exact FRC (d = 2, 3, decodable), and with a deadline (seconds, 0: none)
/// bounded-time (uncoded deadline, rescale empirical) and DropCompute (m = 4 micro-batches per
/// worker: proportional d = 1 with equal factors and k = 4n, threshold the deadline, rescale
/// empirical); then StragglAR (uncoded all over "stragglar" with the block's links) when the
/// block is not StragglAR's and the predicted `delay` names a straggler (per-worker factors
/// with a single largest: that worker), n ≥ 3.
[[nodiscard]] std::vector<SchemeCandidate> collective_candidates(const nlohmann::json& aggregation,
                                                                 int workers,
                                                                 double deadline,
                                                                 const nlohmann::json& delay);

/// A parameter-server candidate beside the collective candidates of a config whose
/// "aggregation" block is a collective: its block gains "aggregation": {"kind":
/// "parameter_server"} and a "network" of parallel links with the collective's latency and
/// bandwidth (so that each message costs what one link of the collective does), its label the
/// prefix "parameter_server: ".
void on_parameter_server(SchemeCandidate& candidate, const nlohmann::json& aggregation);

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

/// The config with `candidate`'s code, stopping and rescale (and "stragglers": "cancel"; its
/// "partitions", "aggregation" and "network" where the block has them).
[[nodiscard]] nlohmann::json apply_candidate(const nlohmann::json& config,
                                             const SchemeCandidate& candidate);

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

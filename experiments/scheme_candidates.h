#pragma once
// The schemes `stragglersim advise` compares (docs/advise.md "Candidates"): each a block of the
// config (its code, stopping and rescale, and where it sets them its partitions, aggregation and
// network) with a label, and the row its estimate fills (experiments/scheme_advice.h ranks them).
// The lists for n workers, over a parameter server or a collective; the candidates placed at a
// deadline once the others are estimated; the config with a candidate's block.

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stragglersim::experiments {

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
  // kCoverageDraws (scheme_advice.h) simulated iterations with the delay the predictions use.
  int least_covered_partition = -1;
  double least_covered_fraction = 1.0;  ///< fraction of iterations in which it is covered
  std::string caveat;                   ///< non-empty when that fraction is below kBiasedCoverage
  /// Set when the candidate was tuned (AdviceOptions::fixed_step false).
  std::optional<TuningChoice> tuning;
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

/// The candidates placed at a deadline, once the others are estimated (`evaluated`, their labels
/// as listed): on the parameter server (its candidates prefixed "parameter_server: " when
/// `aggregation` is a collective block), scheme_candidates(n, τ)'s deadline, Anytime and
/// MindFlayer candidates, τ the iteration time of `erasurehead frc d=2 r=⌈n/2⌉`; over the
/// collective, collective_candidates(aggregation, n, τ, predicted_delay)'s bounded-time and
/// DropCompute, τ the mean stop E[t*] (else the iteration time) of the same ErasureHead over
/// it. None for an anchor that is missing or not predicted.
[[nodiscard]] std::vector<SchemeCandidate> deadline_candidates(
    const std::vector<SchemeCandidate>& evaluated,
    int workers,
    const nlohmann::json& aggregation,
    const nlohmann::json& predicted_delay);

/// The config with `candidate`'s code, stopping and rescale (and "stragglers": "cancel"; its
/// "partitions", "aggregation" and "network" where the block has them).
[[nodiscard]] nlohmann::json apply_candidate(const nlohmann::json& config,
                                             const SchemeCandidate& candidate);

}  // namespace stragglersim::experiments

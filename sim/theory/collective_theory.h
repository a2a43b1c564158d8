#pragma once
// The iteration time of a run whose ranks synchronise by a collective (docs/model.md §3
// "Aggregation", docs/theory.md "Collectives"). The rule stops at t* on the compute ends r_j
// (the stopping time Z of sim/theory/iteration_time_theory.h, or of multi_message_theory.h);
// every rank joins the all-reduce at min(r_j, t*) and the iteration lasts until the last rank
// completes. The schedule's max-plus offsets w_j (collectives::completion_offsets) make that
// exactly
//   T = max_j (min(r_j, t*) + w_j).
// For independent workers with marginals F_j:
//   t* = max_j r_j (rule all, and any rule whose stop is the last arrival: uncoded decodable):
//       min(r_j, t*) = r_j, so P(T ≤ t) = Π_j F_j(t − w_j)                                  exact
//   deadline τ (t* = min(τ, max r); also anytime's window τ on compute ends): min(r_j, t*) =
//       min(r_j, τ), so P(T ≤ t) = Π_j G_j(t − w_j), G_j(s) = F_j(s) below τ and 1 from τ    exact
//   multi-message (drop_compute) where no partition has two holders and every worker holds
//       one: t* = min(τ, max_j T_j) with T_j the whole-support time, the deadline form       exact
//   first_r, decodable with groups, first_r_or_decodable, multi-message with shared partitions:
//       E[t*] + w when every w_j is equal (ring, direct, halving–doubling at powers of two:
//       every rank completes at the last ready time plus the algorithm's cost), exact;
//       otherwise E[t*] + min_j w_j ≤ E[T] ≤ E[t*] + max_j w_j                               bounds
// With equal offsets every form is E[t*] + w, from the existing theory of t* (its closed forms
// for i.i.d. shifted exponentials). The products are integrated numerically as the existing
// theory integrates its distributions (time_integrals.h), split at every lower_bound(j) + w_j,
// atom + w_j and τ + w_j. A replayed table (DelayModel::rows()) is averaged row by row for every
// rule, each row's T computed from its delays and its own stop (method "trace rows"): exact.
// On a model whose workers are dependent without rows, the marginal path says so in its method.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/convergence_theory.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/multi_message_theory.h"

namespace stragglersim::sim {

/// Offsets within this relative distance of each other count as equal (the schedule's
/// recursion adds the same costs in different orders on different ranks).
inline constexpr double kEqualOffsetTolerance = 1e-12;

struct CollectiveTimePrediction {
  /// "exact": E[T] is `mean` (lower = upper = mean); "bounds": lower ≤ E[T] ≤ upper and mean,
  /// sd are NaN; "simulation": the stop's fallback ran (PredictionOptions::simulate, which must
  /// simulate the collective run itself) and `mean` is its estimate of E[T].
  std::string form = "exact";
  double mean = 0.0;
  double sd = 0.0;  ///< sd(T) of an exact form (NaN with bounds)
  double lower = 0.0;
  double upper = 0.0;
  /// How: the formula and the method of the pieces, e.g. "P(T <= t) = prod_j F_j(t - w_j)
  /// (numerical)" or "E[t*] + w (t*: closed form)".
  std::string method;
  double min_offset = 0.0;  ///< min_j w_j (seconds)
  double max_offset = 0.0;  ///< max_j w_j
  /// The rule's stop t* as the parameter-server theory predicts it (its mean, sd, q, q₂ and
  /// method): the heard set, and so q and q₂, are the same with a collective.
  IterationTimePrediction stop;
  /// Standard error of `mean` when it comes from a simulation (the stop's fallback), else 0.
  double standard_error = 0.0;
  [[nodiscard]] bool exact() const { return form == "exact"; }
};

/// Whether every offset is within kEqualOffsetTolerance (relative to the largest |w_j|, or
/// absolute below 1 s) of every other.
[[nodiscard]] bool equal_offsets(std::span<const double> offsets);

/// P(T ≤ t) and P(T > t) of the exact product form: Π_j P(min(r_j, τ) ≤ t − w_j) for
/// independent workers with `delay`'s marginals (τ = +∞: rule all). Illegal: offsets not one
/// per worker.
[[nodiscard]] StopProbability collective_stop_probability(const DelayModel& delay,
                                                          std::span<const double> offsets,
                                                          double deadline,
                                                          double t);

/// E[T] of `scheme` (its rule and code, as describe_scheme gives them) under `delay` with the
/// schedule's offsets (one per worker, in rank order). `options` are the stop's limits; its
/// fallback `simulate`, used when the stop's exact computation is over the limit, must simulate
/// the collective run (the result is then that simulation). Illegal: the scheme's illegal
/// inputs, offsets not one per worker.
[[nodiscard]] CollectiveTimePrediction predict_collective_time(
    const SchemeDescription& scheme,
    const DelayModel& delay,
    std::span<const double> offsets,
    const PredictionOptions& options = {});

/// The same for the multi-message rule (and drop_compute, its deadline form): `orders` as
/// sim/theory/multi_message_theory.h takes them; the network shift must be 0 (a collective has
/// no network block).
[[nodiscard]] CollectiveTimePrediction predict_collective_multi_message_time(
    const std::vector<std::vector<int>>& orders,
    const DelayModel& delay,
    std::span<const double> offsets,
    const MultiMessageTheoryOptions& options);

/// ErasureHead's speedup when both it and the uncoded scheme reduce by a ring
/// (docs/theory.md "Collectives"): every rank completes at the last ready time plus the ring's
/// C = 2(n − 1)(α + S/(nB)), so the speedup is (E[max_i T_i] + C)/(E[T_(r:n)] + C), with
/// ErasureHead's FRC of groups d and r = round(fraction·n) as predicted_speedup takes them.
struct RingSpeedupPoint {
  int workers = 0;
  int r = 0;
  double ring_cost = 0.0;                 ///< C, seconds
  double uncoded = 0.0;                   ///< E[max_i T_i], parameter server
  double erasurehead = 0.0;               ///< E[T_(r:n)] of the FRC workers
  double speedup_parameter_server = 0.0;  ///< uncoded / erasurehead
  double speedup_ring = 0.0;              ///< (uncoded + C) / (erasurehead + C)
};

/// C = 2(n − 1)(α + S/(nB)) of the ring (the schedule's cost with every rank ready at once).
[[nodiscard]] double ring_cost(int workers, double latency, double transfer_seconds);

/// The points for each n in `workers` under a shifted exponential (shift, rate, tail) with the
/// ring's latency α and S/B = `transfer_seconds` (closed forms: microseconds per n at any n).
/// Illegal: what predicted_speedup refuses.
[[nodiscard]] std::vector<RingSpeedupPoint> ring_speedup(std::span<const int> workers,
                                                         const SpeedupOptions& options,
                                                         double shift,
                                                         double rate,
                                                         TailScaling tail,
                                                         double latency,
                                                         double transfer_seconds);

}  // namespace stragglersim::sim

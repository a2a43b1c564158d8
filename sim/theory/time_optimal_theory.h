#pragma once
// Time per update of the time-optimal parallel SGD methods run by the asynchronous loop (
// docs/theory.md "Time-optimal methods"): Rennala SGD (Tyurin & Richtárik, NeurIPS 2023), Malenia
// SGD (same paper), Ringmaster ASGD (Maranjyan, Tyurin & Richtárik, ICML 2025) and MindFlayer SGD
// (Maranjyan, Shaikh Omar & Richtárik, UAI 2025). Each worker computes one gradient at a time.
//
// Fixed computation model (worker i takes exactly τ_i every time; τ in any order):
//   t(B)      = min_{m∈[n]} (Σ_{i≤m} 1/τ_(i))^{-1} (B + m), τ sorted ascending: the papers'
//               equilibrium time (their bounds are constant multiples of it)
//   T*(B)     = min{t : Σ_i ⌊t/τ_i⌋ ≥ B}: the exact time to collect B gradients at one point from a
//               fresh start; t(B)/2 ≤ T*(B) ≤ t(B)
//   T°(B)     = min{t : Σ_i (⌊t/τ_i⌋ − 1)⁺ ≥ B}: the same when every worker may first have to
//               finish one stale computation; T°(B) ≤ min_m (B + 2m)/Σ_{i≤m} 1/τ_(i) ≤ 2 t(B)
//   Rennala   stop_stale: T*(B) per update, exact. Without: T*(B) ≤ every update ≤ T°(B)
//   Malenia   stop_stale: the first t at which every b_i = ⌊t/τ_i⌋ ≥ 1 and Σ 1/b_i ≤ n²/S, exact
//             (without: that time is a lower bound, no upper bound is given)
//   Ringmaster any R consecutive updates take at most T°(R) (T*(R) for the first R); so in the
//             long run 1/Σ 1/τ_i ≤ time per update ≤ T°(R)/R, and R = ∞ gives 1/Σ 1/τ_i exactly
//   MindFlayer the workers with τ_i ≤ t_i as Rennala (the others never deliver)
// Random delays, worker i's computations i.i.d. Δ_i + scale_i·Exp(1), workers independent:
//   Rennala   stop_stale: ∫₀^∞ P(Σ_i N_i(t) < B) dt, N_i the renewal count of worker i, exact
//             (numerical); B/Σλ_i when every Δ_i = 0. Without stop_stale: that integral is a lower
//             bound and ∫₀^∞ P(Σ_i (N_i(t) − 1)⁺ < B) dt an upper bound (a busy worker first
//             finishes a stale computation, whose residual is no longer than a fresh one)
//   Ringmaster long run 1/Σ_i 1/E[X_i] exact for R = ∞ (asynchronous SGD, any delays); a lower
//             bound for finite R; exact for finite R with computation stopping when every Δ_i = 0
//             (Poisson arrivals, none discarded). Finite R without stopping: lower bound only.
//   MindFlayer every Δ_i = 0: as Rennala (a cut attempt costs the exponential time it ran, so the
//             successes are a Poisson stream of rate λ_i); Δ_i > 0: no formula (the c-fold sum of
//             truncated exponentials has no numerically stable closed form; docs/theory.md)
//   Malenia   no formula for random delays
// The formulas per update are "per update of the long run" unless said otherwise.

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

// ---- Fixed computation model ------------------------------------------------------------------

/// t(B) = min_m (Σ_{i≤m} 1/τ_(i))^{-1}(B + m). Illegal: empty τ, τ_i ≤ 0 or not finite, B < 1.
[[nodiscard]] double equilibrium_time(std::span<const double> tau, std::int64_t batch);

/// min_m (Σ_{i≤m} 1/τ_(i))^{-1}(B + stale·m): t(B) for stale = 1; for stale = 2 the closed-form
/// bound on T°(B). Same preconditions, stale ≥ 0.
[[nodiscard]] double equilibrium_time(std::span<const double> tau, std::int64_t batch, int stale);

/// T*(B) = min{t : Σ_i ⌊t/τ_i⌋ ≥ B} (skip = 0), or T°(B) = min{t : Σ_i (⌊t/τ_i⌋ − 1)⁺ ≥ B}
/// (skip = 1): the completions of the workers merged in time order (k·τ_i computed as a product,
/// so ties are exact), O((B + skip·n) log n). Same preconditions as equilibrium_time; skip 0 or 1.
[[nodiscard]] double collection_time(std::span<const double> tau, std::int64_t batch, int skip = 0);

/// Malenia SGD with stop_stale from a fresh start: the first t at which every worker has
/// b_i = ⌊t/τ_i⌋ ≥ 1 and Σ_i 1/b_i ≤ n²/S, i.e. (1/n Σ 1/b_i)^{-1} ≥ S/n. Illegal: as above, S < 1.
[[nodiscard]] double malenia_collection_time(std::span<const double> tau, std::int64_t s);

// ---- Random delays ----------------------------------------------------------------------------

/// Worker i's computations take Δ_i + scale_i·Exp(1), i.i.d.; scale_i > 0, Δ_i ≥ 0.
struct ShiftedExponentialWorkers {
  std::vector<double> shift{};
  std::vector<double> scale{};
};

/// The workers of a shifted-exponential delay model of load 1 per worker (any loads: the model's
/// per-worker shift and scale); nullopt for any other model.
[[nodiscard]] std::optional<ShiftedExponentialWorkers> shifted_exponential_workers(
    const DelayModel& delays);

/// ∫₀^∞ P(Σ_i (N_i(t) − skip)⁺ < B) dt with N_i(t) worker i's renewal count from a fresh start:
/// skip = 0 is the exact mean time to collect B gradients at one point from a fresh start (Rennala
/// with stop_stale), skip = 1 the upper bound without stop_stale. P(N_i(t) ≥ c) = P(Gamma(c,
/// scale_i) ≤ t − cΔ_i); Gauss–Kronrod (61 points; each piece to an absolute error of 1e-12 of the
/// whole) on pieces split at the kinks Δ_i and 2Δ_i, truncated where one worker alone has pushed B
/// + skip times with probability 1 − 1e-17. Illegal: no worker, sizes differ, scale ≤ 0, Δ < 0, B <
/// 1, skip outside 0 … 1.
[[nodiscard]] double renewal_collection_mean(const ShiftedExponentialWorkers& workers,
                                             std::int64_t batch,
                                             int skip = 0);

// ---- The update rules -------------------------------------------------------------------------

enum class TimeOptimalMethod { kRennala, kMalenia, kRingmaster, kMindFlayer };

/// The parameters of an update rule (the fields the asynchronous loop's UpdateShape carries).
struct TimeOptimalParameters {
  TimeOptimalMethod method = TimeOptimalMethod::kRennala;
  std::int64_t batch = 1;          ///< Rennala/MindFlayer B, Malenia S
  std::optional<int> max_delay{};  ///< Ringmaster R (nullopt = ∞, asynchronous SGD)
  bool stop_stale = false;         ///< Rennala/Malenia/MindFlayer stop_stale; Ringmaster stopping
  std::vector<double> cutoffs{};   ///< MindFlayer t_i (one per worker)
};

inline constexpr double kNoBound = std::numeric_limits<double>::infinity();

/// Seconds per update in the long run: exact when lower == upper.
struct TimeOptimalPrediction {
  double lower = 0.0;
  double upper = kNoBound;  ///< kNoBound when no upper bound is known
  /// The papers' bound per update where there is one (Rennala 2 t(B), Ringmaster 2 t(R)/R),
  /// nullopt otherwise.
  std::optional<double> paper_bound{};
  std::string formula{};
  [[nodiscard]] bool exact() const { return lower == upper; }
};

/// Fixed computation times τ (one per worker). nullopt when the method has no formula here.
/// Illegal: the preconditions of the functions above; MindFlayer cutoffs not one per worker.
[[nodiscard]] std::optional<TimeOptimalPrediction> predict_time_optimal(
    const TimeOptimalParameters& parameters, std::span<const double> tau);

/// I.i.d. shifted-exponential delays. nullopt when the method has no formula here (Malenia;
/// MindFlayer with some Δ_i > 0).
[[nodiscard]] std::optional<TimeOptimalPrediction> predict_time_optimal(
    const TimeOptimalParameters& parameters, const ShiftedExponentialWorkers& workers);

/// The adapter for a run's delay model: a shifted-exponential model goes to the overload above;
/// nullopt for any other model (a fixed model's caller passes its τ to the first overload).
[[nodiscard]] std::optional<TimeOptimalPrediction> predict_time_optimal(
    const TimeOptimalParameters& parameters, const DelayModel& delays);

}  // namespace stragglersim::sim

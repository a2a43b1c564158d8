#pragma once
// Predicted iteration time and group-erasure probabilities of a scheme (docs/model.md §6), for any
// DelayModel with independent workers.
//
// The iteration time Z is the moment the master stops waiting (seconds after the broadcast):
//   rule all                      Z = max_i T_i
//   rule first_r                  Z = T_(r:n), the r-th arrival
//   rule deadline τ               Z = min(τ, max_i T_i)   (DeadlineStopping also stops once all
//                                                           workers have arrived)
//   rule decodable                uncoded: max_i T_i;  FRC: max_g min_{i∈g} T_i;
//                                 cyclic (CRC, cyclic MDS, exact from any n − s): T_(n−s:n)
//   rule first_r_or_decodable     the earlier of the two; for FRC
//                                 P(Z ≤ t) = P(≥ r arrived by t  or  every group covered by t)
//
// Closed forms (method "closed form") are used when the delay model is a ShiftedExponentialDelay
// with identical workers (shift σ = ℓ·a, tail scale θ = s(ℓ)/λ): with X_(m:n) the m-th order
// statistic of n Exp(1),
//   E[X_(m:n)] = H_n − H_{n−m},   Var[X_(m:n)] = Σ_{i=n−m+1}^{n} 1/i²,
//   Z = σ + θ·X_(m:n) for all / first_r / cyclic decodable, and Z = σ + (θ/d)·X_(G:G) with
//   G = n/d groups for FRC decodable (a group's first arrival is Exp with rate d/θ).
// Every other case (other delay models, non-identical workers, deadlines,
// FRC first_r_or_decodable) is integrated numerically (method "numerical"):
//   E[Z] = c + ∫_c^∞ P(Z > t) dt − ∫_L^c P(Z ≤ t) dt,
//   E[(Z − c)²] = 2∫_c^∞ (t − c) P(Z > t) dt + 2∫_L^c (c − t) P(Z ≤ t) dt,
// centred at the median c (so the variance does not cancel), L = min_i lower_bound(i), with
// adaptive Gauss–Kronrod on finite pieces split at every worker's lower bound (and at the CDF
// jumps of any discrete marginal, DelayModel::atoms) and exp-sinh on the tail after the
// substitution t = c + w·(e^v − 1). When every worker's marginal is purely discrete (a replayed
// trace) nothing is integrated: Z is one of the atoms (or the deadline), and E[Z], Var[Z] are
// exact finite sums Σ_a a·P(Z = a) over the distinct atoms a of all workers, swept in increasing
// order with only the jumping workers updated (each worker's CDF read once per distinct atom of
// its own, shared with the erasure sums below; one evaluation of P(Z ≤ a) per distinct atom; no
// limit on their number).
// P(Z ≤ t) comes from the per-worker CDFs:
// a product for all, the Poisson-binomial distribution of the number arrived for first_r (a DP
// over workers), Π_g (1 − Π_{i∈g} (1 − F_i)) for FRC decodable, and for FRC
// first_r_or_decodable a DP over groups whose state is (arrivals so far capped at r, whether every
// group so far is covered).
// Tails: if P(Z > t) has underflowed to 0, or fallen faster than t^−10, between the 1 − 10⁻⁸
// quantile t₁ and L + 3(t₁ − L), the tail is light and is integrated to ∞ (the moments needed
// exist). Otherwise it is algebraic: the integrals stop at t₁ and continue analytically with
// P(Z > t) ≈ P(Z > t₁)·((t − L)/(t₁ − L))^ρ, ρ the log-log slope measured over that stretch; the
// k-th moment is reported +∞ unless ρ < −k (for Pareto tails of shape α, ρ ≈ −α: the criterion
// α > k up to ~1%).
// Accuracy: ~1e-8 relative for light tails, ~1e-5 for algebraic ones. DelayModel offers only the
// CDF and 1 − F(t) has an absolute error of ~1e-16, which is why the tail is not probed further
// out; moments whose order is within a few tenths of α converge too slowly to be more than
// indicative.
//
// Group erasure (ErasureHead, docs/model.md): q = P(a given group of d workers is entirely unheard
// when the master stops), q₂ = P(two given groups both are). Uncoded codes count each worker as a
// group (d = 1). With identical workers:
//   first_r                q = C(n−d, r)/C(n, r),  q₂ = C(n−2d, r)/C(n, r)   (products, no lgamma)
//   deadline τ             q = p^d,  q₂ = p^{2d},  p = P(T_i > τ)
//   first_r_or_decodable   the same q, q₂ as first_r: the rule can only stop early when every group
//                          is covered, so "g erased" is exactly "no worker of g among the first r"
//   all, decodable         q = q₂ = 0 (exact)
// With non-identical workers the closed forms become averages over groups (pairs of groups) of
// P(g erased) = ∫ P(≥ r of the workers outside g arrived by t) dF_{min_{i∈g} T_i}(t), integrated
// numerically with a central-difference density (for discrete marginals, DelayModel::atoms, an
// exact sum over the atoms of min_{i∈g} T_i, ties counting the others as arrived first, by the
// same sweep);
// deadline rules use Π_{i∈g} P(T_i > τ) exactly.
//
// Replayed rows (method "trace rows"): when the delay model's iterations are the rows of a fixed
// table, each used equally often in the long run (DelayModel::rows(): a trace replayed in cycle,
// bootstrap or block mode), nothing is assumed about independence: E[Z] and sd(Z) are the mean
// and the (population) sd over the rows of each row's stopping time by the rule, q the mean over
// rows and groups of the indicator that the group is unheard when the row stops, q₂ the same over
// pairs of groups (the pairs above). Unheard: under a deadline every member later than τ; under
// first_r and first_r_or_decodable at least r other workers arrived by the group's first arrival
// (ties counting the others first, as the discrete sums). O(T·n log n + T·pairs·(d + log n)).
// PredictionMethod::kNumerical skips it (the marginal path, for comparison). The marginal path
// on a model whose workers are dependent (DelayModel::independent_workers() false) says so in
// its method: "numerical (independent marginals: ...)".
// Cyclic codes whose rule can stop before n − s arrivals (first_r with r < n − s, deadline) decode
// by least squares, not by groups: q and q₂ are NaN there. q₂ is NaN when there is one group.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/scheme.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

/// Assignment family, as far as timing is concerned.
/// kCyclic: load d = s + 1, decodes exactly from any n − s = n − d + 1 workers (CRC, cyclic MDS).
enum class CodeFamily { kUncoded, kFractionalRepetition, kCyclic };

/// What the theory needs to know about a scheme. Illegal: workers < 1, d < 1 (d = 1 for uncoded),
/// FRC with d ∤ n, cyclic with d > n, r outside [1, n] for first_r rules, deadline ≤ 0 for
/// deadline rules, an order that is not a permutation of the workers (or on a cyclic code),
/// loads that are not one positive number per worker.
struct SchemeDescription {
  int workers = 1;
  CodeFamily code = CodeFamily::kUncoded;
  int d = 1;  ///< load / replication; s + 1 for cyclic codes
  RuleKind rule = RuleKind::kAll;
  int r = 1;              ///< first_r and first_r_or_decodable
  double deadline = 0.0;  ///< seconds after the broadcast, deadline rules
  /// Group codes whose groups are not runs of consecutive workers (`proportional`): the workers
  /// in group order, group g being order[g·d … g·d + d − 1] (sim/theory/group_order.h); empty:
  /// group g is workers g·d … g·d + d − 1.
  std::vector<int> order = {};
  /// Per-worker normalised loads where they are not all d (`proportional`); empty: d each.
  std::vector<double> loads = {};
};

/// The theory's view of a scheme's code and rule: the one description the fast path, the
/// predictions and the advice share. Nullopt (with `why`) for codes whose timing the theory does
/// not model (BGC, expander and SGC have random or non-uniform supports) and rules without a shape.
[[nodiscard]] std::optional<SchemeDescription> describe_scheme(const Scheme& scheme,
                                                               std::string* why);

/// Per-worker normalised loads of the scheme's code (its `loads` when given, else d for coded
/// workers and 1 when uncoded): build the delay model passed to predict_iteration_time with
/// these.
[[nodiscard]] std::vector<double> scheme_loads(const SchemeDescription& scheme);

struct IterationTimePrediction {
  double mean = 0.0;  ///< E[Z], simulated seconds (+∞ if it diverges)
  double sd = 0.0;    ///< sqrt(Var[Z]) (+∞ if it diverges)
  double q = 0.0;     ///< group-erasure probability (NaN where undefined, see above)
  double q2 = 0.0;    ///< probability two given groups are both erased (NaN when simulated)
  /// "closed form", "numerical", "trace rows", "numerical (independent marginals: ...)" or
  /// "simulation" (of mean and sd)
  std::string method;
  /// Standard error of `mean`: 0 for closed forms and numerical results, the simulation's
  /// s.e. for "simulation".
  double standard_error = 0.0;
  std::uint64_t draws = 0;            ///< simulated iterations ("simulation" only)
  double estimated_operations = 0.0;  ///< the exact computation's cost estimate (0: closed form)
  double operations = 0.0;            ///< operations the exact computation took ("numerical")
  std::string fallback_reason;        ///< why "simulation" was used
};

/// kAuto uses closed forms where they exist; kNumerical forces the numerical path for the
/// iteration time and the group-erasure probabilities (for cross-checks).
enum class PredictionMethod { kAuto, kNumerical };

/// A seeded simulation of the iteration time (the delay-only fast path): mean, sd, the mean's
/// standard error, the erased fraction of groups (NaN without groups) and the draws.
struct SimulatedIterationTime {
  double mean = 0.0;
  double sd = 0.0;
  double standard_error = 0.0;
  double q = 0.0;
  std::uint64_t draws = 0;
};
using IterationTimeSimulation = std::function<SimulatedIterationTime()>;

/// The prediction a simulation gives: its mean, sd, standard error, erased fraction q and draws,
/// method "simulation", q2 NaN; `estimated` is the exact computation's cost estimate it replaced
/// and `why` the reason.
[[nodiscard]] IterationTimePrediction simulated_prediction(const SimulatedIterationTime& s,
                                                           double estimated,
                                                           std::string why);

/// Operations (one DP multiply-add each; a CDF evaluation counts 50) the exact computation may
/// take before the prediction simulates instead: about a second on one core.
constexpr double kExactOperationLimit = 2e8;
/// While it runs, the exact computation is stopped (and simulated) past this multiple of the
/// limit, whatever the estimate said.
constexpr double kWorkCapFactor = 4.0;

struct PredictionOptions {
  PredictionMethod method = PredictionMethod::kAuto;
  /// Workers with equal marginals (same_marginal: lower bound, mean, variance and CDF at seven
  /// points equal to 1e-14) form classes: each class's CDF is read once per point and the
  /// erasure integrals are computed once per distinct multiset of classes.
  bool merge_classes = true;
  double operation_limit = kExactOperationLimit;
  /// When set, the fallback: used when the estimate exceeds operation_limit or the computation
  /// passes kWorkCapFactor·operation_limit. When empty, the exact computation always runs.
  IterationTimeSimulation simulate;
};

/// Predicts the iteration time and group erasures of `scheme` under `delay` (whose workers()
/// must equal scheme.workers; its loads should be scheme_loads(scheme)).
[[nodiscard]] IterationTimePrediction predict_iteration_time(
    const SchemeDescription& scheme,
    const DelayModel& delay,
    PredictionMethod method = PredictionMethod::kAuto);
/// The same with options: the cost estimate, classes and the simulation fallback.
[[nodiscard]] IterationTimePrediction predict_iteration_time(const SchemeDescription& scheme,
                                                             const DelayModel& delay,
                                                             const PredictionOptions& options);

/// P(Z ≤ t) and P(Z > t), each computed without subtracting the other from 1.
struct StopProbability {
  double stopped = 0.0;
  double waiting = 1.0;
};

/// The distribution of the iteration time Z at t (the integrand of the numerical path).
[[nodiscard]] StopProbability stop_probability(const SchemeDescription& scheme,
                                               const DelayModel& delay,
                                               double t);

/// E[Z] and sd(Z) of a stopping time from its distribution P(Z ≤ t) by the numerical path above
/// (centred at the median, Gauss–Kronrod pieces split at `breaks`, whose smallest is Z's lower
/// bound, and the tail probed as described), Z ≤ upper (a deadline, or +∞). For stopping times
/// the SchemeDescription does not describe (multi-message, sim/theory/multi_message_theory.h).
[[nodiscard]] std::pair<double, double> stopping_time_moments(
    const std::function<StopProbability(double)>& distribution,
    std::vector<double> breaks,
    double upper);

/// The p-quantile of the iteration time, min{t : P(Z ≤ t) ≥ p} for p ∈ (0, 1): over the rows of
/// a replayed table (DelayModel::rows(): the ⌈p·T⌉-th smallest row stop) exactly; otherwise by
/// bisection on stop_probability (independent workers with the model's marginals) to ~1e-13
/// relative, +∞ when P(Z ≤ t) never reaches p.
[[nodiscard]] double iteration_time_quantile(const SchemeDescription& scheme,
                                             const DelayModel& delay,
                                             double p);

/// Whether predict_iteration_time (method auto) has a closed form for the scheme: i.i.d. shifted
/// exponential delays and an order-statistic stop (all, first_r, uncoded decodable) or exact FRC.
/// Its cost is then O(1) in n (O(r) for small orders); the numerical path is O(n) per point.
[[nodiscard]] bool has_closed_form(const SchemeDescription& scheme, const DelayModel& delay);

/// H_n = Σ_{i=1}^{n} 1/i (H_0 = 0).
[[nodiscard]] double harmonic_number(int n);
/// E[X_(m:n)] = H_n − H_{n−m} for n i.i.d. Exp(1), 0 ≤ m ≤ n.
[[nodiscard]] double exponential_order_statistic_mean(int n, int m);
/// Var[X_(m:n)] = Σ_{i=n−m+1}^{n} 1/i².
[[nodiscard]] double exponential_order_statistic_variance(int n, int m);
/// C(n − k, r) / C(n, r) = Π_{j<k} (n − r − j)/(n − j): the probability that k given workers are
/// all outside a uniformly random r-subset of n. Illegal: 0 ≤ k, r ≤ n fails.
[[nodiscard]] double erasure_probability_first_r(int n, int k, int r);

}  // namespace stragglersim::sim

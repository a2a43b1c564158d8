#pragma once
// Exact order-statistics sampling for delay-only runs (docs/model.md "Order-statistics
// sampler"). When every worker's delay is the same shifted exponential T = shift + scale·X,
// X ~ Exp(1), independent over workers and iterations, the stopping time of the built-in rules
// depends on the n delays only through a few order statistics and counts, which are drawn
// directly instead of drawing n delays:
//   all                  the maximum of n exponentials: one draw, X = −log(1 − e^{−E/n})
//   first_r              the r-th smallest: Rényi's spacings Σ_{i<r} E_i/(n − i) for r ≤ 32,
//                        else log1p(G_r / G_{n−r+1}) (the Beta(r, n−r+1) order statistic as a
//                        ratio of two gamma draws), O(1); for FRC the groups touched by the
//                        uniform r-subset, by an integer chain for small r, else (d = 2) from
//                        their exact pmf tabulated once per run (Walker's alias method, O(1)),
//                        else column by column of the (group × slot) grid with 2d − 1
//                        hypergeometric draws
//   deadline τ           finishers ~ Binomial(n, F(τ)); the maximum given all n finished
//   decodable (groups)   the maximum of n/d group minima, each shift + (scale/d)·Exp(1)
//   first_r_or_decodable the decodable draw with its class counts (groups with j heard); if more
//                        than r were heard by then, the r-th arrival came first: the r-th of the
//                        heard − 1 earlier i.i.d. truncated times (a Beta as two gammas) and the
//                        groups a uniform r-subset of them hits (hypergeometric split over the
//                        classes, then groups hit within each): O(d²), no arrival order
// Counts (workers heard, groups covered) come from binomials, multinomials over how many of a
// group's d workers arrived (class probabilities by a division-only recursion, no special
// functions), hypergeometrics, or that arrival chain; the drain policy's wall time uses the
// memoryless tail (every worker not heard by time t ≥ shift arrives at t + scale·Exp(1)). Cost per
// iteration: O(1) for all, deadline (uncoded), decodable (uncoded) and first_r (uncoded); O(d)
// for deadline with FRC; O(min(d, n/d)) for decodable with FRC; O(min(r, d)) for the groups
// covered by first_r with FRC (d > 1); O(d²) for first_r_or_decodable. Delay-only runs report
// counts, not heard sets, so the identity of the workers heard (a uniform subset, independent of
// the times) is never drawn.

#include <boost/random/discrete_distribution.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codes/gradient_code.h"
#include "models/base/random_stream.h"
#include "sim/delays/delay_model.h"
#include "sim/simulated_cluster.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

/// How a delay-only run draws an iteration: every worker's delay, or the order statistics.
enum class Sampler { kWorkers, kOrderStatistics };

/// Why order-statistics sampling would not be exact for this run (a sentence for the
/// /sampler error), or nullopt when it is: needs i.i.d. shifted-exponential delays (one load
/// for every worker), a built-in rule, a group code (uncoded, frc) for the decodable rules, and
/// a policy other than `finish` (whose carried-over work makes workers differ).
[[nodiscard]] std::optional<std::string> order_statistics_unavailable(
    const DelayModel& delays,
    const StoppingRule& rule,
    const codes::GradientCode& code,
    StragglerPolicy policy);

/// The maximum of m ≥ 1 i.i.d. Exp(1): −log(1 − U^{1/m}) computed as −log(−expm1(−E/m)) with
/// E ~ Exp(1), accurate to a few ulps for any m up to 2^63.
[[nodiscard]] double max_of_exponentials(std::uint64_t m, RandomEngine& rng);

/// The r-th smallest of n i.i.d. Exp(1) (1 ≤ r ≤ n): spacings for r ≤ kSpacingOrders, the
/// gamma ratio above (see the file comment). Exact in distribution.
[[nodiscard]] double exponential_order_statistic(std::uint64_t n,
                                                 std::uint64_t r,
                                                 RandomEngine& rng);

/// Orders up to which exponential_order_statistic sums spacings.
inline constexpr std::uint64_t kSpacingOrders = 32;

/// The number of "good" items in a uniform `sample`-subset of `good` + `bad` items
/// (hypergeometric), exact in distribution: one step per item for samples up to
/// kHypergeometricSteps (of the sample or its complement), else Stadlober's ratio-of-uniforms
/// (HRUA) rejection, O(1) expected, its log-factorial differences evaluated without cancellation
/// so the acceptance test keeps ~1e-13 absolute accuracy at populations up to 2^62.
[[nodiscard]] std::int64_t hypergeometric(std::int64_t good,
                                          std::int64_t bad,
                                          std::int64_t sample,
                                          RandomEngine& rng);

/// Sample sizes up to which hypergeometric walks the items one by one.
inline constexpr std::int64_t kHypergeometricSteps = 16;

/// P(H = j | H ≥ j) for H ~ Binomial(d, p), p = 1 − e^{−x} (x > 0), j = 0 … d − 1, written to
/// out[0 … d − 1]: the backward recursion c_d = 1, c_j = c_{j+1}/(c_{j+1} + (e^x − 1)(d − j)/(j +
/// 1)) (ratios of binomial terms; no cancellation, no special function).
void binomial_class_probabilities(int d, double x, std::span<double> out);

/// The pmf of the groups covered by a uniform r-subset of g groups of 2 workers, on the
/// contiguous range of covered counts it returns as `first` (the rest of the vector). With a
/// groups of one worker heard and b of two (a + 2b = r, covered c = a + b), P(c) ∝
/// C(g, b)·C(g − b, a)·2^a, so P(c + 1)/P(c) = 4b(g − c)/((a + 1)(a + 2)); the pmf is
/// log-concave, walked from its mean in both directions by that ratio until a term falls below
/// 1e-30 of the largest (the mass left out is below 1e-25), then normalised. Illegal:
/// 1 ≤ r ≤ 2g fails.
struct CoveredPmf {
  std::int64_t first = 0;
  std::vector<double> probabilities;
};
[[nodiscard]] CoveredPmf pairs_covered_pmf(std::int64_t groups, std::int64_t r);

/// One iteration drawn by the sampler, in simulated seconds.
struct OrderStatisticDraw {
  double stop = 0.0;         ///< iteration time
  double wall = 0.0;         ///< until the last worker answers (drain), else the stop
  std::int64_t heard = 0;    ///< workers heard by the stop
  std::int64_t covered = 0;  ///< groups covered (group codes; heard for uncoded), else 0
};

class OrderStatisticSampler {
 public:
  /// `shift`, `scale`: every worker's T = shift + scale·Exp(1). `groups` / `d`: the code's n/d
  /// groups of d (uncoded: d = 1; a code without groups: has_groups false, d = 1). Illegal: a
  /// shape this sampler does not cover (see order_statistics_unavailable), scale ≤ 0.
  OrderStatisticSampler(double shift,
                        double scale,
                        const StoppingShape& shape,
                        std::int64_t workers,
                        int d,
                        bool has_groups,
                        StragglerPolicy policy);

  /// Draws the next iteration from `rng`.
  [[nodiscard]] OrderStatisticDraw draw(RandomEngine& rng) const;

 private:
  [[nodiscard]] OrderStatisticDraw draw_all(RandomEngine& rng) const;
  [[nodiscard]] OrderStatisticDraw draw_first_r(RandomEngine& rng) const;
  [[nodiscard]] OrderStatisticDraw draw_deadline(RandomEngine& rng) const;
  [[nodiscard]] OrderStatisticDraw draw_decodable(RandomEngine& rng) const;
  /// The decodable stop x (units of scale after the shift) and the workers heard by then; with
  /// `by_heard` (d + 1 slots), by_heard[j] = the groups other than the last covered one with j
  /// workers heard (j = 1 … d).
  [[nodiscard]] double decodable_stop(RandomEngine& rng,
                                      std::int64_t& heard,
                                      std::span<std::int64_t> by_heard) const;
  [[nodiscard]] OrderStatisticDraw draw_first_r_or_decodable(RandomEngine& rng) const;
  /// Drain's wall time: the stop plus the last of the `unheard` workers, memoryless beyond it.
  [[nodiscard]] double wall_after(double stop, std::int64_t unheard, RandomEngine& rng) const;

  double shift_;
  double scale_;
  StoppingShape shape_;
  std::int64_t n_;
  int d_;
  std::int64_t groups_;  ///< n/d, or 0 without groups
  StragglerPolicy policy_;
  /// Deadline: P(T ≤ τ) and, for d > 1, the conditional class probabilities
  /// P(H = j | H ≥ j) of a group's finisher count H ~ Binomial(d, p), j = 0..d−1.
  double deadline_p_ = 0.0;
  std::vector<double> deadline_class_;
  /// first_r with FRC d = 2 beyond the integer chain: the groups covered, first + an alias draw.
  std::int64_t covered_first_ = 0;
  std::optional<boost::random::discrete_distribution<std::int64_t, double>> covered_;
};

}  // namespace stragglersim::sim

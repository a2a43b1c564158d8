#pragma once
// The moments of a stopping time from its distribution P(Z ≤ t)
// (sim/theory/iteration_time_theory.h, "numerical"): adaptive Gauss–Kronrod on pieces split at
// every break, exp-sinh on a light tail, the analytic continuation of an algebraic one, quantiles
// by bracketing and bisection, and the exact sums over the atoms of purely discrete marginals. Used
// by the theory of sim/theory/ only.

#include <functional>
#include <limits>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/stop_distribution.h"

namespace stragglersim::sim {

/// Relative tolerance of every quadrature: far below the 1e-6 the closed forms are checked to.
inline constexpr double kQuadratureTolerance = 1e-11;
/// Integrals of numerically differentiated CDFs carry ~1e-12 relative noise: a tolerance below it
/// would only exhaust the subdivision depth.
inline constexpr double kDensityTolerance = 1e-9;

using Integrand = std::function<double(double t, double lo, double hi)>;

/// Where the iteration time lives: integration starts at `lower`, pieces break at every worker's
/// lower bound, and the infinite tail is mapped with scale `width`.
struct Support {
  double lower = 0.0;
  double upper = kInfinity;  ///< the deadline, if any
  double centre = 0.0;       ///< the median of Z
  double q90 = 0.0;          ///< the 90% quantile of Z
  double width = 1.0;        ///< tail scale, q90 − median (or a fallback)
  std::vector<double> breaks;
};

/// A jump of a discrete marginal: worker's CDF reaches `cdf` at `at`.
struct Jump {
  double at = 0.0;
  int worker = 0;
  double cdf = 0.0;
};
using Jumps = std::vector<Jump>;

/// Every distinct atom of every worker with the CDF there, in increasing order of the atom (ties
/// by worker): Σ_i (distinct atoms of worker i) CDF evaluations, the only ones the discrete
/// theory makes. Empty unless every marginal is purely discrete.
[[nodiscard]] Jumps distinct_atoms(const DelayModel& delay);

/// min{t ∈ [lower, upper] : P(Z ≤ t) ≥ p} to ~1e-14 relative (upper when never reached).
[[nodiscard]] double quantile(const std::function<StopProbability(double)>& dist,
                              double lower,
                              double upper,
                              double p);

/// The breaks of a delay model: every worker's lower bound, and (a model mixing discrete and
/// continuous workers) every atom, so that no quadrature piece straddles a jump.
[[nodiscard]] std::vector<double> delay_breaks(const DelayModel& delay);

/// Z ≥ min(breaks), pieces split at `breaks`, Z ≤ upper.
[[nodiscard]] Support make_support(const std::function<StopProbability(double)>& dist,
                                   std::vector<double> breaks,
                                   double upper);
/// The same with the breaks of `delay` (delay_breaks).
[[nodiscard]] Support make_support(const std::function<StopProbability(double)>& dist,
                                   const DelayModel& delay,
                                   double upper);

/// ∫_a^b g over the support's pieces (b may be +∞: the tail starts at the last break).
[[nodiscard]] double integrate_range(const Integrand& g,
                                     const Support& s,
                                     double a,
                                     double b,
                                     double tolerance = kQuadratureTolerance);

struct TimeMoments {
  double mean = 0.0;
  double sd = 0.0;
};

/// E[Z] and sd(Z) from P(Z ≤ t) by the numerical path of sim/theory/iteration_time_theory.h.
[[nodiscard]] TimeMoments numerical_moments(const std::function<StopProbability(double)>& dist,
                                            std::vector<double> breaks,
                                            double upper);

/// Every marginal purely discrete: Z is one of the delays (or the deadline), so E[Z] and Var[Z]
/// are finite sums over the distinct atoms, with P(Z = a) = P(Z ≤ a) − P(Z ≤ a⁻). The sweep
/// raises t through `jumps` (distinct_atoms) and changes only the workers that jump there: one
/// evaluation of P(Z ≤ t) (O(n), O(n·r) for first_r) per distinct atom below the deadline.
[[nodiscard]] TimeMoments discrete_moments(const StopDistribution& stop,
                                           const Jumps& jumps,
                                           double upper);

}  // namespace stragglersim::sim

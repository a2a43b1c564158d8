#pragma once
// Profile likelihood over the shift of the three-parameter shifted families (fit/delay_fit.h:
// pareto, lognormal, gamma, weibull): T = c + Y, c ∈ [0, min t) searched on a grid in
// log(1 − c/min t) then by Brent, the tail's two parameters at each c in closed form or one
// equation. Used by the estimators of fit/ only.

#include <Eigen/Core>
#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fit/fit_support.h"

namespace stragglersim::sim {

/// The shift c ∈ [0, low) (low = min t) that maximises a profile log-likelihood, `negative(c)`
/// being minus its value: an 81-point grid in u = log(1 − c/low) ∈ [log 1e-8, 0], then Brent
/// around the best point. With `polish` (minus the profile over every time, `negative` being
/// over the search sample), Brent again on the polish within a grid step of the sample's best.
/// at_bound: the best is the grid's end c = low(1 − 1e-8), where the law's scale collapses onto
/// the smallest time (a degenerate fit).
struct ProfiledShift {
  double shift = 0.0;
  bool at_bound = false;
};

/// The grid and Brent search above of `negative` (minus the profile log L) on [0, low), low = min
/// t; with `polish` (minus the profile over every time), Brent again on it near the best.
[[nodiscard]] ProfiledShift profile_shift(double low,
                                          const std::function<double(double)>& negative,
                                          const std::function<double(double)>* polish = nullptr);

/// profile_shift of sorted times with `log_likelihood(data, c)` the profile log L of `data` at
/// shift c: the grid and its Brent step on the search sample, the polish on every time.
[[nodiscard]] ProfiledShift profile_shift_over(
    const std::vector<double>& sorted,
    const std::function<double(const std::vector<double>&, double)>& log_likelihood);

/// The logarithms of the excesses t − c of sorted times (all > 0 for c < min t), and the means
/// of the excesses and of their logarithms.
struct Excess {
  std::vector<double> log_x;
  double mean = 0.0;
  double mean_log = 0.0;
};

[[nodiscard]] Excess excess_over(const std::vector<double>& sorted, double c);

/// The checks shared by the three-parameter shifted families; empty when they can be fitted.
[[nodiscard]] std::string shifted_family_problem(const std::vector<double>& sorted);

/// The MLE of a shifted family's two tail parameters at shift c and the profile log-likelihood
/// there (log L at those parameters, in closed form from the pass's sums).
struct AtShift {
  double first = 0.0;
  double second = 0.0;
  double log_likelihood = -kInf;
};

/// A three-parameter shifted family: its name and the keys of its two tail parameters.
struct ShiftedFamily {
  std::string name;
  std::array<const char*, 2> keys;
};

/// Fits T = c + Y by profile likelihood: `at(sorted, c)` is the MLE of Y's two parameters at
/// shift c with the profile log L, `ll(sorted, (c, p1, p2))` the full log-likelihood (its
/// information gives the standard errors), `tail_cdf((c, p1, p2), y)` = P(Y ≤ y); c by
/// profile_shift on the search sample, polished on every time, flagged at its bound.
[[nodiscard]] FamilyFit fit_profiled(
    const ShiftedFamily& family,
    std::span<const double> times,
    const std::function<double(const std::vector<double>&, const Eigen::VectorXd&)>& ll,
    const std::function<AtShift(const std::vector<double>&, double)>& at,
    const std::function<double(const Eigen::Vector3d&, double)>& tail_cdf);

}  // namespace stragglersim::sim

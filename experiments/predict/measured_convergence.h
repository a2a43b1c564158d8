#pragma once
// Statistics of repeated seeded runs for `theory --measure` (docs/convergence.md, "Measured rate
// and floor"): the standard error of the runs' sample standard deviation by a bootstrap over
// runs, and a log-linear fit of the linear rate and the floor of the mean gap with confidence
// intervals over seeds.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace stragglersim::experiments {

/// Bootstrap standard error of the sample standard deviation (n − 1 divisor) of `x`: the standard
/// deviation of the sample sd over `resamples` resamples of x with replacement, drawn from a
/// stream seeded with `seed` (same seed, same value). 0 for fewer than two values.
[[nodiscard]] double bootstrap_sd_se(std::span<const double> x,
                                     std::uint64_t seed,
                                     int resamples = 400);

/// A two-sided 95% interval.
struct Interval {
  double low = 0.0;
  double high = 0.0;
};

/// The measured floor and linear rate of E[f(x_t) − f*] from gaps[t][run] (t = 0..T, N ≥ 2
/// runs). Floor: the mean over runs of each run's average gap on the last quarter
/// t ∈ [⌈3T/4⌉, T], with a Student-t interval over runs. Rate: the rate of the mean gap, exp of the
/// least-squares slope of log(ḡ(t) − floor) on t over the decay window [1, t_end] (t_end the last t
/// before the mean excess ḡ(t) − floor first falls below max(floor, 3·sd over runs of gap(T),
/// 1e-8·ḡ(0)), so that the excess is well above a single run's noise), as curve_rate_and_floor of
/// the mean; its interval the 2.5 % and 97.5 % percentiles of the same fit on 400 resamples of the
/// runs (floor and mean recomputed; a fixed stream). The rate of the mean, not the mean of per-run
/// rates: E[f(x_t) − f*] is what the theorem bounds and the exact curve gives, and by Jensen the
/// two differ. `rate` is nullopt when the window has fewer than 3 points.
struct RateFloorFit {
  double floor = 0.0;
  Interval floor_interval;
  int floor_first = 0;  ///< first t of the floor window
  std::optional<double> rate;
  Interval rate_interval;
  int fit_last = 0;  ///< t_end of the decay window (0 when no rate)
  int runs = 0;
};
[[nodiscard]] std::optional<RateFloorFit> fit_rate_and_floor(
    const std::vector<std::vector<double>>& gaps);

/// The floor and rate of one known curve (the exact least-squares E[f(x_t) − f*]) on the windows
/// a measured fit chose, so the two compare like for like: floor = the curve's mean over
/// t ∈ [floor_first, T]; rate = exp of the least-squares slope of log(curve(t) − floor) on
/// t ∈ [1, fit_last] (points with a non-positive excess left out). `rate` is nullopt when fewer
/// than 3 points remain. Illegal: floor_first outside [1, T], fit_last > T.
struct CurveRateFloor {
  double floor = 0.0;
  std::optional<double> rate;
};
[[nodiscard]] CurveRateFloor curve_rate_and_floor(std::span<const double> curve,
                                                  int floor_first,
                                                  int fit_last);

}  // namespace stragglersim::experiments

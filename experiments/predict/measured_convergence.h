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
/// t ∈ [⌈3T/4⌉, T], with a Student-t interval over runs. Rate: each run's least-squares slope of
/// log(gap_run(t) − floor) on t over the decay window [1, t_end] (t_end the last t before the
/// mean excess ḡ(t) − floor first falls below max(floor, 3·sd over runs of gap(T), 1e-8·ḡ(0)),
/// so that the excess is well above a single run's noise); rate = exp(mean slope), the interval
/// exp(mean ± t·se) over runs (points with a non-positive excess are left out of a run's fit).
/// `rate` is nullopt when the window has fewer than 3 points.
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

}  // namespace stragglersim::experiments

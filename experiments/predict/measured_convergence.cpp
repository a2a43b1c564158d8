#include "experiments/predict/measured_convergence.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <tuple>

#include "models/base/invariant.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

/// Seed of the rate's bootstrap over runs.
constexpr std::uint64_t kRateBootstrapSeed = 0x5eedf17;

/// Mean and sample sd (n − 1 divisor), two passes.
std::pair<double, double> mean_sd(std::span<const double> x) {
  const auto n = static_cast<double>(x.size());
  double mean = 0.0;
  for (const double v : x) {
    mean += v;
  }
  mean /= n;
  double m2 = 0.0;
  for (const double v : x) {
    m2 += (v - mean) * (v - mean);
  }
  return {mean, x.size() > 1 ? std::sqrt(m2 / (n - 1.0)) : 0.0};
}

/// mean ± t_{0.975, n−1}·sd/√n of `x` (n ≥ 2).
std::pair<double, Interval> mean_interval(std::span<const double> x) {
  const auto [mean, sd] = mean_sd(x);
  const auto n = static_cast<double>(x.size());
  const double t = boost::math::quantile(boost::math::students_t(n - 1.0), 0.975);
  const double half = t * sd / std::sqrt(n);
  return {mean, {mean - half, mean + half}};
}

/// Least-squares slope of y on t (nullopt below 3 points).
std::optional<double> slope(const std::vector<double>& t, const std::vector<double>& y) {
  double st = 0.0;
  double sy = 0.0;
  double n = 0.0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    st += t[i];
    sy += y[i];
    n += 1.0;
  }
  if (n < 3.0) {
    return std::nullopt;
  }
  double stt = 0.0;
  double sty = 0.0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    stt += (t[i] - st / n) * (t[i] - st / n);
    sty += (t[i] - st / n) * (y[i] - sy / n);
  }
  return sty / stt;
}

/// The floor and rate of the mean over `pick`'s runs (indices into gaps[t], repeats allowed).
std::optional<double> rate_of_mean(const std::vector<std::vector<double>>& gaps,
                                   std::span<const std::size_t> pick,
                                   int floor_first,
                                   int fit_last) {
  std::vector<double> curve(gaps.size(), 0.0);
  for (std::size_t t = 0; t < gaps.size(); ++t) {
    for (const std::size_t i : pick) {
      curve[t] += gaps[t][i] / static_cast<double>(pick.size());
    }
  }
  return curve_rate_and_floor(curve, floor_first, fit_last).rate;
}

/// The rate of the mean gap over all runs, and the 2.5 % and 97.5 % percentiles of that rate over
/// 400 resamples of the runs (a fixed stream: same runs, same interval).
std::pair<std::optional<double>, Interval> mean_curve_rate(
    const std::vector<std::vector<double>>& gaps, int floor_first, int fit_last) {
  const std::size_t runs = gaps.front().size();
  std::vector<std::size_t> pick(runs);
  for (std::size_t i = 0; i < runs; ++i) {
    pick[i] = i;
  }
  const auto rate = rate_of_mean(gaps, pick, floor_first, fit_last);
  if (!rate) {
    return {std::nullopt, {}};
  }
  constexpr int kResamples = 400;
  RandomEngine rng(kRateBootstrapSeed);
  boost::random::uniform_int_distribution<std::size_t> draw(0, runs - 1);
  std::vector<double> rates;
  for (int b = 0; b < kResamples; ++b) {
    for (std::size_t& i : pick) {
      i = draw(rng);
    }
    if (const auto r = rate_of_mean(gaps, pick, floor_first, fit_last)) {
      rates.push_back(*r);
    }
  }
  std::sort(rates.begin(), rates.end());
  const auto at = [&](double q) {
    return rates[static_cast<std::size_t>(q * static_cast<double>(rates.size() - 1))];
  };
  return {rate, rates.empty() ? Interval{*rate, *rate} : Interval{at(0.025), at(0.975)}};
}

}  // namespace

double bootstrap_sd_se(std::span<const double> x, std::uint64_t seed, int resamples) {
  if (x.size() < 2 || resamples < 2) {
    return 0.0;
  }
  RandomEngine rng(seed);
  boost::random::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
  std::vector<double> draw(x.size());
  std::vector<double> sds;
  sds.reserve(static_cast<std::size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    for (double& v : draw) {
      v = x[pick(rng)];
    }
    sds.push_back(mean_sd(draw).second);
  }
  return mean_sd(sds).second;
}

std::optional<RateFloorFit> fit_rate_and_floor(const std::vector<std::vector<double>>& gaps) {
  if (gaps.size() < 5 || gaps.front().size() < 2) {
    return std::nullopt;
  }
  const auto last = static_cast<int>(gaps.size()) - 1;
  const std::size_t runs = gaps.front().size();
  RateFloorFit out;
  out.runs = static_cast<int>(runs);
  out.floor_first = (3 * last + 3) / 4;
  std::vector<double> plateau(runs, 0.0);
  for (int t = out.floor_first; t <= last; ++t) {
    for (std::size_t i = 0; i < runs; ++i) {
      plateau[i] += gaps[static_cast<std::size_t>(t)][i] / (last - out.floor_first + 1.0);
    }
  }
  std::tie(out.floor, out.floor_interval) = mean_interval(plateau);
  const double noise = mean_sd(gaps.back()).second;
  const double start = mean_sd(gaps.front()).first;
  const double threshold = std::max({out.floor, 3.0 * noise, 1e-8 * start});
  while (out.fit_last < out.floor_first &&
         mean_sd(gaps[static_cast<std::size_t>(out.fit_last) + 1]).first - out.floor > threshold) {
    ++out.fit_last;
  }
  if (out.fit_last < 3) {
    out.fit_last = 0;
    return out;
  }
  // The rate of the mean gap (what the theorem bounds), on the runs as drawn, then on resamples of
  // the runs (floor and curve recomputed) for its percentile interval.
  const auto [rate, interval] = mean_curve_rate(gaps, out.floor_first, out.fit_last);
  if (!rate) {
    out.fit_last = 0;
    return out;
  }
  out.rate = rate;
  out.rate_interval = interval;
  return out;
}

CurveRateFloor curve_rate_and_floor(std::span<const double> curve, int floor_first, int fit_last) {
  const auto last = static_cast<int>(curve.size()) - 1;
  STRAGGLERSIM_ASSERT(floor_first >= 1 && floor_first <= last && fit_last <= last,
                      "curve windows must lie within the curve");
  CurveRateFloor out;
  for (int t = floor_first; t <= last; ++t) {
    out.floor += curve[static_cast<std::size_t>(t)] / (last - floor_first + 1.0);
  }
  std::vector<double> ts;
  std::vector<double> ys;
  for (int t = 1; t <= fit_last; ++t) {
    const double excess = curve[static_cast<std::size_t>(t)] - out.floor;
    if (excess > 0.0) {
      ts.push_back(t);
      ys.push_back(std::log(excess));
    }
  }
  if (const auto s = slope(ts, ys)) {
    out.rate = std::exp(*s);
  }
  return out;
}

}  // namespace stragglersim::experiments

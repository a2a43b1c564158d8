// The statistics of `theory --measure`: the bootstrap standard error of a sample sd held against
// the simulated sampling distribution of the sd of exponential samples (skewed, kurtosis 9), and
// the rate-and-floor fit against curves of known rate and floor.

#include "experiments/predict/measured_convergence.h"

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

double average(const std::vector<double>& x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

/// Σ (x_i − mean)^k.
double central_sum(const std::vector<double>& x, int k) {
  const double mean = average(x);
  return std::accumulate(
      x.begin(), x.end(), 0.0, [&](double acc, double v) { return acc + std::pow(v - mean, k); });
}

double sample_sd(const std::vector<double>& x) {
  return std::sqrt(central_sum(x, 2) / (static_cast<double>(x.size()) - 1.0));
}

std::vector<double> exponential_sample(RandomEngine& rng, int n) {
  boost::random::exponential_distribution<double> exp1(1.0);
  std::vector<double> x(static_cast<std::size_t>(n));
  for (double& v : x) {
    v = exp1(rng);
  }
  return x;
}

/// The delta method with the sample kurtosis, √((μ̂₄ − s⁴)/n)/(2s): the estimator replaced.
double delta_method_se(const std::vector<double>& x) {
  const auto n = static_cast<double>(x.size());
  const double s = sample_sd(x);
  return std::sqrt(std::max(0.0, central_sum(x, 4) / n - std::pow(s, 4)) / n) / (2.0 * s);
}

}  // namespace

TEST_CASE("experiments: the bootstrap sd error matches the spread of exponential sample sds",
          "[experiments][theory][measure]") {
  constexpr int n = 200;  // the runs of a typical `theory --measure 200`
  RandomEngine rng(derive_seed(41, 1));
  // The true standard deviation of s over samples of n Exp(1) values, simulated directly.
  std::vector<double> sds;
  for (int k = 0; k < 4000; ++k) {
    sds.push_back(sample_sd(exponential_sample(rng, n)));
  }
  const double truth = sample_sd(sds);
  // Its own Monte Carlo error: se(sd of 4000) ≈ truth·√((κ_s − 1)/4000)/2, well under 3%.
  double bootstrap = 0.0;
  double delta = 0.0;
  constexpr int samples = 200;
  for (int k = 0; k < samples; ++k) {
    const std::vector<double> x = exponential_sample(rng, n);
    bootstrap += bootstrap_sd_se(x, derive_seed(43, static_cast<std::uint64_t>(k))) / samples;
    delta += delta_method_se(x) / samples;
  }
  INFO("truth " << truth << " bootstrap " << bootstrap << " delta " << delta);
  // Both understate the truth by about 9% here (the sample kurtosis of Exp(1) is biased low at
  // n = 200), and agree with each other to 2%: the bootstrap is no better than the delta method.
  CHECK(bootstrap <= truth);
  CHECK(std::abs(bootstrap - truth) <= 0.15 * truth);
  CHECK(std::abs(bootstrap - delta) <= 0.02 * truth);
  // Same seed, same value; fewer than two values have no spread.
  const std::vector<double> x = exponential_sample(rng, 30);
  CHECK(bootstrap_sd_se(x, 5) == bootstrap_sd_se(x, 5));
  CHECK(bootstrap_sd_se(std::vector<double>{1.0}, 5) == 0.0);
}

TEST_CASE("experiments: the rate and floor fit recovers a noisy geometric curve",
          "[experiments][theory][measure]") {
  // gap_i(t) = floor·(1 + 0.2 z_it) + A_i·ρ^t with A_i = exp(0.3 y_i): rate ρ, floor `floor`.
  constexpr double rho = 0.9;
  constexpr double floor = 1e-4;
  constexpr int runs = 50;
  constexpr int iterations = 400;
  RandomEngine rng(derive_seed(47, 1));
  boost::random::normal_distribution<double> z;
  std::vector<double> scale(runs);
  for (double& a : scale) {
    a = std::exp(0.3 * z(rng));
  }
  std::vector<std::vector<double>> gaps(iterations + 1, std::vector<double>(runs));
  for (int t = 0; t <= iterations; ++t) {
    for (int i = 0; i < runs; ++i) {
      gaps[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)] =
          floor * (1.0 + 0.2 * z(rng)) + scale[static_cast<std::size_t>(i)] * std::pow(rho, t);
    }
  }
  const auto fit = fit_rate_and_floor(gaps);
  REQUIRE(fit);
  REQUIRE(fit->rate);
  CHECK(fit->floor_first == 300);
  CHECK(fit->floor_interval.low <= floor);
  CHECK(fit->floor_interval.high >= floor);
  CHECK(fit->floor == Approx(floor).epsilon(0.02));
  // The decay window ends where the mean excess 1.05·ρ^t reaches the floor (t ≈ 88).
  CHECK(fit->fit_last > 80);
  CHECK(fit->fit_last <= 88);
  CHECK(*fit->rate == Approx(rho).epsilon(0.01));
  CHECK(fit->rate_interval.low < fit->rate_interval.high);
  // A flat curve has a floor and no rate.
  const std::vector<std::vector<double>> flat(10, std::vector<double>{1.0, 1.1, 0.9});
  const auto none = fit_rate_and_floor(flat);
  REQUIRE(none);
  CHECK_FALSE(none->rate);
  CHECK(none->floor == Approx(1.0));
}

TEST_CASE("measured convergence: a known curve's floor and rate on given windows",
          "[measured_convergence]") {
  // c(t) = 0.01 + 2·0.5^t: the floor window t = 6..9 averages the constant and 2·0.5^t, which
  // the rate fit subtracts; on t = 1..4 the excess is 2·0.5^t − that tail mean, computed here.
  std::vector<double> curve;
  for (int t = 0; t <= 9; ++t) {
    curve.push_back(0.01 + 2.0 * std::pow(0.5, t));
  }
  double tail = 0.0;
  for (int t = 6; t <= 9; ++t) {
    tail += 2.0 * std::pow(0.5, t) / 4.0;
  }
  const CurveRateFloor fit = curve_rate_and_floor(curve, 6, 4);
  CHECK(fit.floor == Approx(0.01 + tail).epsilon(1e-14));
  double st = 0.0;
  double sy = 0.0;
  double stt = 0.0;
  double sty = 0.0;
  for (int t = 1; t <= 4; ++t) {
    const double y = std::log(2.0 * std::pow(0.5, t) - tail);
    st += t;
    sy += y;
    stt += t * t;
    sty += t * y;
  }
  const double slope = (sty - st * sy / 4.0) / (stt - st * st / 4.0);
  REQUIRE(fit.rate);
  CHECK(*fit.rate == Approx(std::exp(slope)).epsilon(1e-12));
  CHECK(*fit.rate < 0.5);  // the subtracted tail steepens the decay a little
  // Fewer than 3 points with a positive excess: no rate.
  CHECK_FALSE(curve_rate_and_floor(curve, 6, 2).rate);
}

}  // namespace stragglersim::experiments

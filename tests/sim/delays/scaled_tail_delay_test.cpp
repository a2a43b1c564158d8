// The shifted log-normal, gamma and Weibull delay models (sim/delays/{lognormal,gamma,weibull}
// _delay.h) and the heterogeneous Markov model: moments and CDF against closed forms written here,
// and seeded samples against the moments within 4 standard errors.

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

#include "models/base/random_stream.h"
#include "sim/delays/gamma_delay.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/lognormal_delay.h"
#include "sim/delays/weibull_delay.h"

namespace stragglersim::sim {
namespace {

/// Sample mean and variance of every worker's draws over `iterations` calls.
struct SampleMoments {
  double mean = 0.0;
  double variance = 0.0;
  double count = 0.0;
};

SampleMoments sample_worker(DelayModel& d, int worker, int iterations, std::uint64_t seed) {
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  std::vector<double> out(static_cast<std::size_t>(d.workers()));
  double sum = 0.0;
  double sum2 = 0.0;
  for (int it = 0; it < iterations; ++it) {
    d.sample(static_cast<std::uint64_t>(it), rng, out);
    const double v = out[static_cast<std::size_t>(worker)];
    sum += v;
    sum2 += v * v;
  }
  SampleMoments m;
  m.count = iterations;
  m.mean = sum / iterations;
  m.variance = sum2 / iterations - m.mean * m.mean;
  return m;
}

/// The sample mean of worker `worker` is within 4 s.e. of the model's mean.
void check_sample_mean(DelayModel& d, int worker) {
  const SampleMoments m = sample_worker(d, worker, 40000, 17);
  CHECK(std::abs(m.mean - d.mean(worker)) < 4.0 * std::sqrt(d.variance(worker) / m.count));
  CHECK(m.variance == Approx(d.variance(worker)).epsilon(0.1));
}

/// Standard normal CDF, Φ(z) = erfc(−z/√2)/2.
double phi(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

}  // namespace

TEST_CASE("lognormal delay: moments and cdf are the closed forms", "[sim][delays][families]") {
  // Loads 2 and 0.5 under tail "load": T = ℓa + ℓY.
  const LogNormalDelay d({2.0, 0.5}, {.shift = 0.3, .log_mean = -0.2, .log_sd = 0.6});
  for (const auto& [w, l] : {std::pair{0, 2.0}, std::pair{1, 0.5}}) {
    const double ey = std::exp(-0.2 + 0.18);
    const double vy = (std::exp(0.36) - 1.0) * std::exp(-0.4 + 0.36);
    CHECK(d.lower_bound(w) == Approx(l * 0.3));
    CHECK(d.mean(w) == Approx(l * 0.3 + l * ey));
    CHECK(d.variance(w) == Approx(l * l * vy));
    const double t = l * 0.3 + l * 0.9;
    CHECK(d.cdf(w, t) == Approx(phi((std::log(0.9) + 0.2) / 0.6)));
    CHECK(d.cdf(w, l * 0.3) == 0.0);
  }
  const LogNormalDelay none(
      {3.0}, {.shift = 0.3, .log_mean = 0.1, .log_sd = 0.4, .tail = TailScaling::kNone});
  CHECK(none.mean(0) == Approx(0.9 + std::exp(0.1 + 0.08)));
}

TEST_CASE("gamma delay: moments and cdf are the closed forms", "[sim][delays][families]") {
  const GammaDelay d({1.5}, {.shift = 0.4, .shape = 2.0, .scale = 0.7});
  CHECK(d.lower_bound(0) == Approx(0.6));
  CHECK(d.mean(0) == Approx(0.6 + 1.5 * 1.4));
  CHECK(d.variance(0) == Approx(1.5 * 1.5 * 2.0 * 0.49));
  // Shape 2: P(Y ≤ y) = 1 − e^{−y/θ}(1 + y/θ).
  const double y = 1.1;
  CHECK(d.cdf(0, 0.6 + 1.5 * y) == Approx(1.0 - std::exp(-y / 0.7) * (1.0 + y / 0.7)));
}

TEST_CASE("weibull delay: moments and cdf are the closed forms", "[sim][delays][families]") {
  const WeibullDelay d({1.0}, {.shift = 0.5, .shape = 2.0, .scale = 1.3});
  // Shape 2 (Rayleigh): E[Y] = λ√π/2, Var[Y] = λ²(1 − π/4).
  CHECK(d.mean(0) == Approx(0.5 + 1.3 * std::sqrt(std::numbers::pi) / 2.0));
  CHECK(d.variance(0) == Approx(1.69 * (1.0 - std::numbers::pi / 4.0)));
  CHECK(d.cdf(0, 0.5 + 0.8) == Approx(1.0 - std::exp(-std::pow(0.8 / 1.3, 2.0))));
  CHECK(d.cdf(0, 0.4) == 0.0);
}

TEST_CASE("scaled tail delays: seeded samples match the moments within 4 s.e.",
          "[sim][delays][families]") {
  LogNormalDelay ln({1.0, 2.0}, {.shift = 0.3, .log_mean = -0.2, .log_sd = 0.6});
  GammaDelay ga({1.0, 2.0}, {.shift = 0.4, .shape = 0.8, .scale = 0.7});
  WeibullDelay wb({1.0, 2.0}, {.shift = 0.5, .shape = 1.5, .scale = 1.3});
  for (DelayModel* d : std::initializer_list<DelayModel*>{&ln, &ga, &wb}) {
    INFO(d->name());
    check_sample_mean(*d, 1);
  }
}

TEST_CASE("scaled tail delays: invalid options name the key", "[sim][delays][families]") {
  CHECK(LogNormalDelay::Options{.log_sd = 0.0}.validate()->field == "log_sd");
  CHECK(GammaDelay::Options{.shape = -1.0}.validate()->field == "shape");
  CHECK(WeibullDelay::Options{.scale = 0.0}.validate()->field == "scale");
  CHECK(WeibullDelay::Options{.shift = -0.1}.validate()->field == "shift");
  CHECK_FALSE(GammaDelay::Options{}.validate());
}

TEST_CASE("heterogeneous markov delay: factor times the markov marginal",
          "[sim][delays][families]") {
  MarkovDelay::Options m{.shift = 1.0,
                         .rate = 2.0,
                         .slow_shift = 3.0,
                         .slow_rate = 0.5,
                         .to_slow = 0.1,
                         .to_normal = 0.3};
  HeterogeneousMarkovDelay d({1.0, 1.0}, {.markov = m, .factors = {1.0, 2.5}});
  const MarkovDelay base({1.0, 1.0}, m);
  CHECK(d.mean(1) == Approx(2.5 * base.mean(1)));
  CHECK(d.variance(1) == Approx(6.25 * base.variance(1)));
  CHECK(d.lower_bound(1) == Approx(2.5));
  CHECK(d.cdf(1, 5.0) == Approx(base.cdf(1, 2.0)));
  // π = 1/4: the stationary mixture of (1 + Exp(2)) and (3 + Exp(0.5)), scaled by 2.5.
  CHECK(d.mean(1) == Approx(2.5 * (0.75 * 1.5 + 0.25 * 5.0)));
  // Persistence makes successive draws dependent: Var of the mean is Var/N·(1 + 2Σ_k ρ_k) with
  // ρ_k = (between-state share of the variance)·(1 − p − q)^k.
  const double between = 0.25 * 0.75 * (5.0 - 1.5) * (5.0 - 1.5);
  const double share = between / base.variance(1);
  const double inflation = 1.0 + 2.0 * share * 0.6 / 0.4;
  const SampleMoments s = sample_worker(d, 1, 40000, 5);
  CHECK(std::abs(s.mean - d.mean(1)) < 4.0 * std::sqrt(d.variance(1) / s.count * inflation));
  CHECK(HeterogeneousMarkovDelay::Options{.markov = m, .factors = {1.0}}.validate(2)->field ==
        "factors");
}

}  // namespace stragglersim::sim

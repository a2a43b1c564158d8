// Sample moments and CDFs of the heavy-tailed, bimodal and heterogeneous delay models against
// their formulas (docs/conventions.md, tests: fixed seeds, tolerances of 4 standard errors).

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "models/base/random_stream.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/pareto_delay.h"

namespace stragglersim::sim {
namespace {

/// Whether `a` and `b` draw the same worker times for `draws` iterations from one seed's stream.
bool same_stream(DelayModel& a, DelayModel& b, std::uint64_t seed, int draws) {
  RandomEngine ra = make_engine(seed, Stream::kDelays);
  RandomEngine rb = make_engine(seed, Stream::kDelays);
  std::vector<double> xa(static_cast<std::size_t>(a.workers()));
  std::vector<double> xb(static_cast<std::size_t>(b.workers()));
  for (int k = 0; k < draws; ++k) {
    a.sample(0, ra, xa);
    b.sample(0, rb, xb);
    if (xa != xb) {
      return false;
    }
  }
  return true;
}

constexpr int kDraws = 200000;

/// Per-worker sample moments of `draws` iterations.
struct WorkerSample {
  std::vector<std::vector<double>> values;  // [worker][draw]
};

WorkerSample draw(DelayModel& delay, int draws, std::uint64_t seed) {
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  const auto n = static_cast<std::size_t>(delay.workers());
  WorkerSample s;
  s.values.assign(n, std::vector<double>(static_cast<std::size_t>(draws)));
  std::vector<double> out(n);
  for (int k = 0; k < draws; ++k) {
    delay.sample(static_cast<std::uint64_t>(k), rng, out);
    for (std::size_t i = 0; i < n; ++i) {
      s.values[i][static_cast<std::size_t>(k)] = out[i];
    }
  }
  return s;
}

double mean_of(const std::vector<double>& x) {
  double s = 0.0;
  for (const double v : x) {
    s += v;
  }
  return s / static_cast<double>(x.size());
}

/// Central moment of order k.
double central_moment(const std::vector<double>& x, double centre, int k) {
  double s = 0.0;
  for (const double v : x) {
    s += std::pow(v - centre, k);
  }
  return s / static_cast<double>(x.size());
}

/// |sample mean − E| < 4 SE, and, when `check_variance`, |sample variance − Var| < 4 SE with the
/// SE of a sample variance sqrt((m₄ − m₂²)/N) (needs a finite fourth moment).
void check_moments(const DelayModel& delay, const WorkerSample& s, bool check_variance) {
  for (int i = 0; i < delay.workers(); ++i) {
    const auto& x = s.values[static_cast<std::size_t>(i)];
    const auto n = static_cast<double>(x.size());
    const double m = mean_of(x);
    const double m2 = central_moment(x, m, 2);
    INFO("worker " << i << ": mean " << m << " vs " << delay.mean(i));
    CHECK(std::abs(m - delay.mean(i)) < 4.0 * std::sqrt(m2 / n));
    if (check_variance) {
      const double m4 = central_moment(x, m, 4);
      INFO("variance " << m2 << " vs " << delay.variance(i));
      CHECK(std::abs(m2 - delay.variance(i)) < 4.0 * std::sqrt((m4 - m2 * m2) / n));
    }
    double lowest = std::numeric_limits<double>::infinity();
    for (const double v : x) {
      lowest = std::min(lowest, v);
    }
    CHECK(lowest >= delay.lower_bound(i));
  }
}

/// Empirical P(T_i ≤ t) against cdf within 4 binomial standard errors, at `points`.
void check_cdf(const DelayModel& delay, const WorkerSample& s, const std::vector<double>& points) {
  for (int i = 0; i < delay.workers(); ++i) {
    const auto& x = s.values[static_cast<std::size_t>(i)];
    const auto n = static_cast<double>(x.size());
    for (const double t : points) {
      double below = 0.0;
      for (const double v : x) {
        below += v <= t ? 1.0 : 0.0;
      }
      const double p = delay.cdf(i, t);
      INFO("worker " << i << " t " << t << ": empirical " << below / n << " vs cdf " << p);
      CHECK(std::abs(below / n - p) <= 4.0 * std::sqrt(std::max(p * (1.0 - p), 1e-12) / n) + 1e-12);
    }
  }
}

}  // namespace

// Found by the fuzz_run target: a BGC row can be empty (load 0), and Pareto delays asserted a
// positive load (exit 1, "internal error"). Under Model A such a worker finishes at once.
TEST_CASE("sim: pareto delay of a worker without load", "[sim][delay]") {
  ParetoDelay model_a({0.0, 2.0},
                      {.shift = 0.5, .scale = 0.8, .shape = 1.5, .tail = TailScaling::kLoad});
  const auto s = draw(model_a, 1000, 21);
  for (const double t : s.values[0]) {
    CHECK(t == 0.0);
  }
  for (const double t : s.values[1]) {
    CHECK(t >= 2.0 * 0.5 + 2.0 * 0.8);
  }
  CHECK(model_a.cdf(0, -1e-12) == 0.0);
  CHECK(model_a.cdf(0, 0.0) == 1.0);
  CHECK(model_a.mean(0) == 0.0);
  CHECK(model_a.variance(0) == 0.0);
  CHECK(model_a.lower_bound(0) == 0.0);
  CHECK(model_a.mean(1) == Approx(2.0 * 0.5 + 2.0 * 1.5 * 0.8 / 0.5));
  // The loaded worker draws exactly what it draws next to a loaded worker 0: one variate each.
  ParetoDelay loaded({1.0, 2.0},
                     {.shift = 0.5, .scale = 0.8, .shape = 1.5, .tail = TailScaling::kLoad});
  CHECK(draw(loaded, 1000, 21).values[1] == s.values[1]);
  // Model B: the tail does not scale with the load, so the worker still straggles.
  ParetoDelay model_b({0.0},
                      {.shift = 0.5, .scale = 0.8, .shape = 3.0, .tail = TailScaling::kNone});
  CHECK(model_b.mean(0) == Approx(3.0 * 0.8 / 2.0));
  CHECK(model_b.lower_bound(0) == 0.8);
}

TEST_CASE("sim: pareto delay moments and cdf match the formulas", "[sim][delay][statistical]") {
  SECTION("finite fourth moment: mean and variance, model A") {
    ParetoDelay delay({1.0, 2.0, 3.0},
                      {.shift = 0.5, .scale = 0.8, .shape = 5.0, .tail = TailScaling::kLoad});
    const auto s = draw(delay, kDraws, 11);
    check_moments(delay, s, true);
    check_cdf(delay, s, {1.4, 2.0, 3.0, 5.0});
  }
  SECTION("finite variance only: mean, model B") {
    ParetoDelay delay({1.0, 2.0},
                      {.shift = 1.0, .scale = 1.0, .shape = 2.5, .tail = TailScaling::kNone});
    CHECK(std::isfinite(delay.variance(0)));
    const auto s = draw(delay, kDraws, 12);
    check_moments(delay, s, false);
    check_cdf(delay, s, {2.1, 3.0, 4.0, 10.0});
  }
  SECTION("infinite variance: cdf only") {
    ParetoDelay delay({1.0, 2.0},
                      {.shift = 1.0, .scale = 1.0, .shape = 1.5, .tail = TailScaling::kLoad});
    CHECK(std::isinf(delay.variance(0)));
    CHECK(delay.mean(0) == Approx(1.0 + 3.0));
    const auto s = draw(delay, kDraws, 13);
    check_cdf(delay, s, {2.5, 3.0, 5.0, 20.0, 100.0});
  }
  SECTION("infinite mean") {
    ParetoDelay delay({1.0},
                      {.shift = 0.0, .scale = 1.0, .shape = 0.9, .tail = TailScaling::kLoad});
    CHECK(std::isinf(delay.mean(0)));
    CHECK(delay.lower_bound(0) == 1.0);
    CHECK(delay.cdf(0, 1.0) == 0.0);
    CHECK(delay.cdf(0, 2.0) == Approx(1.0 - std::pow(0.5, 0.9)));
  }
}

TEST_CASE("sim: bimodal delay moments and cdf match the formulas", "[sim][delay][statistical]") {
  BimodalDelay delay({1.0, 2.0, 3.0},
                     {.shift = 1.0,
                      .rate = 2.0,
                      .tail = TailScaling::kLoad,
                      .slow_probability = 0.1,
                      .slowdown = 5.0});
  CHECK(delay.mean(0) == Approx((0.9 + 0.5) * 1.5));
  const auto s = draw(delay, kDraws, 21);
  check_moments(delay, s, true);
  check_cdf(delay, s, {1.2, 2.5, 5.5, 8.0, 12.0});

  SECTION("model B") {
    BimodalDelay b({2.0, 2.0},
                   {.shift = 1.0,
                    .rate = 1.0,
                    .tail = TailScaling::kNone,
                    .slow_probability = 0.3,
                    .slowdown = 2.0});
    const auto sb = draw(b, kDraws, 22);
    check_moments(b, sb, true);
  }
  SECTION("pi = 0 replays the shifted exponential stream") {
    BimodalDelay b({1.0, 2.0},
                   {.shift = 1.0,
                    .rate = 1.0,
                    .tail = TailScaling::kLoad,
                    .slow_probability = 0.0,
                    .slowdown = 4.0});
    ShiftedExponentialDelay e({1.0, 2.0}, {.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
    CHECK(same_stream(b, e, 5, 10));
  }
}

TEST_CASE("sim: heterogeneous delay moments and cdf match the formulas",
          "[sim][delay][statistical]") {
  HeterogeneousDelay delay(
      {1.0, 1.0, 2.0, 2.0},
      {.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad, .factors = {1.0, 3.0, 0.5, 2.0}});
  CHECK(delay.mean(1) == Approx(3.0 * 2.0));
  CHECK(delay.lower_bound(3) == Approx(4.0));
  const auto s = draw(delay, kDraws, 31);
  check_moments(delay, s, true);
  check_cdf(delay, s, {1.5, 3.0, 6.0, 10.0});

  SECTION("unit factors replay the shifted exponential stream") {
    HeterogeneousDelay h(
        {1.0, 2.0}, {.shift = 1.0, .rate = 2.0, .tail = TailScaling::kNone, .factors = {1.0, 1.0}});
    ShiftedExponentialDelay e({1.0, 2.0}, {.shift = 1.0, .rate = 2.0, .tail = TailScaling::kNone});
    CHECK(same_stream(h, e, 6, 1));
  }
}

TEST_CASE("sim: new delay models draw the pinned first values and reject illegal parameters",
          "[sim][delay]") {
  std::vector<std::unique_ptr<DelayModel>> models;
  models.push_back(std::make_unique<ParetoDelay>(
      std::vector<double>{1.0, 2.0},
      ParetoDelay::Options{.shift = 1.0, .scale = 1.0, .shape = 2.0, .tail = TailScaling::kLoad}));
  models.push_back(std::make_unique<BimodalDelay>(std::vector<double>{1.0, 2.0},
                                                  BimodalDelay::Options{.shift = 1.0,
                                                                        .rate = 1.0,
                                                                        .tail = TailScaling::kLoad,
                                                                        .slow_probability = 0.2,
                                                                        .slowdown = 3.0}));
  models.push_back(std::make_unique<HeterogeneousDelay>(
      std::vector<double>{1.0, 2.0},
      HeterogeneousDelay::Options{.shift = 1.0,
                                  .rate = 1.0,
                                  .tail = TailScaling::kLoad,
                                  .factors = std::vector<double>{1.0, 2.0}}));
  // The first two iterations drawn from seed 9's delay stream, pinned (printed with %.17g, so
  // exact): a change of the draw order, the distribution or the stream fails here. Moments
  // and CDFs against the formulas are the statistical cases above.
  const std::vector<std::vector<double>> pinned = {
      {2.4876331272620122, 4.385243309498243, 2.327905749161665, 6.1118391344543443},
      {1.3523079102762638, 4.8828929033168613, 10.340421525307802, 2.3548909654950356},
      {1.7943727035040031, 5.4092316411050554, 1.5672061530375818, 9.7657858066337226}};
  for (std::size_t m = 0; m < models.size(); ++m) {
    INFO(models[m]->name());
    RandomEngine rng = make_engine(9, Stream::kDelays);
    std::vector<double> drawn;
    std::vector<double> x(2);
    for (int k = 0; k < 2; ++k) {
      models[m]->sample(static_cast<std::uint64_t>(k), rng, x);
      drawn.insert(drawn.end(), x.begin(), x.end());
    }
    CHECK(drawn == pinned[m]);
  }
  CHECK_THROWS_AS(
      ParetoDelay({1.0}, {.shift = 1.0, .scale = 0.0, .shape = 2.0, .tail = TailScaling::kLoad}),
      std::logic_error);
  CHECK_THROWS_AS(
      ParetoDelay({1.0}, {.shift = 1.0, .scale = 1.0, .shape = -1.0, .tail = TailScaling::kLoad}),
      std::logic_error);
  CHECK_THROWS_AS(BimodalDelay({1.0},
                               {.shift = 1.0,
                                .rate = 1.0,
                                .tail = TailScaling::kLoad,
                                .slow_probability = 1.5,
                                .slowdown = 2.0}),
                  std::logic_error);
  CHECK_THROWS_AS(BimodalDelay({1.0},
                               {.shift = 1.0,
                                .rate = 1.0,
                                .tail = TailScaling::kLoad,
                                .slow_probability = 0.5,
                                .slowdown = 0.5}),
                  std::logic_error);
  CHECK_THROWS_AS(
      HeterogeneousDelay({1.0, 1.0},
                         {.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad, .factors = {1.0}}),
      std::logic_error);
  CHECK_THROWS_AS(
      HeterogeneousDelay({1.0},
                         {.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad, .factors = {0.0}}),
      std::logic_error);
}

}  // namespace stragglersim::sim

// Order-statistics sampler (sim/order_statistics.h): its primitive draws against closed forms at
// n up to 2^40, its iterations against the worker sampler (two-sample Kolmogorov–Smirnov on 10^5
// iterations each, every rule, code family and policy it covers), and its validity rules.

#include "sim/order_statistics.h"

#include <boost/random/gamma_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/delay_only.h"
#include "sim/heterogeneous_delay.h"
#include "sim/pareto_delay.h"
#include "tests/two_sample_ks.h"

namespace stragglersim::sim {
namespace {

using testing::kolmogorov_survival;
using testing::two_sample_ks;

/// H_n − H_{n−m}, summed for m ≤ 10^6 terms, else from ln n + γ + 1/(2n) − 1/(12n²) (error
/// below 1/(120 n⁴)): independent of the sampler and of the theory module's digamma.
double harmonic_difference(double n, double m) {
  if (m <= 1e6) {
    double s = 0.0;
    for (double i = n; i > n - m; i -= 1.0) {
      s += 1.0 / i;
    }
    return s;
  }
  const auto h = [](double x) {
    return x == 0.0 ? 0.0
                    : std::log(x) + 0.5772156649015329 + 1.0 / (2.0 * x) - 1.0 / (12.0 * x * x);
  };
  return h(n) - h(n - m);
}

/// Σ_{n−m<i≤n} 1/i² (the variance of the m-th order statistic), by the same split.
double square_sum(double n, double m) {
  if (m <= 1e6) {
    double s = 0.0;
    for (double i = n; i > n - m; i -= 1.0) {
      s += 1.0 / (i * i);
    }
    return s;
  }
  const auto t = [](double x) {  // Σ_{i>x} 1/i² ≈ 1/x − 1/(2x²) + 1/(6x³)
    return x == 0.0 ? 1.6449340668482264 : 1.0 / x - 1.0 / (2.0 * x * x) + 1.0 / (6.0 * x * x * x);
  };
  return t(n - m) - t(n);
}

TEST_CASE("order statistics: the KS helper matches SciPy", "[order_statistics]") {
  // scipy.stats.kstwobign.sf
  CHECK(kolmogorov_survival(0.5) == Approx(0.9639452436648751).epsilon(1e-12));
  CHECK(kolmogorov_survival(1.0) == Approx(0.26999967167735456).epsilon(1e-12));
  CHECK(kolmogorov_survival(1.36) == Approx(0.049485876755377876).epsilon(1e-12));
  CHECK(kolmogorov_survival(2.0) == Approx(0.0006709252557796953).epsilon(1e-10));
  // scipy.stats.ks_2samp statistic, with a tie at 0.4 across the samples.
  const auto ks = two_sample_ks({0.1, 0.4, 0.4, 0.9, 1.3}, {0.2, 0.4, 0.5, 0.6, 0.7, 2.0});
  CHECK(ks.statistic == Approx(4.0 / 15.0).epsilon(1e-15));
  CHECK(two_sample_ks({1, 2, 3}, {1, 2, 3}).statistic == 0.0);
}

TEST_CASE("order statistics: maxima and r-th order statistics at n up to 2^40",
          "[order_statistics]") {
  RandomEngine rng(7);
  const int draws = 100000;
  SECTION("maximum") {
    for (const double n : {1.0, 30.0, 0x1p30, 0x1p40}) {
      double mean = 0.0;
      for (int i = 0; i < draws; ++i) {
        mean += max_of_exponentials(static_cast<std::uint64_t>(n), rng);
      }
      mean /= draws;
      const double se = std::sqrt(square_sum(n, n) / draws);
      INFO("n = " << n);
      CHECK(std::abs(mean - harmonic_difference(n, n)) < 4.0 * se);
    }
  }
  SECTION("r-th smallest, spacings and gamma ratio") {
    const double n = 0x1p30;
    for (const double r : {1.0, 2.0, 32.0, 33.0, 1000.0, 0x1p29, n - 5.0, n}) {
      double mean = 0.0;
      for (int i = 0; i < draws; ++i) {
        mean += exponential_order_statistic(
            static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(r), rng);
      }
      mean /= draws;
      const double se = std::sqrt(square_sum(n, r) / draws);
      INFO("r = " << r);
      CHECK(std::abs(mean - harmonic_difference(n, r)) < 4.0 * se);
      // The smallest order statistics are ~r/n: relative precision, not an absolute floor.
      CHECK(mean > 0.0);
    }
  }
  SECTION("the two methods agree in distribution at the switch") {
    std::vector<double> spacing;
    std::vector<double> gamma;
    for (int i = 0; i < draws; ++i) {
      // r = 32 by spacings (the sampler) against the gamma ratio it uses from r = 33 on.
      spacing.push_back(exponential_order_statistic(1000, 32, rng));
      const double a = boost::random::gamma_distribution<double>(32.0)(rng);
      const double b = boost::random::gamma_distribution<double>(1000.0 - 32.0 + 1.0)(rng);
      gamma.push_back(std::log1p(a / b));
    }
    CHECK(two_sample_ks(spacing, gamma).p_value > 0.001);
  }
}

struct Case {
  std::string label;
  std::shared_ptr<const codes::GradientCode> code;
  std::shared_ptr<const StoppingRule> rule;
  StragglerPolicy policy = StragglerPolicy::kCancel;
  TailScaling tail = TailScaling::kLoad;
};

struct Samples {
  std::vector<double> time;
  std::vector<double> wall;
  std::vector<double> heard;
  std::vector<double> covered;
};

Samples sample(const Case& c, Sampler sampler, std::uint64_t seed, std::uint64_t iterations) {
  DelayOnlySimulator s(
      std::make_unique<ShiftedExponentialDelay>(
          c.code->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.5, .tail = c.tail}),
      c.rule,
      c.code,
      c.policy,
      seed,
      NetworkOptions{},
      sampler);
  REQUIRE(s.sampler() == sampler);
  Samples out;
  s.run(iterations, [&](const DelayOnlyIteration& it) {
    out.time.push_back(it.iteration_time);
    out.wall.push_back(it.wall_time);
    out.heard.push_back(it.workers_heard);
    out.covered.push_back(it.groups_covered);
  });
  return out;
}

TEST_CASE("order statistics: the same distributions as the worker sampler (KS, 10^5 each)",
          "[order_statistics]") {
  const auto uncoded = std::make_shared<codes::UncodedCode>(24);
  const auto frc3 = std::make_shared<codes::FractionalRepetitionCode>(24, 3);  // 8 groups of 3
  const auto frc6 = std::make_shared<codes::FractionalRepetitionCode>(12, 6);  // 2 groups of 6
  const auto crc = std::make_shared<codes::CyclicRepetitionCode>(24, 2, 1);
  std::vector<Case> cases;
  for (const auto policy : {StragglerPolicy::kCancel, StragglerPolicy::kDrain}) {
    const std::string p = policy == StragglerPolicy::kDrain ? " drain" : "";
    cases.push_back({"uncoded all" + p, uncoded, std::make_shared<AllStopping>(24), policy});
    cases.push_back(
        {"uncoded first_r 7" + p, uncoded, std::make_shared<FirstRStopping>(7), policy});
    cases.push_back(
        {"uncoded deadline" + p, uncoded, std::make_shared<DeadlineStopping>(3.0, 24), policy});
    cases.push_back(
        {"uncoded decodable" + p, uncoded, std::make_shared<DecodableStopping>(uncoded), policy});
    cases.push_back({"uncoded first_r_or_decodable 20" + p,
                     uncoded,
                     std::make_shared<FirstROrDecodableStopping>(20, uncoded),
                     policy});
    cases.push_back({"frc3 all" + p, frc3, std::make_shared<AllStopping>(24), policy});
    cases.push_back({"frc3 first_r 10" + p, frc3, std::make_shared<FirstRStopping>(10), policy});
    cases.push_back(
        {"frc3 deadline" + p, frc3, std::make_shared<DeadlineStopping>(4.5, 24), policy});
    cases.push_back(
        {"frc3 decodable" + p, frc3, std::make_shared<DecodableStopping>(frc3), policy});
    cases.push_back({"frc3 first_r_or_decodable 12" + p,
                     frc3,
                     std::make_shared<FirstROrDecodableStopping>(12, frc3),
                     policy});
    cases.push_back({"frc3 first_r_or_decodable 5" + p,
                     frc3,
                     std::make_shared<FirstROrDecodableStopping>(5, frc3),
                     policy});
    cases.push_back(
        {"frc6 deadline" + p, frc6, std::make_shared<DeadlineStopping>(7.5, 12), policy});
    cases.push_back(
        {"frc6 decodable" + p, frc6, std::make_shared<DecodableStopping>(frc6), policy});
    cases.push_back({"frc6 first_r_or_decodable 12" + p,
                     frc6,
                     std::make_shared<FirstROrDecodableStopping>(12, frc6),
                     policy});
    cases.push_back({"crc all" + p, crc, std::make_shared<AllStopping>(24), policy});
    cases.push_back({"crc first_r 22" + p, crc, std::make_shared<FirstRStopping>(22), policy});
    cases.push_back({"crc deadline" + p, crc, std::make_shared<DeadlineStopping>(4.0, 24), policy});
  }
  cases.push_back({"frc3 first_r 10 model B",
                   frc3,
                   std::make_shared<FirstRStopping>(10),
                   StragglerPolicy::kCancel,
                   TailScaling::kNone});
  cases.push_back({"frc3 deadline model B",
                   frc3,
                   std::make_shared<DeadlineStopping>(4.5, 24),
                   StragglerPolicy::kCancel,
                   TailScaling::kNone});
  const std::uint64_t iterations = 100000;
  for (const Case& c : cases) {
    const Samples w = sample(c, Sampler::kWorkers, 101, iterations);
    const Samples o = sample(c, Sampler::kOrderStatistics, 202, iterations);
    INFO(c.label);
    CHECK(two_sample_ks(w.time, o.time).p_value > 0.001);
    CHECK(two_sample_ks(w.heard, o.heard).p_value > 0.001);
    CHECK(two_sample_ks(w.covered, o.covered).p_value > 0.001);
    if (c.policy == StragglerPolicy::kDrain) {
      CHECK(two_sample_ks(w.wall, o.wall).p_value > 0.001);
    } else {
      CHECK(o.wall == o.time);
    }
  }
}

TEST_CASE("order statistics: the KS check can fail (a wrong shift is caught)",
          "[order_statistics]") {
  // Guards the agreement test: a sampler off by 5% of the shift is rejected at this size.
  const auto code = std::make_shared<codes::UncodedCode>(24);
  const Case c{"all", code, std::make_shared<AllStopping>(24)};
  Samples w = sample(c, Sampler::kWorkers, 101, 100000);
  const Samples o = sample(c, Sampler::kOrderStatistics, 202, 100000);
  for (double& t : w.time) {
    t += 0.05;
  }
  CHECK(two_sample_ks(w.time, o.time).p_value < 0.001);
}

TEST_CASE("order statistics: where the sampler is not exact, and why", "[order_statistics]") {
  const auto uncoded = std::make_shared<codes::UncodedCode>(6);
  const std::vector<double> ones(6, 1.0);
  const AllStopping all(6);
  const ShiftedExponentialDelay se(ones, {});
  CHECK_FALSE(order_statistics_unavailable(se, all, *uncoded, StragglerPolicy::kCancel));
  CHECK_FALSE(order_statistics_unavailable(se, all, *uncoded, StragglerPolicy::kDrain));
  CHECK(order_statistics_unavailable(se, all, *uncoded, StragglerPolicy::kFinish).value() ==
        "stragglers 'finish' carries each straggler's remaining work into the next iteration, so "
        "workers are not i.i.d.");
  CHECK(order_statistics_unavailable(ParetoDelay(ones, {}), all, *uncoded, StragglerPolicy::kCancel)
            .value() ==
        "delay model 'pareto' is not i.i.d. shifted exponential (the only model with an exact "
        "order-statistics sampler)");
  CHECK(order_statistics_unavailable(
            HeterogeneousDelay(ones, {.factors = ones}), all, *uncoded, StragglerPolicy::kCancel)
            .has_value());
  const ShiftedExponentialDelay uneven({1.0, 1.0, 2.0, 1.0, 1.0, 1.0}, {});
  CHECK(order_statistics_unavailable(uneven, all, *uncoded, StragglerPolicy::kCancel).value() ==
        "the workers' delays are not identically distributed (the code's loads differ)");
  const auto crc = std::make_shared<codes::CyclicRepetitionCode>(6, 1, 1);
  const ShiftedExponentialDelay twos(std::vector<double>(6, 2.0), {});
  CHECK_FALSE(order_statistics_unavailable(twos, all, *crc, StragglerPolicy::kCancel));
  CHECK(order_statistics_unavailable(twos, DecodableStopping(crc), *crc, StragglerPolicy::kCancel)
            .value() ==
        "decodability of code 'crc' depends on which workers are heard, not on group counts "
        "(only uncoded and frc)");
  // The simulator refuses what the rules refuse.
  CHECK_THROWS_AS(DelayOnlySimulator(std::make_unique<ParetoDelay>(ones, ParetoDelay::Options{}),
                                     std::make_shared<AllStopping>(6),
                                     uncoded,
                                     StragglerPolicy::kCancel,
                                     1,
                                     NetworkOptions{},
                                     Sampler::kOrderStatistics),
                  std::logic_error);
}

TEST_CASE("order statistics: compact codes and uniform loads hold nothing per worker at n = 2^30",
          "[order_statistics]") {
  const int n = 1 << 30;
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(
      codes::FractionalRepetitionCode::Options{n, 0, 2}, codes::CompactTag{});
  CHECK(code->compact());
  CHECK(code->workers() == n);
  CHECK(code->uniform_load().value() == 2.0);
  CHECK(code->load(n - 1) == 2.0);
  CHECK(code->structure().groups == n / 2);
  CHECK_THROWS_AS(code->support(0), std::logic_error);
  CHECK(code->decodable(std::vector<int>{0}) == false);
  auto delays = std::make_unique<ShiftedExponentialDelay>(
      n, 2.0, ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0});
  CHECK(delays->workers() == n);
  CHECK(delays->shifted_exponential()->worker_shift.size() == 1);
  CHECK(delays->mean(n - 1) == 2.0 + 2.0);
  // Exact FRC at n = 2^30: E[T] = 2 + (2/2)·H_{2^29}, within 4 s.e. over 10^4 iterations.
  DelayOnlySimulator s(std::move(delays),
                       std::make_shared<DecodableStopping>(code),
                       code,
                       StragglerPolicy::kCancel,
                       3,
                       NetworkOptions{},
                       Sampler::kOrderStatistics);
  const DelayOnlyStatistics stats = s.run(10000);
  CHECK(std::abs(stats.mean - (2.0 + harmonic_difference(n / 2.0, n / 2.0))) <
        4.0 * stats.standard_error());
}

TEST_CASE("order statistics: the uniform-load model draws what the per-worker model draws",
          "[order_statistics]") {
  ShiftedExponentialDelay per_worker(std::vector<double>(5, 3.0), {.shift = 0.5, .rate = 2.0});
  ShiftedExponentialDelay uniform(5, 3.0, {.shift = 0.5, .rate = 2.0});
  RandomEngine a(9);
  RandomEngine b(9);
  std::vector<double> x(5);
  std::vector<double> y(5);
  per_worker.sample(1, a, x);
  uniform.sample(1, b, y);
  CHECK(x == y);
}

}  // namespace
}  // namespace stragglersim::sim

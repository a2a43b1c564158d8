// Order-statistics sampler (sim/fastpath/order_statistics.h): its primitive draws against closed
// forms at n up to 2^40, its iterations against the worker sampler (two-sample Kolmogorov–Smirnov
// on 10^5 iterations each, every rule, code family and policy it covers), and its validity rules.

#include "sim/fastpath/order_statistics.h"

#include <bit>
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
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/fastpath/delay_only.h"
#include "tests/two_sample_ks.h"

namespace stragglersim::sim {
namespace {

using stragglersim::testing::kolmogorov_survival;
using stragglersim::testing::two_sample_ks;

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
  SECTION("the Marsaglia-Tsang gamma ratio against Boost's gamma draws") {
    // r = 33 and r = n − 40 use the sampler's own gamma draws; Boost.Random's gamma
    // distribution (a different algorithm) is the reference.
    for (const double r : {33.0, 960.0}) {
      std::vector<double> own;
      std::vector<double> boost_ratio;
      for (int i = 0; i < draws; ++i) {
        own.push_back(exponential_order_statistic(1000, static_cast<std::uint64_t>(r), rng));
        const double a = boost::random::gamma_distribution<double>(r)(rng);
        const double b = boost::random::gamma_distribution<double>(1000.0 - r + 1.0)(rng);
        boost_ratio.push_back(std::log1p(a / b));
      }
      INFO("r = " << r);
      CHECK(two_sample_ks(own, boost_ratio).p_value > 0.001);
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

TEST_CASE("order statistics: hypergeometric draws against the exact pmf", "[order_statistics]") {
  // Stepwise (sample or complement ≤ 16) and ratio-of-uniforms, both colour orders: every
  // value's frequency within 4 s.e. of C(good, k)·C(bad, s − k)/C(good + bad, s).
  RandomEngine rng(11);
  const int draws = 100000;
  struct Params {
    std::int64_t good;
    std::int64_t bad;
    std::int64_t sample;
  };
  for (const Params& c : {Params{7, 13, 9},
                          Params{13, 7, 15},
                          Params{40, 60, 50},
                          Params{60, 40, 70},
                          Params{5, 995, 300},
                          Params{900, 300, 1100}}) {
    std::vector<int> count(static_cast<std::size_t>(c.sample + 1), 0);
    for (int i = 0; i < draws; ++i) {
      const std::int64_t k = hypergeometric(c.good, c.bad, c.sample, rng);
      REQUIRE(k >= std::max<std::int64_t>(0, c.sample - c.bad));
      REQUIRE(k <= std::min(c.good, c.sample));
      ++count[static_cast<std::size_t>(k)];
    }
    const auto log_choose = [](double a, double b) {
      return std::lgamma(a + 1.0) - std::lgamma(b + 1.0) - std::lgamma(a - b + 1.0);
    };
    for (std::int64_t k = std::max<std::int64_t>(0, c.sample - c.bad);
         k <= std::min(c.good, c.sample);
         ++k) {
      const double pmf =
          std::exp(log_choose(static_cast<double>(c.good), static_cast<double>(k)) +
                   log_choose(static_cast<double>(c.bad), static_cast<double>(c.sample - k)) -
                   log_choose(static_cast<double>(c.good + c.bad), static_cast<double>(c.sample)));
      const double frequency = count[static_cast<std::size_t>(k)] / static_cast<double>(draws);
      INFO("good " << c.good << " bad " << c.bad << " sample " << c.sample << " k " << k);
      CHECK(std::abs(frequency - pmf) <= 4.0 * std::sqrt(pmf * (1.0 - pmf) / draws));
    }
  }
}

TEST_CASE("order statistics: hypergeometric moments at populations near 2^40",
          "[order_statistics]") {
  RandomEngine rng(12);
  const int draws = 20000;
  struct Params {
    double good;
    double bad;
    double sample;
  };
  for (const Params& c : {Params{0x1p39, 0x1p39 + 12345.0, 0x1p38},
                          Params{1000.0, 0x1p40, 0x1p39},
                          Params{0x1p40, 3.0e5, 0x1p40 - 7.0}}) {
    const double total = c.good + c.bad;
    const double expected = c.sample * c.good / total;
    // Deviations from an integer offset: a sum of 2·10^4 values ~2^40 would round.
    const auto offset = static_cast<std::int64_t>(expected);
    double mean = 0.0;
    for (int i = 0; i < draws; ++i) {
      mean += static_cast<double>(hypergeometric(static_cast<std::int64_t>(c.good),
                                                 static_cast<std::int64_t>(c.bad),
                                                 static_cast<std::int64_t>(c.sample),
                                                 rng) -
                                  offset);
    }
    mean = mean / draws + static_cast<double>(offset);
    const double variance =
        c.sample * (c.good / total) * (c.bad / total) * (total - c.sample) / (total - 1.0);
    INFO("good " << c.good << " bad " << c.bad << " sample " << c.sample);
    CHECK(std::abs(mean - expected) < 4.0 * std::sqrt(variance / draws));
  }
}

TEST_CASE("order statistics: binomial class probabilities against the pmf", "[order_statistics]") {
  // P(H = j | H ≥ j) for H ~ Binomial(d, 1 − e^{−x}), from the pmf summed in long double.
  for (const int d : {1, 2, 5, 12}) {
    for (const double x : {0.01, 0.7, 5.0, 40.0}) {
      std::vector<double> c(static_cast<std::size_t>(d));
      binomial_class_probabilities(d, x, c);
      const long double p = -std::expm1(static_cast<long double>(-x));
      const long double q = std::exp(static_cast<long double>(-x));
      std::vector<long double> pmf(static_cast<std::size_t>(d + 1));
      for (int j = 0; j <= d; ++j) {
        long double choose = 1.0L;
        for (int i = 0; i < j; ++i) {
          choose = choose * (d - i) / (i + 1);
        }
        pmf[static_cast<std::size_t>(j)] = choose * std::pow(p, j) * std::pow(q, d - j);
      }
      for (int j = 0; j < d; ++j) {
        long double tail = 0.0L;
        for (int i = d; i >= j; --i) {
          tail += pmf[static_cast<std::size_t>(i)];
        }
        INFO("d " << d << " x " << x << " j " << j);
        CHECK(c[static_cast<std::size_t>(j)] ==
              Approx(static_cast<double>(pmf[static_cast<std::size_t>(j)] / tail)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("order statistics: the pmf of pairs covered against every subset", "[order_statistics]") {
  // All C(2g, r) subsets of g groups of 2 workers, g ≤ 7: the covered counts' frequencies.
  for (int g = 1; g <= 7; ++g) {
    const int n = 2 * g;
    for (int r = 1; r <= n; ++r) {
      std::vector<double> count(static_cast<std::size_t>(g) + 1, 0.0);
      double subsets = 0.0;
      for (unsigned mask = 0; mask < (1U << n); ++mask) {
        if (std::popcount(mask) != r) {
          continue;
        }
        int covered = 0;
        for (int k = 0; k < g; ++k) {
          covered += ((mask >> (2 * k)) & 3U) != 0 ? 1 : 0;
        }
        count[static_cast<std::size_t>(covered)] += 1.0;
        subsets += 1.0;
      }
      const CoveredPmf pmf = pairs_covered_pmf(g, r);
      double total = 0.0;
      for (int c = 0; c <= g; ++c) {
        const std::int64_t k = c - pmf.first;
        const double got = k >= 0 && k < static_cast<std::int64_t>(pmf.probabilities.size())
                               ? pmf.probabilities[static_cast<std::size_t>(k)]
                               : 0.0;
        total += got;
        INFO("g " << g << " r " << r << " covered " << c);
        CHECK(got == Approx(count[static_cast<std::size_t>(c)] / subsets).margin(1e-14));
      }
      CHECK(total == Approx(1.0).epsilon(1e-14));
    }
  }
  // At n = 2^30, r = n/2 the table keeps the 1e-30 core of a pmf of s.d. 5 793 groups (±11.7 s.d.:
  // about 136 000 entries), not the 2^28 of its support.
  const CoveredPmf wide = pairs_covered_pmf(std::int64_t{1} << 29, std::int64_t{1} << 29);
  CHECK(wide.probabilities.size() > 125'000);
  CHECK(wide.probabilities.size() < 150'000);
}

TEST_CASE("order statistics: groups covered by first_r at n = 2^30 (chain, table and columns)",
          "[order_statistics]") {
  // E[covered] = (n/d)·(1 − q), q = C(n − d, r)/C(n, r), within 4 s.e. of 10^4 iterations, on
  // the alias table (d = 2) and the column draws (d = 3); the integer chain for r ≤ 32·d is
  // checked against the worker sampler below (at this n its groups almost never collide).
  const int n = 1 << 30;
  for (const int d : {2, 3}) {
    const int workers = n / d * d;
    const auto code = std::make_shared<codes::FractionalRepetitionCode>(
        codes::FractionalRepetitionCode::Options{workers, 0, d}, codes::CompactTag{});
    for (const int r : {1000, workers / 2, workers - 5}) {
      DelayOnlySimulator s(
          std::make_unique<ShiftedExponentialDelay>(
              workers, static_cast<double>(d), ShiftedExponentialDelay::Options{.shift = 1.0}),
          std::make_shared<FirstRStopping>(r),
          code,
          StragglerPolicy::kCancel,
          5,
          NetworkOptions{},
          Sampler::kOrderStatistics);
      std::vector<double> covered;
      bool heard_r = true;
      s.run(10000, [&](const DelayOnlyIteration& it) {
        covered.push_back(it.groups_covered);
        heard_r = heard_r && it.workers_heard == r;
      });
      double mean = 0.0;
      for (const double c : covered) {
        mean += c / static_cast<double>(covered.size());
      }
      double m2 = 0.0;
      for (const double c : covered) {
        m2 += (c - mean) * (c - mean);
      }
      const double se = std::sqrt(m2 / static_cast<double>(covered.size() - 1) /
                                  static_cast<double>(covered.size()));
      double q = 1.0;
      for (int j = 0; j < d; ++j) {
        q *= static_cast<double>(workers - r - j) / static_cast<double>(workers - j);
      }
      const double expected = (workers / d) * (1.0 - q);
      INFO("d " << d << " r " << r << ": mean " << mean << " expected " << expected << " se "
                << se);
      CHECK(heard_r);
      CHECK(std::abs(mean - expected) <= 4.0 * se + 1e-9 * expected);
    }
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
          "[order_statistics][heavy]") {
  const auto uncoded = std::make_shared<codes::UncodedCode>(24);
  const auto frc3 = std::make_shared<codes::FractionalRepetitionCode>(24, 3);  // 8 groups of 3
  const auto frc6 = std::make_shared<codes::FractionalRepetitionCode>(12, 6);  // 2 groups of 6
  const auto crc = std::make_shared<codes::CyclicRepetitionCode>(24, 2, 1);
  // first_r on FRC above 32·d workers draws the groups covered by columns (hypergeometrics).
  const auto frc2_wide = std::make_shared<codes::FractionalRepetitionCode>(400, 2);
  const auto frc3_wide = std::make_shared<codes::FractionalRepetitionCode>(600, 3);
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
        {"frc2 n=400 first_r 250" + p, frc2_wide, std::make_shared<FirstRStopping>(250), policy});
    cases.push_back(
        {"frc3 n=600 first_r 200" + p, frc3_wide, std::make_shared<FirstRStopping>(200), policy});
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
    // r ≥ n/d on wide codes: the r-th arrival against decodability without arrival order (the
    // decodable draw's class counts: sequential binomials for n/d − 1 ≥ d, per group below).
    cases.push_back({"frc2 n=400 first_r_or_decodable 250" + p,
                     frc2_wide,
                     std::make_shared<FirstROrDecodableStopping>(250, frc2_wide),
                     policy});
    cases.push_back({"frc3 n=600 first_r_or_decodable 300" + p,
                     frc3_wide,
                     std::make_shared<FirstROrDecodableStopping>(300, frc3_wide),
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
  // d = 66 > 64 classes: the decodable class probabilities on the heap, 67 groups.
  const auto frc66 = std::make_shared<codes::FractionalRepetitionCode>(66 * 67, 66);
  cases.push_back({"frc66 decodable", frc66, std::make_shared<DecodableStopping>(frc66)});
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

// The iteration-time theory against docs/model.md §6's table, closed forms against the numerical
// path, erasure probabilities against exhaustive enumeration, and everything against Monte Carlo
// through the real stopping rules.

#include "sim/theory/iteration_time_theory.h"

#include <algorithm>
#include <bit>
#include <boost/math/special_functions/beta.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {
namespace {

SchemeDescription scheme(
    int n, CodeFamily code, int d, RuleKind rule, int r = 1, double tau = 0.0) {
  return {.workers = n, .code = code, .d = d, .rule = rule, .r = r, .deadline = tau};
}

ShiftedExponentialDelay exponential(const SchemeDescription& s,
                                    TailScaling tail = TailScaling::kLoad,
                                    double shift = 1.0,
                                    double rate = 1.0) {
  return ShiftedExponentialDelay(scheme_loads(s), {.shift = shift, .rate = rate, .tail = tail});
}

/// Monte Carlo of the stopping time through the real StoppingRule objects.
struct MonteCarlo {
  double mean = 0.0;
  double sd = 0.0;
  double mean_se = 0.0;
  double sd_se = 0.0;  ///< of the standard deviation, by the delta method
  double q = 0.0;      ///< fraction of (iteration, group) pairs erased
  double q2 = 0.0;     ///< fraction of (iteration, pair of groups) with both groups erased
  double draws = 0.0;
};

std::shared_ptr<const StoppingRule> make_rule(const SchemeDescription& s) {
  std::shared_ptr<const codes::GradientCode> code;
  if (s.code == CodeFamily::kFractionalRepetition) {
    code = std::make_shared<codes::FractionalRepetitionCode>(s.workers, s.d);
  } else {
    code = std::make_shared<codes::UncodedCode>(s.workers);
  }
  switch (s.rule) {
    case RuleKind::kAll:
      return std::make_shared<AllStopping>(s.workers);
    case RuleKind::kFirstR:
      return std::make_shared<FirstRStopping>(s.r);
    case RuleKind::kDeadline:
      return std::make_shared<DeadlineStopping>(s.deadline, s.workers);
    case RuleKind::kDecodable:
      return std::make_shared<DecodableStopping>(code);
    case RuleKind::kFirstROrDecodable:
      return std::make_shared<FirstROrDecodableStopping>(s.r, code);
  }
  return nullptr;
}

MonteCarlo simulate(const SchemeDescription& s, DelayModel& delay, int draws, std::uint64_t seed) {
  REQUIRE(s.code != CodeFamily::kCyclic);
  const auto rule = make_rule(s);
  const auto n = static_cast<std::size_t>(s.workers);
  const int groups = s.workers / s.d;
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  std::vector<double> t(n);
  std::vector<int> order(n);
  std::vector<int> heard;
  std::vector<char> covered(static_cast<std::size_t>(groups));
  double sum = 0.0;
  double sum2 = 0.0;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(draws));
  double erased = 0.0;
  double erased2 = 0.0;
  for (int k = 0; k < draws; ++k) {
    delay.sample(static_cast<std::uint64_t>(k), rng, t);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return t[static_cast<std::size_t>(a)] < t[static_cast<std::size_t>(b)];
    });
    heard.clear();
    const double deadline = rule->deadline().value_or(std::numeric_limits<double>::infinity());
    double stop = deadline;
    for (const int i : order) {
      if (t[static_cast<std::size_t>(i)] > deadline) {
        break;
      }
      heard.push_back(i);
      if (rule->stop_after(heard)) {
        stop = t[static_cast<std::size_t>(i)];
        break;
      }
    }
    std::fill(covered.begin(), covered.end(), 0);
    for (const int i : heard) {
      covered[static_cast<std::size_t>(i / s.d)] = 1;
    }
    double e = 0.0;
    for (const char c : covered) {
      e += c == 0 ? 1.0 : 0.0;
    }
    erased += e;
    if (groups >= 2) {
      erased2 += e * (e - 1.0) / (static_cast<double>(groups) * (groups - 1));
    }
    times.push_back(stop);
    sum += stop;
  }
  MonteCarlo mc;
  mc.draws = draws;
  mc.mean = sum / draws;
  double m4 = 0.0;
  for (const double x : times) {
    sum2 += (x - mc.mean) * (x - mc.mean);
    m4 += std::pow(x - mc.mean, 4);
  }
  const double var = sum2 / draws;
  m4 /= draws;
  mc.sd = std::sqrt(var);
  mc.mean_se = std::sqrt(var / draws);
  mc.sd_se = std::sqrt((m4 - var * var) / draws) / (2.0 * mc.sd);
  mc.q = erased / (static_cast<double>(draws) * groups);
  mc.q2 = erased2 / draws;
  return mc;
}

/// Checks a prediction against Monte Carlo: mean and sd within 4 standard errors; q, q₂ within
/// 4 standard errors of a [0, 1] variable per iteration (the fraction of groups, or pairs of
/// groups, erased), bounded by the binomial sqrt(q(1 − q)/iterations).
void check_against(const IterationTimePrediction& p, const MonteCarlo& mc) {
  INFO("predicted mean " << p.mean << " sd " << p.sd << " q " << p.q << " q2 " << p.q2);
  INFO("simulated mean " << mc.mean << " ± " << mc.mean_se << " sd " << mc.sd << " ± " << mc.sd_se
                         << " q " << mc.q << " q2 " << mc.q2);
  if (mc.sd == 0.0) {  // a deadline that always binds: Z = τ exactly
    CHECK(p.mean == Approx(mc.mean).epsilon(1e-9));
    CHECK(p.sd < 1e-6 * p.mean);
  } else {
    CHECK(std::abs(p.mean - mc.mean) < 4.0 * mc.mean_se);
    CHECK(std::abs(p.sd - mc.sd) < 4.0 * mc.sd_se);
  }
  if (!std::isnan(p.q)) {
    CHECK(std::abs(p.q - mc.q) <= 4.0 * std::sqrt(p.q * (1.0 - p.q) / mc.draws) + 1e-12);
  }
  if (!std::isnan(p.q2)) {
    CHECK(std::abs(p.q2 - mc.q2) <= 4.0 * std::sqrt(p.q2 * (1.0 - p.q2) / mc.draws) + 1e-12);
  }
}

}  // namespace

TEST_CASE("sim: iteration time theory reproduces the docs/model.md §6 table", "[sim][theory]") {
  const int n = 64;
  const auto uncoded = scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
  const auto frc = scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDecodable);
  const auto crc = scheme(n, CodeFamily::kCyclic, 2, RuleKind::kDecodable);
  const auto eh = scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 32);

  const auto pu = predict_iteration_time(uncoded, exponential(uncoded));
  const auto pf = predict_iteration_time(frc, exponential(frc));
  const auto pc = predict_iteration_time(crc, exponential(crc));
  const auto pe = predict_iteration_time(eh, exponential(eh));
  CHECK(pu.mean == Approx(5.7439).margin(1e-4));
  CHECK(pf.mean == Approx(6.0585).margin(1e-4));
  CHECK(pc.mean == Approx(9.4878).margin(1e-4));
  CHECK(pe.mean == Approx(3.3708).margin(1e-4));
  CHECK(pe.q == Approx(0.246032).margin(1e-6));
  CHECK(pe.q2 == Approx(30.0 * 29.0 * 32.0 * 31.0 / (64.0 * 63.0 * 62.0 * 61.0)).epsilon(1e-12));
  CHECK(pu.method == "closed form");
  CHECK(pu.q == 0.0);
  CHECK(pf.q == 0.0);

  // The closed forms of docs/model.md §6, written out.
  const double h64 = harmonic_number(64);
  CHECK(pu.mean == Approx(1.0 + h64).epsilon(1e-14));
  CHECK(pf.mean == Approx(2.0 + harmonic_number(32)).epsilon(1e-14));
  CHECK(pc.mean == Approx(2.0 * (1.0 + h64 - harmonic_number(1))).epsilon(1e-14));
  CHECK(pe.mean == Approx(2.0 * (1.0 + h64 - harmonic_number(32))).epsilon(1e-14));

  SECTION("model B replaces the tail factor d by 1") {
    const auto b = predict_iteration_time(frc, exponential(frc, TailScaling::kNone));
    CHECK(b.mean == Approx(2.0 + harmonic_number(32) / 2.0).epsilon(1e-14));
  }
}

TEST_CASE("sim: order statistics of the exponential match their formulas", "[sim][theory]") {
  CHECK(exponential_order_statistic_mean(2, 2) == Approx(1.5));
  CHECK(exponential_order_statistic_variance(2, 2) == Approx(1.25));
  CHECK(exponential_order_statistic_mean(5, 0) == 0.0);
  CHECK(exponential_order_statistic_variance(7, 1) == Approx(1.0 / 49.0));
  // Monte Carlo of X_(m:n), n = 10, m = 4.
  RandomEngine rng = make_engine(3, Stream::kDelays);
  ShiftedExponentialDelay unit(std::vector<double>(10, 1.0),
                               {.shift = 0.0, .rate = 1.0, .tail = TailScaling::kLoad});
  std::vector<double> x(10);
  std::vector<double> values;
  const int draws = 200000;
  for (int k = 0; k < draws; ++k) {
    unit.sample(0, rng, x);
    std::nth_element(x.begin(), x.begin() + 3, x.end());
    values.push_back(x[3]);
  }
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / draws;
  double m2 = 0.0;
  double m4 = 0.0;
  for (const double v : values) {
    m2 += (v - mean) * (v - mean) / draws;
    m4 += std::pow(v - mean, 4) / draws;
  }
  CHECK(std::abs(mean - exponential_order_statistic_mean(10, 4)) < 4.0 * std::sqrt(m2 / draws));
  CHECK(std::abs(m2 - exponential_order_statistic_variance(10, 4)) <
        4.0 * std::sqrt((m4 - m2 * m2) / draws));
}

TEST_CASE("sim: closed forms and numerical integration agree for the shifted exponential",
          "[sim][theory]") {
  const auto tail = GENERATE(TailScaling::kLoad, TailScaling::kNone);
  const int n = 24;
  const std::vector<SchemeDescription> schemes = {
      scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll),
      scheme(n, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 18),
      scheme(n, CodeFamily::kUncoded, 1, RuleKind::kDecodable),
      scheme(n, CodeFamily::kFractionalRepetition, 3, RuleKind::kDecodable),
      scheme(n, CodeFamily::kFractionalRepetition, 3, RuleKind::kFirstR, 12),
      scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kAll),
      scheme(n, CodeFamily::kCyclic, 3, RuleKind::kDecodable),
      scheme(n, CodeFamily::kCyclic, 3, RuleKind::kFirstROrDecodable, 10),
      scheme(n, CodeFamily::kUncoded, 1, RuleKind::kFirstROrDecodable, 5),
  };
  for (const auto& s : schemes) {
    const auto delay = exponential(s, tail, 0.7, 1.3);
    const auto closed = predict_iteration_time(s, delay);
    const auto numerical = predict_iteration_time(s, delay, PredictionMethod::kNumerical);
    INFO("code " << static_cast<int>(s.code) << " rule " << static_cast<int>(s.rule) << " d " << s.d
                 << " r " << s.r);
    CHECK(closed.method == "closed form");
    CHECK(numerical.method == "numerical");
    CHECK(numerical.mean == Approx(closed.mean).epsilon(1e-6));
    CHECK(numerical.sd == Approx(closed.sd).epsilon(1e-6));
    if (!std::isnan(closed.q)) {
      CHECK(numerical.q == Approx(closed.q).epsilon(1e-6).margin(1e-12));
    }
    if (!std::isnan(closed.q2)) {
      CHECK(numerical.q2 == Approx(closed.q2).epsilon(1e-6).margin(1e-12));
    }
  }
}

TEST_CASE("sim: first-r erasure probabilities match exhaustive enumeration", "[sim][theory]") {
  // n = 8, d = 2, r = 4: every one of the C(8, 4) = 70 sets of first arrivals is equally likely.
  const int n = 8;
  const int d = 2;
  const int r = 4;
  int subsets = 0;
  int group0_erased = 0;
  int groups01_erased = 0;
  for (unsigned mask = 0; mask < (1U << n); ++mask) {
    if (std::popcount(mask) != r) {
      continue;
    }
    ++subsets;
    const bool g0 = (mask & 0x3U) == 0;
    const bool g1 = (mask & 0xCU) == 0;
    group0_erased += g0 ? 1 : 0;
    groups01_erased += g0 && g1 ? 1 : 0;
  }
  CHECK(subsets == 70);
  const auto s = scheme(n, CodeFamily::kFractionalRepetition, d, RuleKind::kFirstR, r);
  const auto p = predict_iteration_time(s, exponential(s));
  CHECK(p.q == Approx(static_cast<double>(group0_erased) / subsets).epsilon(1e-15));
  CHECK(p.q2 == Approx(static_cast<double>(groups01_erased) / subsets).epsilon(1e-15));
  CHECK(erasure_probability_first_r(n, d, r) == Approx(15.0 / 70.0));
  CHECK(erasure_probability_first_r(n, 2 * d, r) == Approx(1.0 / 70.0));
  CHECK(erasure_probability_first_r(8, 5, 4) == 0.0);

  // The first_r_or_decodable rule erases exactly the same groups.
  const auto both =
      scheme(n, CodeFamily::kFractionalRepetition, d, RuleKind::kFirstROrDecodable, r);
  const auto pb = predict_iteration_time(both, exponential(both));
  CHECK(pb.q == p.q);
  CHECK(pb.q2 == p.q2);
  CHECK(pb.method == "numerical");

  SECTION("and Monte Carlo, through the real stopping rule") {
    auto delay = exponential(s);
    check_against(p, simulate(s, delay, 100000, 41));
  }
}

TEST_CASE("sim: first_r_or_decodable matches Monte Carlo", "[sim][theory][statistical]") {
  // r close to n so that both triggers fire often.
  const auto s = scheme(12, CodeFamily::kFractionalRepetition, 3, RuleKind::kFirstROrDecodable, 9);
  auto delay = exponential(s);
  const auto p = predict_iteration_time(s, delay);
  const auto mc = simulate(s, delay, 200000, 42);
  check_against(p, mc);
  // It stops no later than either rule alone.
  auto first_r = s;
  first_r.rule = RuleKind::kFirstR;
  auto decodable = s;
  decodable.rule = RuleKind::kDecodable;
  CHECK(p.mean < predict_iteration_time(first_r, delay).mean);
  CHECK(p.mean < predict_iteration_time(decodable, delay).mean);
  CHECK(p.q == Approx(erasure_probability_first_r(12, 3, 9)));

  SECTION("under heterogeneous workers, q from the numerical path") {
    HeterogeneousDelay h(scheme_loads(s),
                         {.shift = 1.0,
                          .rate = 1.0,
                          .tail = TailScaling::kLoad,
                          .factors = {1.0, 1.5, 2.0, 1.0, 1.0, 1.0, 3.0, 1.0, 0.8, 1.2, 1.0, 2.5}});
    const auto ph = predict_iteration_time(s, h);
    CHECK(ph.method == "numerical");
    check_against(ph, simulate(s, h, 200000, 43));
  }
}

TEST_CASE("sim: deadline rules match the closed form of the mean and Monte Carlo",
          "[sim][theory][statistical]") {
  const int n = 16;
  const double tau = 4.5;
  const auto s = scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, tau);
  auto delay = exponential(s);
  const auto p = predict_iteration_time(s, delay);
  // E[min(τ, max_i T_i)] = σ + θ Σ_{j=1}^{n} Y^j / j with Y = 1 − e^{−(τ−σ)/θ} (σ = 2, θ = 2).
  const double y = -std::expm1(-(tau - 2.0) / 2.0);
  double sum = 0.0;
  for (int j = 1; j <= n; ++j) {
    sum += std::pow(y, j) / j;
  }
  CHECK(p.mean == Approx(2.0 + 2.0 * sum).epsilon(1e-8));
  const double late = std::exp(-(tau - 2.0) / 2.0);
  CHECK(p.q == Approx(late * late).epsilon(1e-14));
  CHECK(p.q2 == Approx(std::pow(late, 4)).epsilon(1e-14));
  check_against(p, simulate(s, delay, 200000, 44));

  SECTION("a deadline before anyone can arrive") {
    const auto early = scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, 1.5);
    const auto pe = predict_iteration_time(early, delay);
    CHECK(pe.mean == 1.5);
    CHECK(pe.sd == 0.0);
    CHECK(pe.q == 1.0);
  }
}

TEST_CASE("sim: predictions for every delay model match Monte Carlo",
          "[sim][theory][statistical]") {
  const int n = 8;
  const std::vector<SchemeDescription> schemes = {
      scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll),
      scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDecodable),
      scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 4),
      scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstROrDecodable, 6),
      scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, 5.0),
  };
  std::uint64_t seed = 100;
  for (const auto& s : schemes) {
    INFO("code " << static_cast<int>(s.code) << " rule " << static_cast<int>(s.rule));
    const auto loads = scheme_loads(s);
    BimodalDelay bimodal(loads,
                         {.shift = 1.0,
                          .rate = 1.0,
                          .tail = TailScaling::kLoad,
                          .slow_probability = 0.15,
                          .slowdown = 4.0});
    check_against(predict_iteration_time(s, bimodal), simulate(s, bimodal, 100000, ++seed));
    HeterogeneousDelay hetero(loads,
                              {.shift = 1.0,
                               .rate = 1.0,
                               .tail = TailScaling::kNone,
                               .factors = {1.0, 2.0, 1.0, 0.7, 1.3, 1.0, 3.0, 1.0}});
    check_against(predict_iteration_time(s, hetero), simulate(s, hetero, 100000, ++seed));
    // Shape 9: heavy enough to differ from the exponential, light enough that the standard
    // error of a sample variance (which needs an eighth moment) is itself reliable.
    ParetoDelay pareto(loads,
                       {.shift = 1.0, .scale = 1.0, .shape = 9.0, .tail = TailScaling::kLoad});
    check_against(predict_iteration_time(s, pareto), simulate(s, pareto, 100000, ++seed));
  }
}

namespace {

/// Pareto delays with shift and scale 1 and a load-scaled tail of `shape` for the scheme's loads.
ParetoDelay unit_pareto(const SchemeDescription& s, double shape) {
  return ParetoDelay(scheme_loads(s),
                     {.shift = 1.0, .scale = 1.0, .shape = shape, .tail = TailScaling::kLoad});
}

}  // namespace

TEST_CASE("sim: heavy tails give infinite moments only where they diverge", "[sim][theory]") {
  const int n = 8;
  SECTION("all with shape 1.5: finite mean, infinite variance") {
    const auto s = scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay delay = unit_pareto(s, 1.5);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isfinite(p.mean));
    CHECK(std::isinf(p.sd));
    CHECK(p.mean > delay.mean(0));
  }
  SECTION("first r of n with shape 1.5: the (n − r + 1)α > 2 rule gives finite moments") {
    const auto s = scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 4);
    ParetoDelay delay = unit_pareto(s, 1.5);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isfinite(p.mean));
    CHECK(std::isfinite(p.sd));
    // n = 1 reduces to the worker's own mean.
    const auto one = scheme(1, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay single(scheme_loads(one),
                       {.shift = 1.0, .scale = 1.0, .shape = 3.0, .tail = TailScaling::kLoad});
    const auto p1 = predict_iteration_time(one, single);
    // Algebraic tails are continued analytically past the 1 − 1e-8 quantile (see the header):
    // ~1e-5 relative accuracy.
    CHECK(p1.mean == Approx(single.mean(0)).epsilon(1e-5));
    CHECK(p1.sd == Approx(std::sqrt(single.variance(0))).epsilon(1e-5));
    // Mean through quadrature for shape 1.5 against E[Y] = α x_m / (α − 1) = 3.
    ParetoDelay heavy(scheme_loads(one),
                      {.shift = 1.0, .scale = 1.0, .shape = 1.5, .tail = TailScaling::kLoad});
    const auto ph = predict_iteration_time(one, heavy);
    CHECK(ph.mean == Approx(4.0).epsilon(1e-5));
    CHECK(std::isinf(ph.sd));
  }
  SECTION("the maximum of n Pareto delays against its exact moments") {
    // Y_(n:n) of Pareto(1, α): E[Y^k] = Γ(n + 1)Γ(1 − k/α) / Γ(n + 1 − k/α); here T = 1 + Y.
    const auto s = scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    const auto moment = [&](double alpha, double k) {
      return std::exp(std::lgamma(n + 1.0) + std::lgamma(1.0 - k / alpha) -
                      std::lgamma(n + 1.0 - k / alpha));
    };
    for (const double alpha : {1.5, 2.5, 4.0}) {
      ParetoDelay delay = unit_pareto(s, alpha);
      const auto p = predict_iteration_time(s, delay);
      INFO("alpha " << alpha);
      CHECK(p.mean == Approx(1.0 + moment(alpha, 1.0)).epsilon(1e-5));
      if (alpha > 2.0) {
        const double m1 = moment(alpha, 1.0);
        CHECK(p.sd == Approx(std::sqrt(moment(alpha, 2.0) - m1 * m1)).epsilon(1e-4));
      }
    }
  }
  SECTION("the variance criterion sits at shape 2") {
    const auto s = scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay below = unit_pareto(s, 1.9);
    ParetoDelay above = unit_pareto(s, 2.1);
    CHECK(std::isinf(predict_iteration_time(s, below).sd));
    CHECK(std::isfinite(predict_iteration_time(s, above).sd));
  }
  SECTION("shape below 1: infinite mean") {
    const auto s = scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay delay = unit_pareto(s, 0.8);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isinf(p.mean));
  }
}

TEST_CASE("sim: erasure probabilities are undefined where decoding is not by groups",
          "[sim][theory]") {
  const auto crc = scheme(10, CodeFamily::kCyclic, 3, RuleKind::kFirstR, 5);
  const auto p = predict_iteration_time(crc, exponential(crc));
  CHECK(std::isnan(p.q));
  CHECK(std::isnan(p.q2));
  const auto exact = scheme(10, CodeFamily::kCyclic, 3, RuleKind::kFirstR, 8);
  CHECK(predict_iteration_time(exact, exponential(exact)).q == 0.0);
  const auto one_group = scheme(4, CodeFamily::kFractionalRepetition, 4, RuleKind::kFirstR, 2);
  CHECK(std::isnan(predict_iteration_time(one_group, exponential(one_group)).q2));
  CHECK_THROWS_AS(scheme_loads(scheme(10, CodeFamily::kFractionalRepetition, 3, RuleKind::kAll)),
                  std::logic_error);
  CHECK_THROWS_AS(scheme_loads(scheme(10, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 11)),
                  std::logic_error);
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {
namespace {

TEST_CASE("theory: iteration-time quantiles equal the order statistics' closed forms",
          "[sim][theory][quantile]") {
  // Z = ℓa + (ℓ/λ)·X_(m:n), X i.i.d. Exp(1): P(X_(m:n) ≤ x) = I_u(m, n − m + 1) with
  // u = 1 − e^{−x} (the Beta law of the m-th uniform order statistic), so the p-quantile is
  // −log(1 − ibeta_inv(m, n − m + 1, p)).
  const double shift = 0.5;
  const double rate = 2.0;
  const auto frc = CodeFamily::kFractionalRepetition;
  const std::vector<std::pair<SchemeDescription, int>> cases = {
      {scheme(10, CodeFamily::kUncoded, 1, RuleKind::kAll), 10},
      {scheme(10, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 3), 3},
      {scheme(12, frc, 2, RuleKind::kFirstR, 6), 6},
      {scheme(12, frc, 3, RuleKind::kAll), 12},
      {scheme(7, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 1), 1},
  };
  for (const auto& [s, m] : cases) {
    const ShiftedExponentialDelay delay = exponential(s, TailScaling::kLoad, shift, rate);
    const double load = s.code == frc ? s.d : 1.0;
    for (const double p : {0.01, 0.1, 0.5, 0.9, 0.999}) {
      const double u = boost::math::ibeta_inv(m, s.workers - m + 1, p);
      const double expected = load * shift - (load / rate) * std::log1p(-u);
      INFO("n " << s.workers << " m " << m << " p " << p);
      CHECK(iteration_time_quantile(s, delay, p) == Approx(expected).epsilon(1e-10));
    }
  }
  // FRC decodable: max over G groups of a group's first arrival, Exp with rate dλ/ℓ after ℓa:
  // P(Z ≤ t) = (1 − e^{−dλ(t − ℓa)/ℓ})^G.
  const SchemeDescription decodable = scheme(12, frc, 3, RuleKind::kDecodable);
  const ShiftedExponentialDelay delay = exponential(decodable, TailScaling::kLoad, shift, rate);
  for (const double p : {0.05, 0.5, 0.95}) {
    const double expected = 3.0 * shift - std::log1p(-std::pow(p, 1.0 / 4.0)) * 3.0 / (3.0 * rate);
    CHECK(iteration_time_quantile(decodable, delay, p) == Approx(expected).epsilon(1e-10));
  }
  // A deadline caps Z: every quantile above P(Z < τ) is τ.
  const SchemeDescription capped = scheme(4, CodeFamily::kUncoded, 1, RuleKind::kDeadline, 1, 1.0);
  const ShiftedExponentialDelay fast = exponential(capped, TailScaling::kLoad, shift, rate);
  const double below = std::pow(1.0 - std::exp(-rate * (1.0 - shift)), 4.0);  // P(max < τ)
  CHECK(iteration_time_quantile(capped, fast, std::min(0.999, below + 0.05)) ==
        Approx(1.0).epsilon(1e-12));
}

}  // namespace
}  // namespace stragglersim::sim

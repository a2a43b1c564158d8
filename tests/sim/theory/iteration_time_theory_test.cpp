// The iteration-time theory against docs/model.md §6's table, closed forms against the numerical
// path, erasure probabilities against exhaustive enumeration, and everything against Monte Carlo
// through the real stopping rules.

#include "sim/theory/iteration_time_theory.h"

#include <algorithm>
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
#include "tests/sim/theory/theory_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("sim: iteration time theory reproduces the docs/model.md §6 table", "[sim][theory]") {
  const int n = 64;
  const auto uncoded = theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
  const auto frc =
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDecodable);
  const auto crc = theory_testing::scheme(n, CodeFamily::kCyclic, 2, RuleKind::kDecodable);
  const auto eh =
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 32);

  const auto pu = predict_iteration_time(uncoded, theory_testing::exponential(uncoded));
  const auto pf = predict_iteration_time(frc, theory_testing::exponential(frc));
  const auto pc = predict_iteration_time(crc, theory_testing::exponential(crc));
  const auto pe = predict_iteration_time(eh, theory_testing::exponential(eh));
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
    const auto b =
        predict_iteration_time(frc, theory_testing::exponential(frc, TailScaling::kNone));
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
      theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll),
      theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 18),
      theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kDecodable),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 3, RuleKind::kDecodable),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 3, RuleKind::kFirstR, 12),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kAll),
      theory_testing::scheme(n, CodeFamily::kCyclic, 3, RuleKind::kDecodable),
      theory_testing::scheme(n, CodeFamily::kCyclic, 3, RuleKind::kFirstROrDecodable, 10),
      theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kFirstROrDecodable, 5),
  };
  for (const auto& s : schemes) {
    const auto delay = theory_testing::exponential(s, tail, 0.7, 1.3);
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

TEST_CASE("sim: predictions for every delay model match Monte Carlo",
          "[sim][theory][statistical]") {
  const int n = 8;
  const std::vector<SchemeDescription> schemes = {
      theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDecodable),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 4),
      theory_testing::scheme(
          n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstROrDecodable, 6),
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, 5.0),
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
    theory_testing::check_against(predict_iteration_time(s, bimodal),
                                  theory_testing::simulate(s, bimodal, 100000, ++seed));
    HeterogeneousDelay hetero(loads,
                              {.shift = 1.0,
                               .rate = 1.0,
                               .tail = TailScaling::kNone,
                               .factors = {1.0, 2.0, 1.0, 0.7, 1.3, 1.0, 3.0, 1.0}});
    theory_testing::check_against(predict_iteration_time(s, hetero),
                                  theory_testing::simulate(s, hetero, 100000, ++seed));
    // Shape 9: heavy enough to differ from the exponential, light enough that the standard
    // error of a sample variance (which needs an eighth moment) is itself reliable.
    ParetoDelay pareto(loads,
                       {.shift = 1.0, .scale = 1.0, .shape = 9.0, .tail = TailScaling::kLoad});
    theory_testing::check_against(predict_iteration_time(s, pareto),
                                  theory_testing::simulate(s, pareto, 100000, ++seed));
  }
}

TEST_CASE("sim: erasure probabilities are undefined where decoding is not by groups",
          "[sim][theory]") {
  const auto crc = theory_testing::scheme(10, CodeFamily::kCyclic, 3, RuleKind::kFirstR, 5);
  const auto p = predict_iteration_time(crc, theory_testing::exponential(crc));
  CHECK(std::isnan(p.q));
  CHECK(std::isnan(p.q2));
  const auto exact = theory_testing::scheme(10, CodeFamily::kCyclic, 3, RuleKind::kFirstR, 8);
  CHECK(predict_iteration_time(exact, theory_testing::exponential(exact)).q == 0.0);
  const auto one_group =
      theory_testing::scheme(4, CodeFamily::kFractionalRepetition, 4, RuleKind::kFirstR, 2);
  CHECK(std::isnan(predict_iteration_time(one_group, theory_testing::exponential(one_group)).q2));
  CHECK_THROWS_AS(scheme_loads(theory_testing::scheme(
                      10, CodeFamily::kFractionalRepetition, 3, RuleKind::kAll)),
                  std::logic_error);
  CHECK_THROWS_AS(
      scheme_loads(theory_testing::scheme(10, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 11)),
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
      {theory_testing::scheme(10, CodeFamily::kUncoded, 1, RuleKind::kAll), 10},
      {theory_testing::scheme(10, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 3), 3},
      {theory_testing::scheme(12, frc, 2, RuleKind::kFirstR, 6), 6},
      {theory_testing::scheme(12, frc, 3, RuleKind::kAll), 12},
      {theory_testing::scheme(7, CodeFamily::kUncoded, 1, RuleKind::kFirstR, 1), 1},
  };
  for (const auto& [s, m] : cases) {
    const ShiftedExponentialDelay delay =
        theory_testing::exponential(s, TailScaling::kLoad, shift, rate);
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
  const SchemeDescription decodable = theory_testing::scheme(12, frc, 3, RuleKind::kDecodable);
  const ShiftedExponentialDelay delay =
      theory_testing::exponential(decodable, TailScaling::kLoad, shift, rate);
  for (const double p : {0.05, 0.5, 0.95}) {
    const double expected = 3.0 * shift - std::log1p(-std::pow(p, 1.0 / 4.0)) * 3.0 / (3.0 * rate);
    CHECK(iteration_time_quantile(decodable, delay, p) == Approx(expected).epsilon(1e-10));
  }
  // A deadline caps Z: every quantile above P(Z < τ) is τ.
  const SchemeDescription capped =
      theory_testing::scheme(4, CodeFamily::kUncoded, 1, RuleKind::kDeadline, 1, 1.0);
  const ShiftedExponentialDelay fast =
      theory_testing::exponential(capped, TailScaling::kLoad, shift, rate);
  const double below = std::pow(1.0 - std::exp(-rate * (1.0 - shift)), 4.0);  // P(max < τ)
  CHECK(iteration_time_quantile(capped, fast, std::min(0.999, below + 0.05)) ==
        Approx(1.0).epsilon(1e-12));
}

}  // namespace
}  // namespace stragglersim::sim

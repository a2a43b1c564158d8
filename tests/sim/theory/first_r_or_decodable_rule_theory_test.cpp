// The theory of rule first_r_or_decodable (sim/theory/first_r_or_decodable_rule_theory.cpp)
// against Monte Carlo through the real stopping rule.

#include <catch2/catch.hpp>

#include "sim/delays/heterogeneous_delay.h"
#include "sim/theory/iteration_time_theory.h"
#include "tests/sim/theory/theory_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("sim: first_r_or_decodable matches Monte Carlo", "[sim][theory][statistical]") {
  // r close to n so that both triggers fire often.
  const auto s = theory_testing::scheme(
      12, CodeFamily::kFractionalRepetition, 3, RuleKind::kFirstROrDecodable, 9);
  auto delay = theory_testing::exponential(s);
  const auto p = predict_iteration_time(s, delay);
  const auto mc = theory_testing::simulate(s, delay, 200000, 42);
  theory_testing::check_against(p, mc);
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
    theory_testing::check_against(ph, theory_testing::simulate(s, h, 200000, 43));
  }
}

}  // namespace stragglersim::sim

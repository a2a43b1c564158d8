// The theory of rule decodable (sim/theory/decodable_rule_theory.cpp): FRC max over groups of the
// group's first arrival against inclusion–exclusion, cyclic codes' T_(n−s:n) against the order
// statistics' formula, and the shapes of the rule's row.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {

TEST_CASE("theory: FRC decodable waits for every group's first arrival", "[sim][theory]") {
  // Groups {0,1}, {2,3}, {4,5}; a group's first arrival is Exp(Λ_g), Λ_g the sum of its workers'
  // rates λ/c_i (shift 0, untouched by the load): E[max_g] by inclusion–exclusion over groups.
  const std::vector<double> factors = {1.0, 2.0, 0.5, 4.0, 3.0, 3.0};
  const SchemeDescription s{.workers = 6,
                            .code = CodeFamily::kFractionalRepetition,
                            .d = 2,
                            .rule = RuleKind::kDecodable};
  HeterogeneousDelay delay(
      scheme_loads(s), {.shift = 0.0, .rate = 1.0, .tail = TailScaling::kNone, .factors = factors});
  std::vector<double> group_rate(3, 0.0);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    group_rate[i / 2] += 1.0 / factors[i];
  }
  double mean = 0.0;
  for (unsigned set = 1; set < 8U; ++set) {
    double rate = 0.0;
    int size = 0;
    for (std::size_t g = 0; g < 3; ++g) {
      if ((set >> g) & 1U) {
        rate += group_rate[g];
        ++size;
      }
    }
    mean += (size % 2 == 1 ? 1.0 : -1.0) / rate;
  }
  const IterationTimePrediction p = predict_iteration_time(s, delay);
  CHECK(p.mean == Approx(mean).epsilon(1e-8));
  CHECK(p.q == 0.0);
  CHECK(rule_theory(RuleKind::kDecodable).shape(s).kind == StopShape::kFrcDecodable);
}

TEST_CASE("theory: a cyclic code decodable waits for n - s arrivals", "[sim][theory]") {
  // n = 7, s = 2 (d = 3): Z = ℓa + (ℓ/λ)X_(5:7), E[X_(5:7)] = H_7 − H_2, integrated numerically.
  const SchemeDescription s{
      .workers = 7, .code = CodeFamily::kCyclic, .d = 3, .rule = RuleKind::kDecodable};
  const ShiftedExponentialDelay delay(scheme_loads(s),
                                      {.shift = 0.5, .rate = 2.0, .tail = TailScaling::kLoad});
  const IterationTimePrediction p = predict_iteration_time(s, delay, PredictionMethod::kNumerical);
  CHECK(p.method == "numerical");
  const double expected = 3.0 * 0.5 + (3.0 / 2.0) * (harmonic_number(7) - harmonic_number(2));
  CHECK(p.mean == Approx(expected).epsilon(1e-8));
  CHECK(p.sd ==
        Approx((3.0 / 2.0) * std::sqrt(exponential_order_statistic_variance(7, 5))).epsilon(1e-7));
  const Shape shape = rule_theory(RuleKind::kDecodable).shape(s);
  CHECK(shape.kind == StopShape::kOrderStatistic);
  CHECK(shape.order == 5);
  // Uncoded: every worker.
  CHECK(
      rule_theory(RuleKind::kDecodable).shape({.workers = 7, .rule = RuleKind::kDecodable}).order ==
      7);
}

}  // namespace stragglersim::sim

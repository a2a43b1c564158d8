// The theory of rule deadline (sim/theory/deadline_rule_theory.cpp): the closed form of the mean,
// the erasures, and Monte Carlo.

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/theory/iteration_time_theory.h"
#include "tests/sim/theory/theory_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("sim: deadline rules match the closed form of the mean and Monte Carlo",
          "[sim][theory][statistical]") {
  const int n = 16;
  const double tau = 4.5;
  const auto s =
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, tau);
  auto delay = theory_testing::exponential(s);
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
  theory_testing::check_against(p, theory_testing::simulate(s, delay, 200000, 44));

  SECTION("a deadline before anyone can arrive") {
    const auto early = theory_testing::scheme(
        n, CodeFamily::kFractionalRepetition, 2, RuleKind::kDeadline, 1, 1.5);
    const auto pe = predict_iteration_time(early, delay);
    CHECK(pe.mean == 1.5);
    CHECK(pe.sd == 0.0);
    CHECK(pe.q == 1.0);
  }
}

}  // namespace stragglersim::sim

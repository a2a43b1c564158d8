// The numerical integrals (sim/theory/time_integrals.h): heavy tails give infinite moments only
// where they diverge.

#include "sim/theory/time_integrals.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/delays/pareto_delay.h"
#include "sim/theory/iteration_time_theory.h"
#include "tests/sim/theory/theory_fixtures.h"

namespace stragglersim::sim {

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
    const auto s = theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay delay = unit_pareto(s, 1.5);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isfinite(p.mean));
    CHECK(std::isinf(p.sd));
    CHECK(p.mean > delay.mean(0));
  }
  SECTION("first r of n with shape 1.5: the (n − r + 1)α > 2 rule gives finite moments") {
    const auto s =
        theory_testing::scheme(n, CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 4);
    ParetoDelay delay = unit_pareto(s, 1.5);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isfinite(p.mean));
    CHECK(std::isfinite(p.sd));
    // n = 1 reduces to the worker's own mean.
    const auto one = theory_testing::scheme(1, CodeFamily::kUncoded, 1, RuleKind::kAll);
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
    const auto s = theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
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
    const auto s = theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay below = unit_pareto(s, 1.9);
    ParetoDelay above = unit_pareto(s, 2.1);
    CHECK(std::isinf(predict_iteration_time(s, below).sd));
    CHECK(std::isfinite(predict_iteration_time(s, above).sd));
  }
  SECTION("shape below 1: infinite mean") {
    const auto s = theory_testing::scheme(n, CodeFamily::kUncoded, 1, RuleKind::kAll);
    ParetoDelay delay = unit_pareto(s, 0.8);
    const auto p = predict_iteration_time(s, delay);
    CHECK(std::isinf(p.mean));
  }
}

}  // namespace stragglersim::sim

// The theory of rule first_r (sim/theory/first_r_rule_theory.cpp): erasure probabilities against
// exhaustive enumeration of the first arrivals and Monte Carlo.

#include <bit>
#include <catch2/catch.hpp>

#include "sim/theory/iteration_time_theory.h"
#include "tests/sim/theory/theory_fixtures.h"

namespace stragglersim::sim {

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
  const auto s =
      theory_testing::scheme(n, CodeFamily::kFractionalRepetition, d, RuleKind::kFirstR, r);
  const auto p = predict_iteration_time(s, theory_testing::exponential(s));
  CHECK(p.q == Approx(static_cast<double>(group0_erased) / subsets).epsilon(1e-15));
  CHECK(p.q2 == Approx(static_cast<double>(groups01_erased) / subsets).epsilon(1e-15));
  CHECK(erasure_probability_first_r(n, d, r) == Approx(15.0 / 70.0));
  CHECK(erasure_probability_first_r(n, 2 * d, r) == Approx(1.0 / 70.0));
  CHECK(erasure_probability_first_r(8, 5, 4) == 0.0);

  // The first_r_or_decodable rule erases exactly the same groups.
  const auto both = theory_testing::scheme(
      n, CodeFamily::kFractionalRepetition, d, RuleKind::kFirstROrDecodable, r);
  const auto pb = predict_iteration_time(both, theory_testing::exponential(both));
  CHECK(pb.q == p.q);
  CHECK(pb.q2 == p.q2);
  CHECK(pb.method == "numerical");

  SECTION("and Monte Carlo, through the real stopping rule") {
    auto delay = theory_testing::exponential(s);
    theory_testing::check_against(p, theory_testing::simulate(s, delay, 100000, 41));
  }
}

}  // namespace stragglersim::sim

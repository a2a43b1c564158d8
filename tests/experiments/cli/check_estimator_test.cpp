// The `check` rows of the coded gradient estimator and ErasureHead's theorem
// (experiments/cli/check_estimator.cpp): every row of the quick run holds, with the estimator's
// rows first (unbiasedness, second moment), and the theorem's rows one-sided or two-sided as
// their claims say.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"

namespace stragglersim::experiments::check {

TEST_CASE(
    "check estimator: the rescaled estimator is unbiased and its second moment is the "
    "formula's (quick)",
    "[experiments][check]") {
  std::vector<CheckRow> rows;
  estimator_rows(/*quick=*/true, rows);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].claim == "expected-rescaled E[g_hat] = grad f (worst of 5 coordinates)");
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
    CHECK(row.tolerance > 0.0);
  }
}

TEST_CASE("check estimator: ErasureHead's bound and floor against repeated runs (quick)",
          "[experiments][check][heavy]") {
  std::vector<CheckRow> rows;
  bound_rows(/*quick=*/true, rows, {});
  floor_rows(/*quick=*/true, rows);
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
}

}  // namespace stragglersim::experiments::check

// The `check` rows at scale (experiments/cli/check_scaling.cpp): every row of the quick run holds,
// the order-statistics row of n = 10^9 uncoded workers waiting for all has the theory
// E[T] = 1 + H_n (Model A, load 1), H_n = ln n + γ + 1/(2n) − …, and speedup.csv has one line per
// worker count of the quick run.

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"
#include "tests/test_support.h"

namespace stragglersim::experiments::check {

TEST_CASE("check scaling: order statistics of a billion workers against the harmonic number",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  order_statistics_rows(/*quick=*/true, rows);
  REQUIRE(rows.size() == 5);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
  REQUIRE(rows[0].claim == "E[T] uncoded all n=1000000000 model A (order statistics)");
  const double n = 1e9;
  const double euler_gamma = 0.57721566490153286;
  const double h_n = std::log(n) + euler_gamma + 1.0 / (2.0 * n) - 1.0 / (12.0 * n * n);
  CHECK(rows[0].theory == Approx(1.0 + h_n).epsilon(1e-9));
}

TEST_CASE("check scaling: the ErasureHead speedup as n doubles (quick)",
          "[experiments][check][heavy]") {
  const auto out = stragglersim::testing::scratch_dir("check_scaling_test", "speedup");
  std::vector<CheckRow> rows;
  speedup_rows(/*quick=*/true, rows, out);
  REQUIRE(rows.size() >= 3);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
  const std::string csv = stragglersim::testing::slurp(out / "speedup.csv");
  CHECK(csv.rfind("workers,predicted_speedup,measured_speedup,measured_se\n8,", 0) == 0);
}

}  // namespace stragglersim::experiments::check

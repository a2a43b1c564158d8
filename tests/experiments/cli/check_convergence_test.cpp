// The `check` rows of the convergence predictions (experiments/cli/check_convergence.cpp): every
// row of the quick run holds, and exact_curve.csv has a line per optimizer and iteration whose
// exact value is the row's theory at the reported t.

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"
#include "tests/test_support.h"

namespace stragglersim::experiments::check {

TEST_CASE("check convergence: the coded bound holds over repeated runs (quick)",
          "[experiments][check][heavy]") {
  std::vector<CheckRow> rows;
  coded_bound_rows(/*quick=*/true, rows);
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
}

TEST_CASE("check convergence: the exact least-squares curve is the mean of repeated runs (quick)",
          "[experiments][check][heavy]") {
  const auto out = stragglersim::testing::scratch_dir("check_convergence_test", "exact");
  std::vector<CheckRow> rows;
  exact_curve_rows(/*quick=*/true, rows, out);
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
  std::istringstream csv(stragglersim::testing::slurp(out / "exact_curve.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line == "optimizer,iteration,measured_mean,measured_se,exact,bound");
  int lines = 0;
  while (std::getline(csv, line)) {
    ++lines;
  }
  // gd and nesterov, t = 0..40.
  CHECK(lines == 2 * 41);
}

TEST_CASE(
    "check convergence: logistic runs stay under the theorem's bound, floor and rate "
    "(quick)",
    "[experiments][check][heavy]") {
  std::vector<CheckRow> rows;
  logistic_rows(/*quick=*/true, rows);
  // Three configs, each a bound, a floor and a rate row.
  REQUIRE(rows.size() == 9);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
}

}  // namespace stragglersim::experiments::check

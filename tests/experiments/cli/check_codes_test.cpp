// The `check` rows of the codes (experiments/cli/check_codes.cpp): every row of the quick run
// holds, and the group-erasure theory under first_r is the hypergeometric probability that no
// worker of a group is among the first r, C(n − d, r) / C(n, r), computed here.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"

namespace stragglersim::experiments::check {
namespace {

/// C(n − d, r) / C(n, r) = Π_{i<d} (n − r − i) / (n − i).
double no_worker_of_group_heard(int n, int d, int r) {
  double q = 1.0;
  for (int i = 0; i < d; ++i) {
    q *= static_cast<double>(n - r - i) / static_cast<double>(n - i);
  }
  return q;
}

}  // namespace

TEST_CASE("check codes: group erasure q of FRC against the hypergeometric formula (quick)",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  erasure_rows(/*quick=*/true, rows);
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
  CHECK(rows[0].claim == "q first_r n=64 d=2 r=32");
  CHECK(rows[0].theory == Approx(no_worker_of_group_heard(64, 2, 32)).epsilon(1e-12));
  CHECK(rows[1].claim == "q first_r n=30 d=3 r=15");
  CHECK(rows[1].theory == Approx(no_worker_of_group_heard(30, 3, 15)).epsilon(1e-12));
}

TEST_CASE("check codes: heterogeneity-aware loads under heterogeneous workers (quick)",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  proportional_rows(/*quick=*/true, rows);
  proportional_cyclic_rows(/*quick=*/true, rows);
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
}

}  // namespace stragglersim::experiments::check

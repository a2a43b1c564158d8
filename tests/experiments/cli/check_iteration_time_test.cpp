// The `check` rows of the iteration-time theory (experiments/cli/check_iteration_time.cpp): every
// row of the quick run holds, and the rows' theory is the closed form where one is known
// (K-sync: E[X_(K:n)] = shift + H_n − H_(n−K) for Exp(1) tails).

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"

namespace stragglersim::experiments::check {
namespace {

/// The row whose claim starts with `prefix` (exactly one).
const CheckRow& iteration_time_row(const std::vector<CheckRow>& rows, const std::string& prefix) {
  const CheckRow* found = nullptr;
  for (const auto& row : rows) {
    if (row.claim.rfind(prefix, 0) == 0) {
      REQUIRE(found == nullptr);
      found = &row;
    }
  }
  REQUIRE(found != nullptr);
  return *found;
}

double k_sync_harmonic(int n) {
  double h = 0.0;
  for (int i = 1; i <= n; ++i) {
    h += 1.0 / i;
  }
  return h;
}

}  // namespace

TEST_CASE("check iteration time: time per update of the four disciplines", "[experiments][check]") {
  std::vector<CheckRow> rows;
  update_time_rows(rows);
  REQUIRE(rows.size() == 9);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
  // K-sync waits for the K-th of n = 8 arrivals each update.
  CHECK(iteration_time_row(rows, "E[T/update] K-sync n=8 K=3 shift=0:").theory ==
        Approx(k_sync_harmonic(8) - k_sync_harmonic(5)).epsilon(1e-12));
  CHECK(iteration_time_row(rows, "E[T/update] K-sync n=8 K=3 shift=0.5:").theory ==
        Approx(0.5 + k_sync_harmonic(8) - k_sync_harmonic(5)).epsilon(1e-12));
}

TEST_CASE("check iteration time: the mean of every scheme, anytime and the finish policy (quick)",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  iteration_time_rows(/*quick=*/true, rows);
  // Three shapes, two tail models, five schemes each.
  CHECK(rows.size() == 30);
  anytime_rows(/*quick=*/true, rows);
  policy_rows(/*quick=*/true, rows);
  persistent_rows(/*quick=*/true, rows);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
    CHECK(row.tolerance > 0.0);
  }
}

TEST_CASE("check iteration time: multi-message completion times (quick)",
          "[experiments][check][heavy]") {
  std::vector<CheckRow> rows;
  multi_message_rows(/*quick=*/true, rows);
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation);
    CHECK(row.pass);
  }
}

}  // namespace stragglersim::experiments::check

// The `check` rows of the collectives (experiments/cli/check_collectives.cpp): every row of the
// quick run holds, every kind, rule and delay model is drawn, each bound comes with its partner
// on the other side, and the exact rows are sharp enough that a prediction off by 5 per cent
// fails them.

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"

namespace stragglersim::experiments::check {

TEST_CASE("check collectives: every row holds and every kind, rule and delay is drawn",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  collective_rows(/*quick=*/true, rows);
  REQUIRE(rows.size() >= 38);
  for (const auto& row : rows) {
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation
                   << ", tolerance " << row.tolerance);
    CHECK(row.pass);
    CHECK(row.tolerance > 0.0);
    CHECK(row.claim.rfind("E[T] ", 0) == 0);
  }
  const auto count = [&](const std::string& part) {
    int k = 0;
    for (const auto& row : rows) {
      k += row.claim.find(part) != std::string::npos ? 1 : 0;
    }
    return k;
  };
  for (const char* kind :
       {"ring", "tree", "halving_doubling", "direct", "hierarchical", "stragglar"}) {
    INFO(kind);
    CHECK(count(std::string("E[T] ") + kind + " ") >= 6);
  }
  CHECK(count(" all n=") >= 12);
  CHECK(count("first_r r=") >= 12);
  CHECK(count(" deadline tau=") >= 12);
  CHECK(count("drop_compute tau=") >= 2);
  CHECK(count("frc d=2 first_r") >= 1);
  CHECK(count(" heterogeneous") >= 20);
  CHECK(count(" shifted exp") >= 18);
  // Kinds whose offsets differ leave first_r with bounds; each lower bound row is followed by
  // its upper bound, and lower <= upper.
  int bounds = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].claim.find("mean >= E[t*] + min w") != std::string::npos) {
      ++bounds;
      REQUIRE(i + 1 < rows.size());
      CHECK(rows[i + 1].claim.find("mean <= E[t*] + max w") != std::string::npos);
      CHECK(rows[i].theory < rows[i + 1].theory);
    }
  }
  CHECK(bounds >= 3);
  // Rings and direct all-reduces have equal offsets: their first_r rows are exact.
  CHECK(count("E[T] ring frc d=2 first_r") + count("E[T] ring first_r") >= 2);
  for (const auto& row : rows) {
    if (row.claim.starts_with("E[T] ring") || row.claim.starts_with("E[T] direct")) {
      INFO(row.claim);
      CHECK(row.claim.ends_with(": exact"));
    }
  }
}

TEST_CASE("check collectives: a prediction off by 5 per cent fails its exact row",
          "[experiments][check]") {
  std::vector<CheckRow> rows;
  collective_rows(/*quick=*/true, rows);
  int exact = 0;
  for (const auto& row : rows) {
    if (!row.claim.ends_with(": exact")) {
      continue;
    }
    ++exact;
    INFO(row.claim << ": theory " << row.theory << ", simulation " << row.simulation
                   << ", tolerance " << row.tolerance);
    for (const double factor : {0.95, 1.05}) {
      CHECK(std::abs(row.simulation - factor * row.theory) > row.tolerance);
    }
  }
  CHECK(exact >= 25);
}

}  // namespace stragglersim::experiments::check

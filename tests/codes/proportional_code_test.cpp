#include "codes/proportional_code.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "codes/fractional_repetition_code.h"

using stragglersim::codes::FractionalRepetitionCode;
using stragglersim::codes::ProportionalCode;

namespace {

ProportionalCode make(int n, int k, int d, std::vector<double> factors) {
  ProportionalCode::Options o;
  o.workers = n;
  o.partitions = k;
  o.d = d;
  o.factors = std::move(factors);
  return ProportionalCode(o);
}

}  // namespace

TEST_CASE("codes: apportionment by largest remainder on enumerated cases",
          "[codes][proportional]") {
  struct Case {
    std::vector<double> weights;
    int total;
    std::vector<int> expected;
  };
  // Quotas 4.5/4.5/3 → 5/4/3 (tie to the lower index); a tiny weight still gets 1, taken from
  // the share with the smallest remainder (several units from one share if need be); equal
  // weights split evenly.
  const std::vector<Case> cases = {
      {{1.5, 1.5, 1.0}, 12, {5, 4, 3}},
      {{1.0, 1.0, 1e-9}, 4, {2, 1, 1}},
      {{1.0, 1e-9, 1e-9, 1e-9}, 5, {2, 1, 1, 1}},  // one share gives back two units
      {{1.0, 1.0, 1.0, 1.0}, 8, {2, 2, 2, 2}},
      {{3.0, 1.0}, 2, {1, 1}},
      {{2.0, 1.0}, 10, {7, 3}},
      {{1.0}, 7, {7}},
  };
  for (const Case& c : cases) {
    CHECK(ProportionalCode::apportion(c.weights, c.total) == c.expected);
  }
  // Every total from the number of shares to 150, on a fixed set of weights: the shares sum to
  // the total and each is ≥ 1; once every quota is ≥ 1 (total ≥ 96 here: no share is raised to
  // its floor of 1), each share is within 1 of its quota.
  const std::vector<double> weights = {0.9, 0.05, 2.0, 1.0, 0.5, 0.33};
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  int unconstrained = 0;
  for (int total = 6; total <= 150; ++total) {
    INFO("total = " << total);
    const std::vector<int> shares = ProportionalCode::apportion(weights, total);
    CHECK(std::accumulate(shares.begin(), shares.end(), 0) == total);
    const bool floors_bind = total * 0.05 / sum < 1.0;
    unconstrained += floors_bind ? 0 : 1;
    for (std::size_t g = 0; g < weights.size(); ++g) {
      CHECK(shares[g] >= 1);
      if (!floors_bind) {
        CHECK(std::abs(shares[g] - total * weights[g] / sum) < 1.0);
      }
    }
  }
  CHECK(unconstrained == 55);  // totals 96 … 150
}

TEST_CASE("codes: proportional with equal factors and k = n is FRC worker for worker",
          "[codes][proportional]") {
  for (const int n : {1, 4, 6, 12}) {
    for (int d = 1; d <= n; ++d) {
      if (n % d != 0) {
        continue;
      }
      INFO("n = " << n << ", d = " << d);
      const ProportionalCode code =
          make(n, 0, d, std::vector<double>(static_cast<std::size_t>(n), 2.5));
      const FractionalRepetitionCode frc(n, d);
      CHECK(code.assignment() == frc.assignment());
      CHECK(code.stragglers_tolerated() == d - 1);
    }
  }
}

TEST_CASE("codes: proportional loads follow the speeds and fast workers share groups",
          "[codes][proportional]") {
  // Workers 1 and 3 are twice as slow: they form the second group (speed 1/2) and hold 4 of the
  // 12 partitions, workers 0 and 2 hold the other 8. Loads are |support|·n/k.
  const ProportionalCode code = make(4, 12, 2, {1.0, 2.0, 1.0, 2.0});
  CHECK(code.group_partitions() == std::vector<int>{8, 4});
  CHECK(code.group_of(0) == 0);
  CHECK(code.group_of(2) == 0);
  CHECK(code.group_of(1) == 1);
  CHECK(code.group_of(3) == 1);
  CHECK(code.loads() == std::vector<double>{8.0 / 3.0, 4.0 / 3.0, 8.0 / 3.0, 4.0 / 3.0});
  // Expected compute time load·factor is equal across groups.
  CHECK(code.load(0) * 1.0 == Approx(code.load(1) * 2.0));
  // Uncoded (d = 1) with proportional loads: partitions contiguous, fastest worker first.
  const ProportionalCode uncoded = make(3, 7, 1, {4.0, 1.0, 2.0});
  CHECK(uncoded.group_partitions() == std::vector<int>{4, 2, 1});
  CHECK(uncoded.support(1).front() == 0);
  CHECK(uncoded.support(2).front() == 4);
  CHECK(uncoded.support(0).front() == 6);
}

TEST_CASE("codes: proportional decodes every heard set of 6 workers as its groups say",
          "[codes][proportional]") {
  // All 2^6 heard sets: decodable exactly when every group is heard, then α = 1 (the exact
  // gradient); otherwise α is 1 on the covered groups' partitions and 0 elsewhere.
  const ProportionalCode code = make(6, 10, 2, {1.0, 3.0, 1.5, 1.0, 3.0, 1.5});
  for (unsigned mask = 0; mask < 64U; ++mask) {
    std::vector<int> heard;
    std::vector<char> group_heard(3, 0);
    for (int i = 0; i < 6; ++i) {
      if ((mask >> static_cast<unsigned>(i)) & 1U) {
        heard.push_back(i);
        group_heard[static_cast<std::size_t>(code.group_of(i))] = 1;
      }
    }
    INFO("mask = " << mask);
    const bool all = group_heard[0] != 0 && group_heard[1] != 0 && group_heard[2] != 0;
    CHECK(code.decodable(heard) == all);
    const auto dec = code.decode_optimal(heard);
    for (int j = 0; j < code.partitions(); ++j) {
      int holder_group = -1;
      for (int i = 0; i < 6; ++i) {
        const auto s = code.support(i);
        if (std::find(s.begin(), s.end(), j) != s.end()) {
          holder_group = code.group_of(i);
        }
      }
      CHECK(dec.alpha(j) == (group_heard[static_cast<std::size_t>(holder_group)] != 0 ? 1.0 : 0.0));
    }
    CHECK(code.decode_exact(heard).exact == all);
    if (all) {
      CHECK(dec.error == 0.0);
    }
  }
}

TEST_CASE("codes: proportional options name the violated constraint", "[codes][proportional]") {
  ProportionalCode::Options o;
  o.workers = 4;
  o.partitions = 8;
  o.d = 3;
  o.factors = {1.0, 1.0, 1.0, 1.0};
  REQUIRE(o.validate());
  CHECK(o.validate()->field == "d");
  o.d = 2;
  o.partitions = 1;  // two groups need two partitions
  REQUIRE(o.validate());
  CHECK(o.validate()->field == "partitions");
  o.partitions = 0;  // k = n
  CHECK_FALSE(o.validate());
  o.factors = {1.0, 1.0, 1.0};
  REQUIRE(o.validate());
  CHECK(o.validate()->got == stragglersim::Violation::Got::kSize);
  for (const double bad : {0.0,
                           -1.0,
                           std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()}) {
    o.factors = {1.0, 1.0, bad, 1.0};
    REQUIRE(o.validate());
    CHECK(o.validate()->got == stragglersim::Violation::Got::kElement);
    CHECK(o.validate()->index == 2);
  }
}

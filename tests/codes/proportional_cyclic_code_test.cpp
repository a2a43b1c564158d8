#include "codes/proportional_cyclic_code.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "codes/proportional_code.h"

using stragglersim::codes::ProportionalCode;
using stragglersim::codes::ProportionalCyclicCode;

namespace {

ProportionalCyclicCode make_proportional_crc(int n, int k, int s, std::vector<double> factors) {
  return ProportionalCyclicCode(
      {.workers = n, .partitions = k, .s = s, .factors = std::move(factors), .seed = 11});
}

/// Calls `each(subset)` for every subset of {0, …, n − 1} of size `size`, ascending.
template <class Each>
void for_each_subset(int n, int size, Each each) {
  std::vector<int> subset(static_cast<std::size_t>(size));
  std::iota(subset.begin(), subset.end(), 0);
  while (true) {
    each(subset);
    int i = size - 1;
    while (i >= 0 && subset[static_cast<std::size_t>(i)] == n - size + i) --i;
    if (i < 0) return;
    ++subset[static_cast<std::size_t>(i)];
    for (int t = i + 1; t < size; ++t) {
      subset[static_cast<std::size_t>(t)] = subset[static_cast<std::size_t>(t - 1)] + 1;
    }
  }
}

}  // namespace

TEST_CASE("codes: capped apportionment on enumerated cases", "[codes][proportional_crc]") {
  struct Case {
    std::vector<double> weights;
    int total;
    int cap;
    std::vector<int> expected;
  };
  // Uncapped it is the largest-remainder apportionment; a share above the cap is fixed there
  // and the rest apportioned again (possibly capping another); total = w·cap caps every share.
  const std::vector<Case> cases = {
      {{1.5, 1.5, 1.0}, 12, 10, {5, 4, 3}},
      {{10.0, 1.0, 1.0}, 12, 6, {6, 3, 3}},
      {{10.0, 5.0, 1.0, 1.0}, 16, 5, {5, 5, 3, 3}},  // the second share is capped in round two
      {{1.0, 2.0, 3.0}, 9, 3, {3, 3, 3}},
      {{1.0, 1.0, 1.0, 1e-9}, 4, 4, {1, 1, 1, 1}},
      {{8.0, 1.0}, 4, 3, {3, 1}},
  };
  for (const Case& c : cases) {
    CHECK(ProportionalCyclicCode::capped_apportion(c.weights, c.total, c.cap) == c.expected);
  }
  // Against the definition on every total of a fixed set: sum, bounds, and a share below the
  // cap is the plain apportionment of what the capped shares leave.
  const std::vector<double> weights = {4.0, 0.5, 2.0, 1.0, 0.25};
  for (int cap = 1; cap <= 8; ++cap) {
    for (int total = 5; total <= 5 * cap; ++total) {
      INFO("cap " << cap << " total " << total);
      const std::vector<int> shares = ProportionalCyclicCode::capped_apportion(weights, total, cap);
      CHECK(std::accumulate(shares.begin(), shares.end(), 0) == total);
      std::vector<double> open;
      int left = total;
      for (std::size_t i = 0; i < shares.size(); ++i) {
        CHECK(shares[i] >= 1);
        CHECK(shares[i] <= cap);
        if (shares[i] == cap) {
          left -= cap;
        } else {
          open.push_back(weights[i]);
        }
      }
      if (!open.empty() && left >= static_cast<int>(open.size())) {
        std::vector<int> rest;
        for (std::size_t i = 0; i < shares.size(); ++i) {
          if (shares[i] != cap) rest.push_back(shares[i]);
        }
        // The uncapped shares are the apportionment of the rest (unless that would exceed the
        // cap somewhere, when the capped set would have been larger).
        const std::vector<int> plain = ProportionalCode::apportion(open, left);
        if (std::all_of(plain.begin(), plain.end(), [&](int x) { return x <= cap; })) {
          CHECK(rest == plain);
        }
      }
    }
  }
}

TEST_CASE("codes: proportional_crc holds loads in proportion to speed, each partition s + 1 times",
          "[codes][proportional_crc]") {
  const std::vector<double> factors = {1.0, 2.0, 1.0, 4.0, 1.0, 1.0, 2.0};  // n = 7
  for (const int s : {0, 1, 2, 3}) {
    for (const int k : {7, 14, 28}) {
      INFO("s = " << s << ", k = " << k);
      const auto code = make_proportional_crc(7, k, s, factors);
      std::vector<double> speeds;
      for (const double f : factors) speeds.push_back(1.0 / f);
      const std::vector<int> loads =
          ProportionalCyclicCode::capped_apportion(speeds, k * (s + 1), k);
      std::vector<int> holders(static_cast<std::size_t>(k), 0);
      int first = 0;  // C_i
      for (int i = 0; i < 7; ++i) {
        const auto support = code.support(i);
        REQUIRE(static_cast<int>(support.size()) == loads[static_cast<std::size_t>(i)]);
        // Worker i holds (C_i + t) mod k, t < ℓ_i.
        std::vector<int> expected;
        for (int t = 0; t < loads[static_cast<std::size_t>(i)]; ++t) {
          expected.push_back((first + t) % k);
        }
        std::sort(expected.begin(), expected.end());
        CHECK(std::vector<int>(support.begin(), support.end()) == expected);
        for (const int j : support) ++holders[static_cast<std::size_t>(j)];
        first += loads[static_cast<std::size_t>(i)];
        CHECK(code.load(i) == Approx(loads[static_cast<std::size_t>(i)] * 7.0 / k));
      }
      CHECK(std::all_of(holders.begin(), holders.end(), [&](int h) { return h == s + 1; }));
      // A worker twice as slow holds about half as much (within the rounding of one unit).
      if (k == 28) {
        CHECK(std::abs(2 * loads[1] - loads[0]) <= 2);
        CHECK(std::abs(4 * loads[3] - loads[0]) <= 4);
      }
    }
  }
}

TEST_CASE("codes: proportional_crc decodes exactly from every set of n - s workers",
          "[codes][proportional_crc]") {
  const std::vector<std::vector<double>> factor_sets = {
      {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
      {1.0, 3.0, 1.0, 1.5, 1.0, 2.0, 1.0, 1.0},
      {5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
  };
  for (const auto& factors : factor_sets) {
    for (const int s : {0, 1, 2, 3}) {
      for (const int k : {8, 12, 32}) {
        const auto code = make_proportional_crc(8, k, s, factors);
        for (int size = 8 - s; size <= 8; ++size) {
          for_each_subset(8, size, [&](const std::vector<int>& heard) {
            INFO("s = " << s << ", k = " << k << ", heard " << heard.size() << " from "
                        << heard.front());
            CHECK(code.decodable(heard));
            const auto d = code.decode_exact(heard);
            CHECK(d.exact);
            CHECK(d.error <= 1e-18);
            CHECK(d.partitions_covered == k);
            // α = B_Kᵀa is the all-ones vector: the decoded gradient is the full gradient.
            CHECK((d.alpha.array() - 1.0).abs().maxCoeff() <= 1e-10);
          });
        }
        // One worker too few is not decodable by count.
        if (s < 7) {
          std::vector<int> too_few(static_cast<std::size_t>(7 - s));
          std::iota(too_few.begin(), too_few.end(), 0);
          CHECK_FALSE(code.decodable(too_few));
        }
      }
    }
  }
}

TEST_CASE("codes: proportional_crc at s = 0 is uncoded with proportional loads",
          "[codes][proportional_crc]") {
  const auto code = make_proportional_crc(4, 10, 0, {1.0, 1.0, 2.0, 4.0});
  // Speeds 1, 1, 0.5, 0.25 of 2.75: quotas 3.64, 3.64, 1.82, 0.91 → 4, 3, 2, 1.
  const std::vector<std::vector<int>> expected = {{0, 1, 2, 3}, {4, 5, 6}, {7, 8}, {9}};
  for (int i = 0; i < 4; ++i) {
    const auto support = code.support(i);
    CHECK(std::vector<int>(support.begin(), support.end()) ==
          expected[static_cast<std::size_t>(i)]);
    for (const double v : code.support_values(i)) CHECK(v == 1.0);
  }
}

TEST_CASE("codes: proportional_crc options name the violated key", "[codes][proportional_crc]") {
  const auto check = [](ProportionalCyclicCode::Options o, const char* key) {
    const auto v = o.validate();
    REQUIRE(v.has_value());
    CHECK(v->field == key);
  };
  ProportionalCyclicCode::Options good;
  good.workers = 4;
  good.s = 1;
  good.factors = {1.0, 1.0, 2.0, 2.0};
  CHECK_FALSE(good.validate().has_value());
  auto o = good;
  o.s = 4;
  check(o, "s");
  o = good;
  o.s = -1;
  check(o, "s");
  o = good;
  o.partitions = 1;  // 1 · (s + 1) = 2 copies for 4 workers
  check(o, "partitions");
  o = good;
  o.factors = {1.0, 1.0};
  check(o, "factors");
  o = good;
  o.factors[2] = 0.0;
  check(o, "factors");
  o = good;
  o.factors[3] = std::nan("");
  check(o, "factors");
}

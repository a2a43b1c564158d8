#include "codes/cyclic_repetition_code.h"

#include <Eigen/LU>
#include <algorithm>
#include <catch2/catch.hpp>

#include "codes/code_analysis.h"

using stragglersim::codes::CyclicRepetitionCode;
using stragglersim::codes::for_each_straggler_pattern;

TEST_CASE("codes: cyclic repetition code decodes from any n-s workers", "[codes][crc]") {
  const auto [n, s] = GENERATE(table<int, int>({{7, 2}, {8, 3}, {10, 4}, {12, 3}}));
  INFO("n = " << n << ", s = " << s);
  const CyclicRepetitionCode code(n, s, 42);
  int patterns = 0;
  for (int t = 0; t <= s; ++t) {
    const bool exhaustive =
        for_each_straggler_pattern(n, t, 1 << 20, 1, 0, [&](std::span<const int> heard) {
          const auto d = code.decode_exact(heard);
          ++patterns;
          INFO("problem: " << d.problem);
          REQUIRE(d.exact);
          REQUIRE(d.error <= 1e-9);
          REQUIRE(code.decodable(heard));
        });
    REQUIRE(exhaustive);
  }
  int expected = 0;
  for (int t = 0; t <= s; ++t) {
    expected += static_cast<int>(stragglersim::codes::binomial(n, t));
  }
  CHECK(patterns == expected);
}

TEST_CASE("codes: cyclic repetition code has cyclic support i..i+s", "[codes][crc]") {
  const CyclicRepetitionCode code(9, 3, 7);
  CHECK(code.name() == "crc");
  CHECK(code.stragglers_tolerated() == 3);
  for (int i = 0; i < 9; ++i) {
    std::vector<int> expected;
    for (int t = 0; t <= 3; ++t) {
      expected.push_back((i + t) % 9);
    }
    std::sort(expected.begin(), expected.end());
    const auto support = code.support(i);
    CHECK(std::vector<int>(support.begin(), support.end()) == expected);
    CHECK(code.assignment()(i, i) == 1.0);
    CHECK(code.load(i) == 4.0);
  }
  // Every row lies in null(H) ∋ 1, so 1 is in the row space: rank n − s.
  Eigen::FullPivLU<Eigen::MatrixXd> lu(code.assignment());
  CHECK(lu.rank() == 9 - 3);
}

TEST_CASE("codes: cyclic repetition code refuses fewer than n-s workers", "[codes][crc]") {
  const CyclicRepetitionCode code(8, 2, 3);
  const std::vector<int> heard = {0, 1, 2, 3, 4};  // n − s − 1 = 5 workers
  CHECK_FALSE(code.decodable(heard));
  const auto d = code.decode_exact(heard);
  CHECK_FALSE(d.exact);
  CHECK(d.error > 1e-9);
  CHECK_THAT(d.problem, Catch::Matchers::StartsWith("the 5 workers heard cannot decode exactly"));
  // Repeated workers count once.
  const std::vector<int> repeated = {0, 0, 1, 2, 3, 4};
  CHECK_FALSE(code.decodable(repeated));
}

TEST_CASE("codes: cyclic repetition code with s = 0 is uncoded", "[codes][crc]") {
  const CyclicRepetitionCode code(5, 0, 1);
  CHECK(code.assignment() == Eigen::MatrixXd::Identity(5, 5));
}

TEST_CASE("codes: no set of fewer than n-s workers decodes a cyclic repetition code",
          "[codes][crc]") {
  // The random construction is generic: 1 lies in the span of fewer than n − s rows only on a
  // set of H of probability zero, so the combinatorial decodable() is exact. Checked exhaustively.
  for (const auto& [n, s] : {std::pair{7, 2}, std::pair{8, 3}, std::pair{10, 4}}) {
    const CyclicRepetitionCode code(n, s, 42);
    for (int t = s + 1; t < n; ++t) {
      for_each_straggler_pattern(n, t, 1 << 20, 1, 0, [&](std::span<const int> heard) {
        REQUIRE_FALSE(code.decode_exact(heard).exact);
        REQUIRE_FALSE(code.decodable(heard));
      });
    }
  }
}

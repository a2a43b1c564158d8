#include "codes/cyclic_mds_code.h"

#include <Eigen/LU>
#include <catch2/catch.hpp>
#include <complex>
#include <numbers>

#include "codes/code_analysis.h"

using stragglersim::codes::CyclicMdsCode;
using stragglersim::codes::for_each_straggler_pattern;

TEST_CASE("codes: cyclic MDS code decodes from any n-s workers", "[codes][cyclic_mds]") {
  const auto params =
      GENERATE(std::pair{7, 2}, std::pair{8, 3}, std::pair{10, 4}, std::pair{12, 3});
  const auto [n, s] = params;
  INFO("n = " << n << ", s = " << s);
  const CyclicMdsCode code(n, s);
  CHECK(code.stragglers_tolerated() >= s);
  for (int t = 0; t <= code.stragglers_tolerated(); ++t) {
    const bool exhaustive =
        for_each_straggler_pattern(n, t, 1 << 20, 1, 0, [&](std::span<const int> heard) {
          const auto d = code.decode_exact(heard);
          INFO("problem: " << d.problem);
          REQUIRE(d.exact);
          REQUIRE(d.error <= 1e-9);
          REQUIRE(code.decodable(heard));
        });
    REQUIRE(exhaustive);
  }
}

TEST_CASE("codes: cyclic MDS redundancy follows the parity of n - s", "[codes][cyclic_mds]") {
  CHECK(CyclicMdsCode::effective_redundancy(7, 2) == 2);
  CHECK(CyclicMdsCode::effective_redundancy(8, 3) == 3);
  CHECK(CyclicMdsCode::effective_redundancy(10, 4) == 5);
  CHECK(CyclicMdsCode::effective_redundancy(9, 3) == 4);
  CHECK(CyclicMdsCode::effective_redundancy(6, 0) == 0);
  const CyclicMdsCode code(10, 4);
  CHECK(code.requested_stragglers() == 4);
  CHECK(code.stragglers_tolerated() == 5);
  CHECK(code.load(0) == 6.0);
  CHECK(CyclicMdsCode(6, 0).assignment() == Eigen::MatrixXd::Identity(6, 6));
}

TEST_CASE("codes: cyclic MDS rows are cyclic shifts of a real generator", "[codes][cyclic_mds]") {
  const int n = 9;
  const CyclicMdsCode code(n, 4);
  const auto& g = code.generator();
  REQUIRE(g.size() == 5);
  // g(x) = Π_{j=3..6}(x − ω^j) has real coefficients and is palindromic (roots closed under
  // inversion, constant term 1 up to the common scale).
  for (std::size_t t = 0; t < g.size(); ++t) {
    CHECK(g[t] != 0.0);
    CHECK(g[t] == Approx(g[g.size() - 1 - t]).epsilon(1e-12));
  }
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < 5; ++t) {
      CHECK(code.assignment()(i, (i + t) % n) == g[static_cast<std::size_t>(t)]);
    }
    CHECK(code.load(i) == 5.0);
  }
  // 1 is in the row space ⟨g⟩, whose dimension is n − σ.
  Eigen::FullPivLU<Eigen::MatrixXd> lu(code.assignment());
  CHECK(lu.rank() == n - 4);
  // g divides 1 + x + … + x^{n−1}: g(ω^j) = 0 at the roots ω^3 … ω^6.
  for (int j = 3; j <= 6; ++j) {
    std::complex<double> value = 0.0;
    const std::complex<double> w = std::polar(1.0, 2.0 * std::numbers::pi * j / n);
    for (std::size_t t = g.size(); t-- > 0;) {
      value = value * w + g[t];
    }
    CHECK(std::abs(value) < 1e-12);
  }
}

TEST_CASE("codes: cyclic MDS decodable() agrees with the exact decoder on every set",
          "[codes][cyclic_mds]") {
  for (const auto& [n, s] : {std::pair{7, 2}, std::pair{8, 3}, std::pair{10, 4}}) {
    const CyclicMdsCode code(n, s);
    for (int t = 0; t <= n; ++t) {
      for_each_straggler_pattern(n, t, 1 << 20, 1, 0, [&](std::span<const int> heard) {
        const bool exact = code.decode_exact(heard).exact;
        REQUIRE(code.decodable(heard) == exact);
      });
    }
  }
  // The four odd workers of (8, 3) decode although 4 < n − σ = 5.
  const CyclicMdsCode code(8, 3);
  const std::vector<int> odd = {1, 3, 5, 7};
  CHECK(code.decodable(odd));
  CHECK(code.decode_exact(odd).exact);
}

TEST_CASE("codes: cyclic MDS code refuses fewer than n-s workers", "[codes][cyclic_mds]") {
  const CyclicMdsCode code(8, 3);
  const std::vector<int> heard = {1, 2, 5, 6};
  CHECK_FALSE(code.decodable(heard));
  const auto d = code.decode_exact(heard);
  CHECK_FALSE(d.exact);
  CHECK_THAT(d.problem, Catch::Matchers::StartsWith("the 4 workers heard cannot decode exactly"));
}

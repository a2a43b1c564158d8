// The expected and empirical rescales of a decoded estimate (docs/model.md, ErasureHead) against
// their defining properties, enumerated over every heard set: neither may become a no-op.
#include <catch2/catch.hpp>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/gradient_code.h"

namespace stragglersim::codes {
namespace {

/// Workers of `mask`, ascending.
std::vector<int> members(unsigned mask, int n) {
  std::vector<int> heard;
  for (int i = 0; i < n; ++i) {
    if ((mask >> static_cast<unsigned>(i) & 1U) != 0U) {
      heard.push_back(i);
    }
  }
  return heard;
}

int popcount(unsigned mask) { return __builtin_popcount(mask); }

}  // namespace

TEST_CASE("codes: expected rescale makes the first-r FRC estimate unbiased over every heard set",
          "[codes][rescale]") {
  // FRC n = 8, d = 2, the first r = 3 workers heard, each r-set equally likely. q, the chance
  // that group 0 is not heard, is counted over the sets here (C(6,3)/C(8,3) = 20/56).
  const int n = 8;
  const int r = 3;
  const FractionalRepetitionCode code(n, 2);
  int sets = 0;
  int group0_lost = 0;
  for (unsigned mask = 0; mask < (1U << static_cast<unsigned>(n)); ++mask) {
    if (popcount(mask) == r) {
      ++sets;
      group0_lost += (mask & 3U) == 0U ? 1 : 0;
    }
  }
  const double q = static_cast<double>(group0_lost) / sets;
  CHECK(q == Approx(20.0 / 56.0));
  Eigen::VectorXd none_sum = Eigen::VectorXd::Zero(n);
  Eigen::VectorXd expected_sum = Eigen::VectorXd::Zero(n);
  for (unsigned mask = 0; mask < (1U << static_cast<unsigned>(n)); ++mask) {
    if (popcount(mask) != r) {
      continue;
    }
    const std::vector<int> heard = members(mask, n);
    Decoding plain = code.decode_optimal(heard);
    Decoding expected = plain;
    rescale(plain, Rescale::kNone, q);
    rescale(expected, Rescale::kExpected, q);
    none_sum += plain.alpha;
    expected_sum += expected.alpha;
    // Rescaling multiplies: the weights stay proportional, α is recomputed from them.
    CHECK((expected.alpha - code.assignment().transpose() * expected.weights).norm() <= 1e-12);
    CHECK(expected.error == Approx((expected.alpha.array() - 1.0).square().sum()));
  }
  // E[α] = (1 − q)·1 unscaled and exactly 1 with the expected rescale.
  CHECK((none_sum / sets - Eigen::VectorXd::Constant(n, 1.0 - q)).norm() <= 1e-12);
  CHECK((expected_sum / sets - Eigen::VectorXd::Ones(n)).norm() <= 1e-12);
}

TEST_CASE("codes: empirical rescale restores the gradient's total weight k", "[codes][rescale]") {
  const int n = 8;
  const FractionalRepetitionCode code(n, 2);
  int checked = 0;
  for (unsigned mask = 1; mask < (1U << static_cast<unsigned>(n)); ++mask) {
    const std::vector<int> heard = members(mask, n);
    Decoding d = code.decode_optimal(heard);
    const int covered = d.partitions_covered;
    REQUIRE(covered > 0);
    rescale(d, Rescale::kEmpirical, 0.0);
    // Σ_j α_j = k whatever was covered, and every covered partition weighs k / covered.
    CHECK(d.alpha.sum() == Approx(n));
    for (int j = 0; j < n; ++j) {
      if (d.alpha(j) != 0.0) {
        CHECK(d.alpha(j) == Approx(static_cast<double>(n) / covered));
      }
    }
    checked += covered < n ? 1 : 0;
  }
  CHECK(checked > 0);  // sets that lost a group, where the rescale is not the identity
  // Nothing heard: nothing to rescale, and no division by zero.
  Decoding empty = code.decode_optimal(std::vector<int>{});
  rescale(empty, Rescale::kEmpirical, 0.0);
  CHECK(empty.alpha.isZero());
}

}  // namespace stragglersim::codes

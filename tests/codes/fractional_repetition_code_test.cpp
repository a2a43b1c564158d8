#include "codes/fractional_repetition_code.h"

#include <catch2/catch.hpp>

#include "codes/code_analysis.h"

using stragglersim::codes::binomial;
using stragglersim::codes::for_each_straggler_pattern;
using stragglersim::codes::FractionalRepetitionCode;

// Bound on the enumeration: every pattern of t ≤ d − 1 stragglers is decoded when C(n, t) ≤ 20000
// (all n ≤ 12, and the small t of larger n); otherwise 300 uniformly random patterns of t
// stragglers are decoded. The exhaustive cases are complete for n ≤ 12; for 13 ≤ n ≤ 24 the
// group structure makes the sample representative (a pattern fails only if it contains a whole
// group of d workers, impossible with t ≤ d − 1).
TEST_CASE("codes: fractional repetition code decodes from any d-1 stragglers", "[codes][frc]") {
  for (int n = 1; n <= 24; ++n) {
    for (int d = 1; d <= n; ++d) {
      if (n % d != 0) {
        continue;
      }
      INFO("n = " << n << ", d = " << d);
      const FractionalRepetitionCode code(n, d);
      for (int t = 0; t <= d - 1; ++t) {
        const bool exhaustive = for_each_straggler_pattern(n,
                                                           t,
                                                           20000,
                                                           300,
                                                           static_cast<std::uint64_t>(n * 100 + t),
                                                           [&](std::span<const int> heard) {
                                                             const auto dec =
                                                                 code.decode_exact(heard);
                                                             REQUIRE(dec.exact);
                                                             REQUIRE(dec.error <= 1e-9);
                                                             REQUIRE(code.decodable(heard));
                                                           });
        if (n <= 12) {
          REQUIRE(exhaustive);
        }
        CHECK(exhaustive == (binomial(n, t) <= 20000));
      }
    }
  }
}

TEST_CASE("codes: fractional repetition code fails when a whole group straggles", "[codes][frc]") {
  const FractionalRepetitionCode code(6, 2);
  const std::vector<int> heard = {2, 3, 4, 5};  // group 0 = workers 0, 1 lost
  CHECK_FALSE(code.decodable(heard));
  const auto d = code.decode_exact(heard);
  CHECK_FALSE(d.exact);
  CHECK(d.error == 2.0);
  CHECK(d.partitions_covered == 4);
  CHECK(d.problem == "the 4 workers heard cannot decode exactly; residual ‖α − 1‖² = 2");
}

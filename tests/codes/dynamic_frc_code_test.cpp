// dynamic_frc: FRC's code, position for position (supports, decoders over every heard set of a
// small code), the regrouping period it reports, and its options' first violations.

#include "codes/dynamic_frc_code.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "codes/fractional_repetition_code.h"

namespace stragglersim::codes {

TEST_CASE("dynamic_frc: FRC's supports and decodes on every heard set", "[codes][dynamic_frc]") {
  const int n = 6;
  const DynamicFrcCode dynamic({.workers = n, .partitions = 0, .d = 2, .every = 4});
  const FractionalRepetitionCode frc(n, 2);
  CHECK(dynamic.name() == "dynamic_frc");
  CHECK(dynamic.regroup_every() == 4);
  CHECK(frc.regroup_every() == 0);
  CHECK(dynamic.stragglers_tolerated() == 1);
  CHECK(dynamic.structure().layout == CodeLayout::kIrregular);
  CHECK(dynamic.structure().decoder == DecoderFamily::kCombinatorial);
  CHECK(dynamic.worker_groups() == frc.worker_groups());
  for (int p = 0; p < n; ++p) {
    const auto a = dynamic.support(p);
    const auto b = frc.support(p);
    CHECK(std::vector<int>(a.begin(), a.end()) == std::vector<int>(b.begin(), b.end()));
  }
  for (int mask = 0; mask < (1 << n); ++mask) {
    std::vector<int> heard;
    for (int p = n - 1; p >= 0; --p) {  // a non-ascending arrival order
      if (((mask >> p) & 1) != 0) {
        heard.push_back(p);
      }
    }
    INFO("mask " << mask);
    CHECK(dynamic.decodable(heard) == frc.decodable(heard));
    const Decoding x = dynamic.decode_optimal(heard);
    const Decoding y = frc.decode_optimal(heard);
    CHECK(x.weights == y.weights);
    CHECK(x.error == y.error);
    CHECK(x.exact == y.exact);
  }
}

TEST_CASE("dynamic_frc: options name their first violation", "[codes][dynamic_frc]") {
  struct Case {
    DynamicFrcCode::Options options;
    std::string field;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{.workers = 6, .partitions = 0, .d = 2, .every = 0},
       "every",
       "an integer in [1, 1000000000]"},
      {{.workers = 6, .partitions = 0, .d = 4, .every = 3}, "d", "a divisor of workers = 6"},
      {{.workers = 6, .partitions = 0, .d = 0, .every = 3}, "d", "an integer in [1, 6]"},
      {{.workers = 6, .partitions = 12, .d = 2, .every = 3}, "partitions", ""},
  };
  for (const Case& c : cases) {
    const Validation v = c.options.validate();
    REQUIRE(v);
    CHECK(v->field == c.field);
    if (!c.expected.empty()) {
      CHECK(v->expected == c.expected);
    }
  }
  CHECK_FALSE(
      DynamicFrcCode::Options{.workers = 6, .partitions = 6, .d = 3, .every = 1}.validate());
}

}  // namespace stragglersim::codes

#include <catch2/catch.hpp>
#include <memory>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/expander_graph_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/stochastic_gradient_code.h"
#include "codes/uncoded_code.h"

namespace stragglersim::codes {

TEST_CASE("codes: group codes describe their groups and the supports agree", "[codes][structure]") {
  const FractionalRepetitionCode frc({.workers = 12, .partitions = 0, .d = 3});
  const CodeStructure s = frc.structure();
  CHECK(s.layout == CodeLayout::kGroups);
  CHECK(s.group_size == 3);
  CHECK(s.groups == 4);
  CHECK(s.stragglers_tolerated == 2);
  CHECK(s.decoder == DecoderFamily::kCombinatorial);
  // The described groups are consecutive workers with identical supports.
  for (int i = 0; i < 12; ++i) {
    const auto first = frc.support(i / 3 * 3);
    const auto mine = frc.support(i);
    CHECK(std::equal(first.begin(), first.end(), mine.begin(), mine.end()));
  }
  const UncodedCode uncoded(5);
  CHECK(uncoded.structure().layout == CodeLayout::kGroups);
  CHECK(uncoded.structure().group_size == 1);
  CHECK(uncoded.structure().groups == 5);
}

TEST_CASE("codes: cyclic codes report load s + 1 and irregular codes a one-step decoder",
          "[codes][structure]") {
  const CyclicRepetitionCode crc(8, 2, 3);
  CHECK(crc.structure().layout == CodeLayout::kCyclic);
  CHECK(crc.structure().group_size == 3);
  CHECK(crc.structure().stragglers_tolerated == 2);
  for (int i = 0; i < 8; ++i) {
    CHECK(crc.support(i).size() == 3);
  }
  const CyclicMdsCode mds(8, 3);
  CHECK(mds.structure().layout == CodeLayout::kCyclic);
  CHECK(mds.structure().group_size == mds.stragglers_tolerated() + 1);
  CHECK(mds.structure().decoder == DecoderFamily::kLinearAlgebra);
  const BernoulliGradientCode bgc(10, 10, 2.0, 1);
  const ExpanderGraphCode expander(12, 3, 1);
  const StochasticGradientCode sgc(10, 10, 2, 1, std::nullopt);
  for (const GradientCode* c : {static_cast<const GradientCode*>(&bgc),
                                static_cast<const GradientCode*>(&expander),
                                static_cast<const GradientCode*>(&sgc)}) {
    CHECK(c->structure().layout == CodeLayout::kIrregular);
    CHECK(c->structure().one_step);
    CHECK(c->structure().group_size == 0);
  }
}

TEST_CASE("codes: options name the violated constraint", "[codes][structure]") {
  const auto frc = FractionalRepetitionCode::Options{.workers = 6, .partitions = 0, .d = 4};
  REQUIRE(frc.validate());
  CHECK(frc.validate().value().field == "d");
  CHECK(frc.validate().value().expected == "a divisor of workers = 6");
  CHECK_FALSE(
      (FractionalRepetitionCode::Options{.workers = 6, .partitions = 6, .d = 3}.validate()));
  const auto square = CyclicRepetitionCode::Options{.workers = 6, .partitions = 7, .s = 1};
  CHECK(square.validate().value().field == "partitions");
  const auto mds = CyclicMdsCode::Options{.workers = 6, .partitions = 0, .s = 6};
  REQUIRE(mds.validate());
  CHECK(mds.validate().value().field == "s");
  CHECK(mds.validate().value().expected == "an integer in [0, 5]");
  const auto expander = ExpanderGraphCode::Options{.workers = 6, .partitions = 5, .d = 3};
  CHECK(expander.validate().value().field == "partitions");
  CHECK(expander.validate().value().expected == "4 or no partitions key");
  const auto sgc =
      StochasticGradientCode::Options{.workers = 6, .partitions = 6, .d = 2, .seed = 1, .p = 1.0};
  CHECK(sgc.validate().value().field == "p");
  const auto bgc = BernoulliGradientCode::Options{.workers = 6, .partitions = 6, .d = 7.0};
  CHECK(bgc.validate().value().expected == "a number in (0, 6]");
  CHECK_THROWS_AS(FractionalRepetitionCode(frc), std::logic_error);
}

}  // namespace stragglersim::codes

#include "sim/stopping_rule.h"

#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/cyclic_mds_code.h"
#include "codes/fractional_repetition_code.h"

namespace stragglersim::sim {

TEST_CASE("sim: count rules stop at their count", "[sim][stopping]") {
  const std::vector<int> heard = {3, 1, 4, 0};
  std::span<const int> first3(heard.data(), 3);
  CHECK_FALSE(AllStopping(4).stop_after(first3));
  CHECK(AllStopping(4).stop_after(heard));
  CHECK(FirstRStopping(3).stop_after(first3));
  CHECK_FALSE(FirstRStopping(4).stop_after(first3));
  CHECK(DeadlineStopping(2.0, 4).deadline() == 2.0);
  CHECK(DeadlineStopping(2.0, 4).stop_after(heard));
  CHECK_FALSE(DeadlineStopping(2.0, 4).stop_after(first3));
}

TEST_CASE("sim: decodable stops once every FRC group is covered", "[sim][stopping]") {
  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(6, 2);
  const DecodableStopping rule(frc);
  CHECK(rule.minimum_arrivals() == 3);
  CHECK_FALSE(rule.stop_after(std::vector<int>{0, 1, 2}));
  CHECK(rule.stop_after(std::vector<int>{0, 2, 5}));
  const FirstROrDecodableStopping either(5, frc);
  CHECK(either.minimum_arrivals() == 3);
  CHECK(either.stop_after(std::vector<int>{1, 3, 4}));
  CHECK(either.stop_after(std::vector<int>{0, 1, 2, 3, 4}));
  CHECK_FALSE(either.stop_after(std::vector<int>{0, 1, 2, 3}));
}

TEST_CASE("sim: decodable waits past a set the exact decoder refuses", "[sim][stopping]") {
  // Real cyclic MDS at n = 64, s = 16 (built with σ = 17): the burst pattern, workers 0 … 16
  // straggling, counts as decodable but is ill-conditioned (codes/ stability table).
  const auto mds = std::make_shared<codes::CyclicMdsCode>(64, 16);
  const int sigma = mds->stragglers_tolerated();
  std::vector<int> heard(static_cast<std::size_t>(64 - sigma));
  std::iota(heard.begin(), heard.end(), sigma);
  REQUIRE(mds->decodable(heard));
  REQUIRE_FALSE(mds->decode_exact(heard).exact);
  const DecodableStopping rule(mds);
  CHECK_FALSE(rule.stop_after(heard));
  // Everyone heard: the rule stops (and the exact decoder decides what happens then).
  std::vector<int> all(64);
  std::iota(all.begin(), all.end(), 0);
  CHECK(rule.stop_after(all));
}

}  // namespace stragglersim::sim

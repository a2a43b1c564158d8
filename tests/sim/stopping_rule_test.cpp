#include "sim/stopping_rule.h"

#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
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

TEST_CASE("decodable: with its decode memo it stops where the direct decode says, every set",
          "[sim][stopping][decode_memo]") {
  const std::vector<std::shared_ptr<const codes::GradientCode>> codes = {
      std::make_shared<const codes::CyclicRepetitionCode>(7, 2, 3),
      std::make_shared<const codes::CyclicRepetitionCode>(6, 1, 5),
      std::make_shared<const codes::BernoulliGradientCode>(6, 6, 2.0, 11)};
  for (const auto& code : codes) {
    const int n = code->workers();
    const DecodableStopping rule(code);
    const int minimum = rule.minimum_arrivals();
    for (unsigned mask = 1; mask < (1U << static_cast<unsigned>(n)); ++mask) {
      std::vector<int> heard;
      for (int w = 0; w < n; ++w) {
        if (((mask >> static_cast<unsigned>(w)) & 1U) != 0) heard.push_back(w);
      }
      const auto size = static_cast<int>(heard.size());
      // The rule without the memo: a count, then decodable() and the exact decode.
      const bool direct =
          size >= minimum &&
          (size >= n || (code->decodable(heard) && code->decode_exact(heard).exact));
      INFO(code->name() << " mask " << mask);
      CHECK(rule.stop_after(heard) == direct);
      // Heard in another order: the same answer (the memo decodes the set sorted).
      std::vector<int> reversed(heard.rbegin(), heard.rend());
      CHECK(rule.stop_after(reversed) == direct);
    }
  }
  // A combinatorial decoder keeps its direct path.
  const auto frc = std::make_shared<const codes::FractionalRepetitionCode>(6, 2);
  const DecodableStopping frc_rule(frc);
  CHECK(frc_rule.stop_after(std::vector<int>{0, 2, 4}));
  CHECK_FALSE(frc_rule.stop_after(std::vector<int>{0, 1, 2}));
}

}  // namespace stragglersim::sim

// The table of the rules' theories (sim/theory/rule_theory.h): one row per rule kind under the
// name its StoppingRule gives, the erasures fixed by the scheme alone, and the groups and pairs of
// groups the erasures average over.

#include "sim/theory/rule_theory.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

TEST_CASE("theory: every rule kind has its row under its rule's name", "[sim][theory]") {
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(6, 2);
  const std::vector<std::shared_ptr<const StoppingRule>> rules = {
      std::make_shared<AllStopping>(6),
      std::make_shared<FirstRStopping>(3),
      std::make_shared<DeadlineStopping>(2.0, 6),
      std::make_shared<DecodableStopping>(code),
      std::make_shared<FirstROrDecodableStopping>(3, code)};
  std::set<const RuleTheory*> rows;
  for (const auto& rule : rules) {
    const RuleTheory& row = rule_theory(rule->shape()->kind);
    CHECK(row.kind == rule->shape()->kind);
    CHECK(row.name == rule->name());
    rows.insert(&row);
  }
  CHECK(rows.size() == rules.size());
}

TEST_CASE("theory: erasures fixed by the scheme alone", "[sim][theory]") {
  const auto erased = [](CodeFamily code, int d, RuleKind rule, int r) {
    return structural_erasure(
        {.workers = 8, .code = code, .d = d, .rule = rule, .r = r, .deadline = 1.0});
  };
  // Waiting for every group: nothing is erased.
  CHECK(erased(CodeFamily::kFractionalRepetition, 2, RuleKind::kAll, 1)->q == 0.0);
  CHECK(erased(CodeFamily::kFractionalRepetition, 2, RuleKind::kDecodable, 1)->q2 == 0.0);
  // Group codes under first_r, first_r_or_decodable and deadline: it depends on the delays.
  CHECK_FALSE(erased(CodeFamily::kFractionalRepetition, 2, RuleKind::kFirstR, 4).has_value());
  CHECK_FALSE(erased(CodeFamily::kUncoded, 1, RuleKind::kFirstROrDecodable, 4).has_value());
  CHECK_FALSE(erased(CodeFamily::kUncoded, 1, RuleKind::kDeadline, 1).has_value());
  // A cyclic code with s = 2 (d = 3) is exact from n − s = 6 arrivals, least squares before.
  CHECK(erased(CodeFamily::kCyclic, 3, RuleKind::kFirstR, 6)->q == 0.0);
  CHECK(std::isnan(erased(CodeFamily::kCyclic, 3, RuleKind::kFirstR, 5)->q));
  CHECK(std::isnan(erased(CodeFamily::kCyclic, 3, RuleKind::kFirstROrDecodable, 5)->q2));
  CHECK(std::isnan(erased(CodeFamily::kCyclic, 3, RuleKind::kDeadline, 8)->q));
  CHECK(exact_from({.workers = 8, .code = CodeFamily::kCyclic, .d = 3}) == 6);
  CHECK(exact_from({.workers = 8, .code = CodeFamily::kFractionalRepetition, .d = 2}) == 8);
}

TEST_CASE("theory: the groups and pairs the erasures average over", "[sim][theory]") {
  CHECK(group_members({4, 2}, {1, 3}) == std::vector<int>{2, 3, 6, 7});
  // All C(G, 2) pairs up to kMaxExactPairs, then G neighbours and G antipodes.
  CHECK(group_pairs(4).size() == 6);
  CHECK(group_pairs(32).size() == 32U * 31U / 2U);
  const auto sampled = group_pairs(40);  // C(40, 2) = 780 > 500
  REQUIRE(sampled.size() == 80);
  CHECK(sampled[0] == std::pair{0, 1});
  CHECK(sampled[1] == std::pair{0, 20});
  const auto sets = erasure_sets({3, 2});
  CHECK(sets[0] == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}});
  CHECK(sets[1].size() == 3);
  CHECK(erasure_sets({1, 4})[1].empty());
}

}  // namespace stragglersim::sim

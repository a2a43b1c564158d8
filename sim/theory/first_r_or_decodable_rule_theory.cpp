// Rule first_r_or_decodable (sim/theory/iteration_time_theory.h): the earlier of the r-th arrival
// and decodability; for FRC P(Z ≤ t) = P(≥ r arrived by t or every group covered by t), a DP over
// groups (StopDistribution); the erasures are first_r's.

#include <algorithm>

#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {
namespace {

Shape first_r_or_decodable_shape(const SchemeDescription& s) {
  if (s.code == CodeFamily::kFractionalRepetition) {
    return {StopShape::kFrcFirstROrDecodable, 0};
  }
  return {StopShape::kOrderStatistic, std::min(s.r, exact_from(s))};
}

}  // namespace

const RuleTheory kFirstROrDecodableRuleTheory = {RuleKind::kFirstROrDecodable,
                                                 "first_r_or_decodable",
                                                 first_r_or_decodable_shape,
                                                 first_r_structural_erasure,
                                                 first_r_erasure};

}  // namespace stragglersim::sim

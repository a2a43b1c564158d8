// Rule decodable (sim/theory/iteration_time_theory.h): uncoded max_i T_i, FRC max_g min_{i∈g}
// T_i, cyclic codes T_(n−s:n); the master waits until it can decode, so no group is erased.

#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {
namespace {

Shape decodable_shape(const SchemeDescription& s) {
  if (s.code == CodeFamily::kFractionalRepetition) {
    return {StopShape::kFrcDecodable, 0};
  }
  return {StopShape::kOrderStatistic, exact_from(s)};
}

}  // namespace

const RuleTheory kDecodableRuleTheory = {
    RuleKind::kDecodable, "decodable", decodable_shape, no_erasure, no_delay_erasure};

}  // namespace stragglersim::sim

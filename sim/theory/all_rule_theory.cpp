// Rule all (sim/theory/iteration_time_theory.h): Z = max_i T_i, the n-th order statistic; no group
// is ever erased.

#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {
namespace {

Shape all_shape(const SchemeDescription& s) { return {StopShape::kOrderStatistic, s.workers}; }

}  // namespace

const RuleTheory kAllRuleTheory = {RuleKind::kAll, "all", all_shape, no_erasure, no_delay_erasure};

}  // namespace stragglersim::sim

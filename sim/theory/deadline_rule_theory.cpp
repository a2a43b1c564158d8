// Rule deadline τ (sim/theory/iteration_time_theory.h): Z = min(τ, max_i T_i); a group is erased
// when every member is later than τ, q = Π_{i∈g} P(T_i > τ) exactly; a cyclic code decodes by
// least squares under a deadline (q NaN).

#include <cmath>
#include <optional>
#include <vector>

#include "sim/theory/rule_theory.h"
#include "sim/theory/worker_classes.h"

namespace stragglersim::sim {
namespace {

Shape deadline_shape(const SchemeDescription& /*s*/) { return {StopShape::kDeadline, 0}; }

std::optional<Erasure> deadline_structural_erasure(const SchemeDescription& scheme) {
  if (scheme.code == CodeFamily::kCyclic) {
    return Erasure{kNaN, kNaN};
  }
  return std::nullopt;
}

Erasure deadline_erasure(const SchemeDescription& scheme,
                         const DelayModel& delay,
                         PredictionMethod /*method*/,
                         const Jumps& /*jumps*/,
                         const ErasureContext& /*context*/) {
  const int n = scheme.workers;
  const Groups groups{n / scheme.d, scheme.d};
  const bool identical = identical_workers(delay);

  if (identical) {
    // (1 − F(τ))^d per group, independent across groups: O(1) at any n.
    const double q = std::pow(1.0 - delay.cdf(0, scheme.deadline), groups.size);
    return {q, groups.count < 2 ? kNaN : q * q};
  }
  std::vector<double> group_erased(index(groups.count), 1.0);
  for (int i = 0; i < n; ++i) {
    group_erased[index(i / groups.size)] *= 1.0 - delay.cdf(i, scheme.deadline);
  }
  Erasure e;
  for (const double x : group_erased) {
    e.q += x / groups.count;
  }
  if (groups.count < 2) {
    e.q2 = kNaN;
    return e;
  }
  const auto pairs = group_pairs(groups.count);
  for (const auto& [g, h] : pairs) {
    e.q2 += group_erased[index(g)] * group_erased[index(h)] / static_cast<double>(pairs.size());
  }
  return e;
}

}  // namespace

const RuleTheory kDeadlineRuleTheory = {
    RuleKind::kDeadline, "deadline", deadline_shape, deadline_structural_erasure, deadline_erasure};

}  // namespace stragglersim::sim

#include "sim/theory/rule_theory.h"

#include <array>

#include "models/base/invariant.h"

namespace stragglersim::sim {

std::vector<int> group_members(const Groups& groups, std::initializer_list<int> ids) {
  std::vector<int> members;
  for (const int g : ids) {
    for (int i = g * groups.size; i < (g + 1) * groups.size; ++i) {
      members.push_back(i);
    }
  }
  return members;
}

std::vector<std::pair<int, int>> group_pairs(int count) {
  std::vector<std::pair<int, int>> pairs;
  if (count * (count - 1) / 2 <= kMaxExactPairs) {
    for (int g = 0; g < count; ++g) {
      for (int h = g + 1; h < count; ++h) {
        pairs.emplace_back(g, h);
      }
    }
    return pairs;
  }
  for (int g = 0; g < count; ++g) {
    pairs.emplace_back(g, (g + 1) % count);
    pairs.emplace_back(g, (g + count / 2) % count);
  }
  return pairs;
}

std::array<std::vector<std::vector<int>>, 2> erasure_sets(const Groups& groups) {
  std::array<std::vector<std::vector<int>>, 2> sets;
  for (int g = 0; g < groups.count; ++g) {
    sets[0].push_back(group_members(groups, {g}));
  }
  if (groups.count >= 2) {
    for (const auto& [g, h] : group_pairs(groups.count)) {
      sets[1].push_back(group_members(groups, {g, h}));
    }
  }
  return sets;
}

int exact_from(const SchemeDescription& s) {
  return s.code == CodeFamily::kCyclic ? s.workers - s.d + 1 : s.workers;
}

const RuleTheory& rule_theory(RuleKind kind) {
  static constexpr std::array<const RuleTheory*, 5> kRows = {&kAllRuleTheory,
                                                             &kFirstRRuleTheory,
                                                             &kDeadlineRuleTheory,
                                                             &kDecodableRuleTheory,
                                                             &kFirstROrDecodableRuleTheory};
  for (const RuleTheory* row : kRows) {
    if (row->kind == kind) {
      return *row;
    }
  }
  STRAGGLERSIM_ASSERT(false, "no theory row for a stopping rule");
  return kAllRuleTheory;
}

std::optional<Erasure> no_erasure(const SchemeDescription& /*scheme*/) { return Erasure{0.0, 0.0}; }

Erasure no_delay_erasure(const SchemeDescription& /*scheme*/,
                         const DelayModel& /*delay*/,
                         PredictionMethod /*method*/,
                         const Jumps& /*jumps*/,
                         const ErasureContext& /*context*/) {
  return Erasure{0.0, 0.0};
}

std::optional<Erasure> structural_erasure(const SchemeDescription& scheme) {
  return rule_theory(scheme.rule).structural_erasure(scheme);
}

Erasure erasure(const SchemeDescription& scheme,
                const DelayModel& delay,
                PredictionMethod method,
                const Jumps& jumps,
                const ErasureContext& context) {
  if (const auto fixed = structural_erasure(scheme)) {
    return *fixed;
  }
  return rule_theory(scheme.rule).erasure(scheme, delay, method, jumps, context);
}

}  // namespace stragglersim::sim

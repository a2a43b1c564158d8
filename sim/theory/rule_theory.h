#pragma once
// The theory of each stopping rule behind one table (sim/theory/iteration_time_theory.h): a row
// per RuleKind with the rule's name (its config spelling), the shape of its stop for a code, the
// group erasures the scheme alone fixes, and the erasures that depend on the delays. Each rule's
// row and functions are in sim/theory/<rule>_rule_theory.cpp; the groups and pairs of groups the
// erasure probabilities average over are here. Used by the theory of sim/theory/ only.

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/stopping_rule.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/stop_distribution.h"
#include "sim/theory/time_integrals.h"

namespace stragglersim::sim {

/// Beyond this many pairs of groups, q₂ for non-identical workers averages a fixed sample.
inline constexpr int kMaxExactPairs = 500;

/// Group g = workers g·d … g·d + d − 1 (each worker its own group when uncoded).
struct Groups {
  int count = 0;
  int size = 1;
};

/// Classes and the work budget of the numerical erasure integrals.
struct ErasureContext {
  const WorkerClasses& classes;
  const WorkBudget& budget;
};

struct Erasure {
  double q = 0.0;
  double q2 = 0.0;
};

/// The workers of the groups `ids`.
[[nodiscard]] std::vector<int> group_members(const Groups& groups, std::initializer_list<int> ids);

/// Pairs (g, h), g < h, averaged for q₂: all of them, or a fixed sample of neighbours and
/// antipodes when there are too many.
[[nodiscard]] std::vector<std::pair<int, int>> group_pairs(int count);

/// The erasure sets of the numerical erasure path: every group, and the pairs group_pairs keeps.
[[nodiscard]] std::array<std::vector<std::vector<int>>, 2> erasure_sets(const Groups& groups);

/// The arrivals after which the scheme's code decodes exactly: n − s for a cyclic code, n
/// otherwise.
[[nodiscard]] int exact_from(const SchemeDescription& s);

/// The erasures fixed by the scheme alone (none, or NaN where decoding is not by groups);
/// nullopt when they depend on the delays.
using StructuralErasure = std::optional<Erasure>(const SchemeDescription& scheme);
/// q and q₂ under `delay` when the structural erasure is nullopt; `jumps`: distinct_atoms(delay),
/// empty unless every marginal is discrete.
using DelayErasure = Erasure(const SchemeDescription& scheme,
                             const DelayModel& delay,
                             PredictionMethod method,
                             const Jumps& jumps,
                             const ErasureContext& context);

/// One stopping rule's theory.
struct RuleTheory {
  RuleKind kind = RuleKind::kAll;
  const char* name = "";  ///< the rule's name in a config
  /// What the stopping time is a function of under this rule, for the scheme's code.
  Shape (*shape)(const SchemeDescription& scheme) = nullptr;
  StructuralErasure* structural_erasure = nullptr;
  DelayErasure* erasure = nullptr;
};

/// The rows, one per rule (each in its sim/theory/<rule>_rule_theory.cpp).
extern const RuleTheory kAllRuleTheory;
extern const RuleTheory kFirstRRuleTheory;
extern const RuleTheory kDeadlineRuleTheory;
extern const RuleTheory kDecodableRuleTheory;
extern const RuleTheory kFirstROrDecodableRuleTheory;

/// The row of `kind`.
[[nodiscard]] const RuleTheory& rule_theory(RuleKind kind);

/// No group is ever erased (all, decodable: the master waits for every group).
StructuralErasure no_erasure;
DelayErasure no_delay_erasure;

/// first_r's erasures, shared by first_r_or_decodable: the rule can only stop early when every
/// group is covered, so "g erased" is exactly "no worker of g among the first r".
StructuralErasure first_r_structural_erasure;
DelayErasure first_r_erasure;

/// The erasures fixed by the scheme alone under its rule (RuleTheory::structural_erasure).
StructuralErasure structural_erasure;

/// q and q₂ of the scheme under `delay`: the structural ones, else the rule's.
DelayErasure erasure;

}  // namespace stragglersim::sim

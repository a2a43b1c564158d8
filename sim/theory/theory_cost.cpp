#include "sim/theory/theory_cost.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/theory/rule_theory.h"
#include "sim/theory/worker_classes.h"

namespace stragglersim::sim {
namespace {

/// Whether erasure() integrates (first_r rules on groups, non-identical workers or forced).
bool erasure_integrates(const SchemeDescription& scheme,
                        PredictionMethod method,
                        const WorkerClasses& classes) {
  const bool first_r =
      scheme.rule == RuleKind::kFirstR || scheme.rule == RuleKind::kFirstROrDecodable;
  return first_r && scheme.code != CodeFamily::kCyclic &&
         (classes.count() > 1 || method == PredictionMethod::kNumerical);
}

}  // namespace

double estimated_operations(const SchemeDescription& scheme,
                            const DelayModel& delay,
                            PredictionMethod method,
                            const Jumps& jumps,
                            const WorkerClasses& classes) {
  const double n = scheme.workers;
  const double reads = classes.count() * kCdfOperations;
  std::vector<double> bounds;
  bounds.reserve(classes.representative.size());
  for (const int rep : classes.representative) {
    bounds.push_back(delay.lower_bound(rep));
  }
  std::sort(bounds.begin(), bounds.end());
  const auto pieces =
      static_cast<double>(std::unique(bounds.begin(), bounds.end()) - bounds.begin()) + 2.0;
  const StopDistribution stop(scheme, delay);
  double total = jumps.empty()
                     ? (4.0 * pieces * kEvaluationsPerPiece + 3.0 * kEvaluationsPerQuantile) *
                           (reads + stop.operations())
                     : static_cast<double>(jumps.size()) * stop.operations();
  if (!erasure_integrates(scheme, method, classes)) {
    return total;
  }
  const Groups groups{scheme.workers / scheme.d, scheme.d};
  const auto sets = erasure_sets(groups);
  const double integrals = static_cast<double>(distinct_class_sets(sets[0], classes) +
                                               distinct_class_sets(sets[1], classes));
  const double per_point = reads + 8.0 * scheme.d * kCdfOperations + n * scheme.r;
  total += jumps.empty() ? integrals * pieces * kEvaluationsPerPiece * per_point +
                               2.0 * kEvaluationsPerQuantile * (reads + n * scheme.r)
                         : integrals * static_cast<double>(jumps.size()) * n * scheme.r;
  return total;
}

IterationTimePrediction simulated_prediction(const SimulatedIterationTime& s,
                                             double estimated,
                                             std::string why) {
  IterationTimePrediction out;
  out.mean = s.mean;
  out.sd = s.sd;
  out.standard_error = s.standard_error;
  out.q = s.q;
  out.q2 = std::numeric_limits<double>::quiet_NaN();
  out.draws = s.draws;
  out.estimated_operations = estimated;
  out.method = "simulation";
  out.fallback_reason = std::move(why);
  return out;
}

}  // namespace stragglersim::sim

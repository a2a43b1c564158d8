#include "experiments/predict/simulation_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "codes/gradient_code.h"
#include "sim/stopping_rule.h"

namespace stragglersim::experiments {
namespace {

/// Σ_{j=0}^{s} C(n, j) in floating point (+∞ past double's range).
double sets_missing_at_most(int n, int s) {
  double total = 0.0;
  double term = 1.0;
  for (int j = 0; j <= s && j <= n; ++j) {
    total += term;
    term *= static_cast<double>(n - j) / static_cast<double>(j + 1);
  }
  return total;
}

}  // namespace

double SimulationCost::operations(std::uint64_t d) const {
  const double decodes = std::min(static_cast<double>(d) * decodes_per_draw, distinct_sets);
  return decodes * operations_per_decode;
}

SimulationCost simulation_cost(const RunPlan& plan, std::uint64_t draws) {
  SimulationCost c;
  c.asked = draws;
  c.draws = draws;
  const auto& code = plan.scheme.code;
  const auto& rule = plan.scheme.rule;
  const auto shape = rule ? rule->shape() : std::nullopt;
  if (!code || !shape || code->compact() ||
      code->structure().decoder != codes::DecoderFamily::kLinearAlgebra ||
      (shape->kind != sim::RuleKind::kDecodable &&
       shape->kind != sim::RuleKind::kFirstROrDecodable)) {
    return c;
  }
  const int n = code->workers();
  const double k = code->partitions();
  const bool any_count = code->decodes_from_any_count();
  const int s = code->stragglers_tolerated();
  const int m = any_count ? n - s : n;
  // first_r_or_decodable on a count code stops at the r-th arrival before any set decodes.
  if (any_count && shape->kind == sim::RuleKind::kFirstROrDecodable && shape->r < m) {
    return c;
  }
  const double md = m;
  c.operations_per_decode = k * md * md + md * md * md;
  c.distinct_sets =
      any_count ? sets_missing_at_most(n, s) : std::numeric_limits<double>::infinity();
  c.decodes_per_draw = any_count ? 1.0 : static_cast<double>(n - rule->minimum_arrivals() + 1);
  if (c.operations(draws) <= kSimulationOperationLimit) {
    return c;
  }
  const double affordable =
      std::floor(kSimulationOperationLimit / (c.operations_per_decode * c.decodes_per_draw));
  c.draws =
      std::min(draws, std::max(kMinimumSimulationDraws, static_cast<std::uint64_t>(affordable)));
  return c;
}

}  // namespace stragglersim::experiments

// Rule first_r (sim/theory/iteration_time_theory.h): Z = T_(r:n), the r-th arrival. A group is
// erased when none of its workers is among the first r: C(n−d, r)/C(n, r) with identical workers,
// else ∫ P(≥ r of the others arrived by t) dF_{min over the group}(t), integrated numerically
// (exact sums over the atoms of discrete marginals); a cyclic code that stops before n − s
// arrivals decodes by least squares (q NaN).

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "sim/theory/rule_theory.h"
#include "sim/theory/worker_classes.h"

namespace stragglersim::sim {
namespace {

Shape first_r_shape(const SchemeDescription& s) { return {StopShape::kOrderStatistic, s.r}; }

/// P(every worker in `erased` is still unheard when the first-r stop happens):
/// ∫ P(≥ r of the others arrived by t) dF_{min over erased}(t), with a central-difference density.
// Discrete marginals (a replayed trace) have no density: dF_min is a sum of point masses at
// the erased workers' atoms and the integral an exact finite sum, swept through the distinct
// atoms in order with only the jumping workers' CDFs re-read. A tie between an erased worker
// and another counts the other as arrived first (every jump at t is applied before the sum).
double first_r_erasure_discrete(const SchemeDescription& scheme,
                                const Jumps& jumps,
                                std::span<const int> erased,
                                const std::vector<char>& skip) {
  const int n = scheme.workers;
  std::vector<double> f(index(n), 0.0);
  std::vector<double> w(index(n), 1.0);
  std::vector<double> p;
  const auto waiting = [&] {
    double product = 1.0;
    for (const int i : erased) {
      product *= w[index(i)];
    }
    return product;
  };
  double total = 0.0;
  for (std::size_t k = 0; k < jumps.size();) {
    const double t = jumps[k].at;
    const double before = waiting();
    bool erased_jump = false;
    for (; k < jumps.size() && jumps[k].at == t; ++k) {
      const int i = jumps[k].worker;
      f[index(i)] = jumps[k].cdf;
      w[index(i)] = 1.0 - f[index(i)];
      erased_jump = erased_jump || skip[index(i)] != 0;
    }
    const double mass = erased_jump ? before - waiting() : 0.0;
    if (mass > 0.0) {
      total += at_least(f, w, skip, scheme.r, p).stopped * mass;
    }
  }
  return total;
}

double first_r_erasure_numerical(const SchemeDescription& scheme,
                                 const DelayModel& delay,
                                 const Support& s,
                                 const Jumps& jumps,
                                 std::span<const int> erased,
                                 const ErasureContext& context) {
  const int n = scheme.workers;
  std::vector<char> skip(index(n), 0);
  for (const int i : erased) {
    skip[index(i)] = 1;
  }
  std::vector<double> f(index(n));
  std::vector<double> w(index(n));
  std::vector<double> p;
  std::vector<double> class_f;
  const auto all_waiting = [&](double t) {
    double product = 1.0;
    for (const int i : erased) {
      product *= 1.0 - delay.cdf(i, t);
    }
    return product;
  };
  if (!jumps.empty()) {
    return first_r_erasure_discrete(scheme, jumps, erased, skip);
  }
  // Five-point central differences (error O(h⁴)) with h a thousandth of the piece, shrunk to
  // stay inside it so that no stencil straddles a kink at a worker's lower bound.
  const Integrand g = [&](double t, double lo, double hi) {
    const double span = std::isfinite(hi) ? hi - lo : t - lo + s.width;
    double h = std::min(1e-3 * span, 0.5 * (t - lo));
    if (std::isfinite(hi)) {
      h = std::min(h, 0.5 * (hi - t));
    }
    if (!(h > 0.0)) {
      return 0.0;
    }
    const double density = (8.0 * (all_waiting(t - h) - all_waiting(t + h)) -
                            (all_waiting(t - 2.0 * h) - all_waiting(t + 2.0 * h))) /
                           (12.0 * h);
    const WorkerClasses& classes = context.classes;
    context.budget.charge(4.0 * static_cast<double>(erased.size()) * kCdfOperations);
    if (density == 0.0) {
      return 0.0;
    }
    class_f.resize(index(classes.count()));
    for (int c = 0; c < classes.count(); ++c) {
      class_f[index(c)] = delay.cdf(classes.representative[index(c)], t);
    }
    for (int i = 0; i < n; ++i) {
      f[index(i)] = class_f[index(classes.class_of[index(i)])];
      w[index(i)] = 1.0 - f[index(i)];
    }
    context.budget.charge(classes.count() * kCdfOperations + static_cast<double>(n) * scheme.r);
    return at_least(f, w, skip, scheme.r, p).stopped * density;
  };
  return integrate_range(g, s, s.lower, kInfinity, kDensityTolerance);
}

}  // namespace

std::optional<Erasure> first_r_structural_erasure(const SchemeDescription& scheme) {
  if (scheme.code == CodeFamily::kCyclic) {
    const bool exact = scheme.r >= exact_from(scheme);
    return exact ? Erasure{0.0, 0.0} : Erasure{kNaN, kNaN};
  }
  return std::nullopt;
}

Erasure first_r_erasure(const SchemeDescription& scheme,
                        const DelayModel& delay,
                        PredictionMethod method,
                        const Jumps& jumps,
                        const ErasureContext& context) {
  const int n = scheme.workers;
  const Groups groups{n / scheme.d, scheme.d};
  const bool identical = identical_workers(delay);

  // first_r and first_r_or_decodable share their erasure events (see the header).
  if (identical && method == PredictionMethod::kAuto) {
    return {erasure_probability_first_r(n, groups.size, scheme.r),
            groups.count < 2 ? kNaN : erasure_probability_first_r(n, 2 * groups.size, scheme.r)};
  }
  SchemeDescription first_r = scheme;
  first_r.rule = RuleKind::kFirstR;
  const std::function<StopProbability(double)> first_r_dist =
      StopDistribution(first_r, delay, &context.classes, &context.budget);
  // Discrete marginals sum over their atoms and need no integration support.
  const Support s = jumps.empty() ? make_support(first_r_dist, delay, kInfinity) : Support{};
  const auto integral = [&](const std::vector<int>& members) {
    return first_r_erasure_numerical(scheme, delay, s, jumps, members, context);
  };
  const auto sets = erasure_sets(groups);
  Erasure e;
  e.q = class_average(sets[0], context.classes, integral);
  e.q2 = groups.count < 2 ? kNaN : class_average(sets[1], context.classes, integral);
  return e;
}

const RuleTheory kFirstRRuleTheory = {
    RuleKind::kFirstR, "first_r", first_r_shape, first_r_structural_erasure, first_r_erasure};

}  // namespace stragglersim::sim

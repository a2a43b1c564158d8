#include "sim/theory/iteration_time_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/math/constants/constants.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <utility>

#include "models/base/invariant.h"
#include "sim/scheme.h"
#include "sim/theory/group_order.h"
#include "sim/theory/rule_theory.h"
#include "sim/theory/stop_distribution.h"
#include "sim/theory/theory_cost.h"
#include "sim/theory/time_integrals.h"
#include "sim/theory/trace_rows_theory.h"
#include "sim/theory/worker_classes.h"

namespace stragglersim::sim {

namespace {
/// Terms up to which the harmonic sums are added directly (exact to an ulp or two per term);
/// longer sums use the digamma and trigamma differences (sums at n up to 2^30 in microseconds).
constexpr int kDirectSumTerms = 1 << 16;

/// The numerical path on a model whose workers are dependent within an iteration.
constexpr const char* kMarginalsMethod =
    "numerical (independent marginals: the model's workers are dependent, the prediction is an "
    "approximation)";

/// The scheme as the theory sees it through GroupOrderedDelay: groups of consecutive workers,
/// loads in group order.
SchemeDescription in_group_order(const SchemeDescription& scheme) {
  SchemeDescription out = scheme;
  out.order.clear();
  if (!scheme.loads.empty()) {
    for (std::size_t j = 0; j < scheme.order.size(); ++j) {
      out.loads[j] = scheme.loads[index(scheme.order[j])];
    }
  }
  return out;
}

void validate(const SchemeDescription& s) {
  STRAGGLERSIM_ASSERT(s.workers >= 1, "a scheme needs at least one worker");
  STRAGGLERSIM_ASSERT(s.d >= 1, "a scheme needs d >= 1");
  switch (s.code) {
    case CodeFamily::kUncoded:
      STRAGGLERSIM_ASSERT(s.d == 1, "an uncoded scheme has d = 1");
      break;
    case CodeFamily::kFractionalRepetition:
      STRAGGLERSIM_ASSERT(s.workers % s.d == 0, "FRC needs d | n");
      break;
    case CodeFamily::kCyclic:
      STRAGGLERSIM_ASSERT(s.d <= s.workers, "a cyclic code needs d = s + 1 <= n");
      break;
  }
  if (s.rule == RuleKind::kFirstR || s.rule == RuleKind::kFirstROrDecodable) {
    STRAGGLERSIM_ASSERT(s.r >= 1 && s.r <= s.workers, "first_r needs 1 <= r <= n");
  }
  if (s.rule == RuleKind::kDeadline) {
    STRAGGLERSIM_ASSERT(s.deadline > 0.0, "a deadline rule needs a positive deadline");
  }
  STRAGGLERSIM_ASSERT(s.order.empty() || (s.code != CodeFamily::kCyclic &&
                                          is_permutation_of_workers(s.order, s.workers)),
                      "a group order is a permutation of a group code's workers");
  STRAGGLERSIM_ASSERT(
      s.loads.empty() ||
          (s.loads.size() == index(s.workers) &&
           std::ranges::all_of(s.loads, [](double x) { return x > 0.0 && std::isfinite(x); })),
      "loads are one positive number per worker");
}

}  // namespace

std::vector<double> scheme_loads(const SchemeDescription& scheme) {
  validate(scheme);
  if (!scheme.loads.empty()) {
    return scheme.loads;
  }
  return std::vector<double>(index(scheme.workers), static_cast<double>(scheme.d));
}

double harmonic_number(int n) {
  if (n > kDirectSumTerms) {
    return boost::math::digamma(n + 1.0) + boost::math::constants::euler<double>();
  }
  double h = 0.0;
  for (int i = n; i >= 1; --i) {  // smallest terms first
    h += 1.0 / i;
  }
  return h;
}

double exponential_order_statistic_mean(int n, int m) {
  STRAGGLERSIM_ASSERT(m >= 0 && m <= n, "order statistic needs 0 <= m <= n");
  if (m > kDirectSumTerms) {
    // H_n − H_{n−m} = ψ(n + 1) − ψ(n − m + 1): absolute error ~1e-14, against a sum ≥ m/n.
    return boost::math::digamma(n + 1.0) - boost::math::digamma(n - m + 1.0);
  }
  double sum = 0.0;
  for (int i = n; i > n - m; --i) {
    sum += 1.0 / i;
  }
  return sum;
}

double exponential_order_statistic_variance(int n, int m) {
  STRAGGLERSIM_ASSERT(m >= 0 && m <= n, "order statistic needs 0 <= m <= n");
  if (m > kDirectSumTerms) {
    // Σ_{n−m<i≤n} 1/i² = ψ₁(n − m + 1) − ψ₁(n + 1).
    return boost::math::trigamma(n - m + 1.0) - boost::math::trigamma(n + 1.0);
  }
  double sum = 0.0;
  for (int i = n; i > n - m; --i) {
    sum += 1.0 / (static_cast<double>(i) * i);
  }
  return sum;
}

double erasure_probability_first_r(int n, int k, int r) {
  STRAGGLERSIM_ASSERT(k >= 0 && r >= 0 && k <= n && r <= n, "needs 0 <= k, r <= n");
  double q = 1.0;
  for (int j = 0; j < k; ++j) {
    if (n - r - j <= 0) {
      return 0.0;
    }
    q *= static_cast<double>(n - r - j) / (n - j);
  }
  return q;
}

StopProbability stop_probability(const SchemeDescription& scheme,
                                 const DelayModel& delay,
                                 double t) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return stop_probability(in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), t);
  }
  return StopDistribution(scheme, delay)(t);
}

double iteration_time_quantile(const SchemeDescription& scheme, const DelayModel& delay, double p) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return iteration_time_quantile(
        in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), p);
  }
  STRAGGLERSIM_ASSERT(p > 0.0 && p < 1.0, "a quantile's level lies in (0, 1)");
  if (!delay.rows().empty()) {
    const Shape shape = stop_shape(scheme);
    std::vector<double> times;
    for_each_row(scheme.workers, delay.rows(), [&](std::size_t /*k*/, const Row& row) {
      times.push_back(row_stop(scheme, shape, row));
    });
    std::sort(times.begin(), times.end());
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(times.size())));
    return times[std::max<std::size_t>(k, 1) - 1];
  }
  const StopDistribution stop(scheme, delay);
  double lo = kInfinity;
  for (int i = 0; i < scheme.workers; ++i) lo = std::min(lo, delay.lower_bound(i));
  if (stop(lo).stopped >= p) {
    return lo;
  }
  // Grow the bracket geometrically from the lower bound, then bisect to rounding.
  double step = delay.mean(0);
  if (!(std::isfinite(step) && step > 0.0)) {
    step = std::max(1.0, std::abs(lo));
  }
  double hi = lo + step;
  for (int k = 0; stop(hi).stopped < p; ++k) {
    if (k == 2000 || !std::isfinite(hi)) {
      return kInfinity;
    }
    lo = hi;
    step *= 2.0;
    hi = lo + step;
  }
  for (int k = 0; k < 200 && hi - lo > 1e-13 * std::abs(hi); ++k) {
    const double mid = lo + 0.5 * (hi - lo);
    (stop(mid).stopped >= p ? hi : lo) = mid;
  }
  return hi;
}

bool has_closed_form(const SchemeDescription& scheme, const DelayModel& delay) {
  validate(scheme);
  const Shape shape = stop_shape(scheme);
  return delay.shifted_exponential().has_value() && identical_workers(delay) &&
         (shape.kind == StopShape::kOrderStatistic || shape.kind == StopShape::kFrcDecodable);
}

namespace {

/// The closed forms of an i.i.d. shifted exponential (has_closed_form).
IterationTimePrediction closed_form(const SchemeDescription& scheme, const DelayModel& delay) {
  const Shape shape = stop_shape(scheme);
  const auto se = delay.shifted_exponential();
  const double shift = se->worker_shift[0];
  const double scale = se->worker_scale[0];
  const int n = scheme.workers;
  IterationTimePrediction out;
  if (shape.kind == StopShape::kOrderStatistic) {
    out.mean = shift + scale * exponential_order_statistic_mean(n, shape.order);
    out.sd = scale * std::sqrt(exponential_order_statistic_variance(n, shape.order));
  } else {
    const int groups = n / scheme.d;
    const double group_scale = scale / scheme.d;
    out.mean = shift + group_scale * exponential_order_statistic_mean(groups, groups);
    out.sd = group_scale * std::sqrt(exponential_order_statistic_variance(groups, groups));
  }
  out.method = "closed form";
  return out;
}

/// The exact (numerical or discrete) prediction, charging `budget`.
IterationTimePrediction exact_prediction(const SchemeDescription& scheme,
                                         const DelayModel& delay,
                                         PredictionMethod method,
                                         const Jumps& jumps,
                                         const ErasureContext& context) {
  IterationTimePrediction out;
  const Erasure e = erasure(scheme, delay, method, jumps, context);
  out.q = e.q;
  out.q2 = e.q2;
  // Built only here: its scratch space is O(n). Discrete sweeps update single workers.
  const StopDistribution stop(
      scheme, delay, jumps.empty() ? &context.classes : nullptr, &context.budget);
  const double upper = scheme.rule == RuleKind::kDeadline ? scheme.deadline : kInfinity;
  const TimeMoments m = jumps.empty() ? numerical_moments(stop, delay_breaks(delay), upper)
                                      : discrete_moments(stop, jumps, upper);
  out.mean = m.mean;
  out.sd = m.sd;
  out.method = delay.independent_workers() ? "numerical" : kMarginalsMethod;
  return out;
}

}  // namespace

std::pair<double, double> stopping_time_moments(
    const std::function<StopProbability(double)>& distribution,
    std::vector<double> breaks,
    double upper) {
  const TimeMoments m = numerical_moments(distribution, std::move(breaks), upper);
  return {m.mean, m.sd};
}

IterationTimePrediction predict_iteration_time(const SchemeDescription& scheme,
                                               const DelayModel& delay,
                                               PredictionMethod method) {
  PredictionOptions options;
  options.method = method;
  return predict_iteration_time(scheme, delay, options);
}

IterationTimePrediction predict_iteration_time(const SchemeDescription& scheme,
                                               const DelayModel& delay,
                                               const PredictionOptions& options) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return predict_iteration_time(
        in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), options);
  }
  if (options.method == PredictionMethod::kAuto && !delay.rows().empty()) {
    return rows_prediction(scheme, delay.rows());
  }
  if (options.method == PredictionMethod::kAuto && has_closed_form(scheme, delay)) {
    IterationTimePrediction out = closed_form(scheme, delay);
    const Erasure e =
        erasure(scheme, delay, options.method, {}, {singleton_classes(0), WorkBudget(kInfinity)});
    out.q = e.q;
    out.q2 = e.q2;
    return out;
  }
  // Discrete marginals: their CDF at every jump, read once for the erasures and the moments.
  const Jumps jumps = distinct_atoms(delay);
  const WorkerClasses classes = worker_classes(delay, options.merge_classes);
  const double estimated = estimated_operations(scheme, delay, options.method, jumps, classes);
  const bool can_simulate = static_cast<bool>(options.simulate);
  if (can_simulate && estimated > options.operation_limit) {
    return simulated_prediction(
        options.simulate(),
        estimated,
        fmt::format("the exact computation was estimated at {:.3g} operations, over "
                    "the limit {:.3g}",
                    estimated,
                    options.operation_limit));
  }
  const WorkBudget budget(can_simulate ? kWorkCapFactor * options.operation_limit : kInfinity);
  try {
    IterationTimePrediction out =
        exact_prediction(scheme, delay, options.method, jumps, {classes, budget});
    out.estimated_operations = estimated;
    out.operations = budget.used();
    return out;
  } catch (const WorkExceeded&) {
    return simulated_prediction(
        options.simulate(),
        estimated,
        fmt::format("the exact computation passed {:.3g} operations (estimated "
                    "{:.3g})",
                    budget.used(),
                    estimated));
  }
}

namespace {

/// A group code whose groups are not FRC's (`proportional`: groups of d workers of similar speed,
/// unequal shares): FRC's timing with the workers in group order and the code's loads. False
/// when the code has no groups or groups of unequal sizes.
bool describe_groups(const codes::GradientCode& code, SchemeDescription& s) {
  const std::optional<std::vector<int>> groups = code.worker_groups();
  if (!groups || code.compact()) {
    return false;
  }
  const int count = *std::ranges::max_element(*groups) + 1;
  if (s.workers % count != 0) {
    return false;
  }
  s.d = s.workers / count;
  s.order.resize(index(s.workers));
  for (int i = 0; i < s.workers; ++i) {
    s.order[index(i)] = i;
  }
  std::ranges::stable_sort(s.order, {}, [&](int i) { return (*groups)[index(i)]; });
  for (int j = 0; j < s.workers; ++j) {
    if ((*groups)[index(s.order[index(j)])] != j / s.d) {
      return false;  // a group of another size
    }
  }
  s.code = s.d == 1 ? CodeFamily::kUncoded : CodeFamily::kFractionalRepetition;
  s.loads = code.loads();
  return true;
}

}  // namespace

std::optional<SchemeDescription> describe_scheme(const Scheme& scheme, std::string* why) {
  const auto& code = *scheme.code;
  const auto& rule = *scheme.rule;
  SchemeDescription s;
  s.workers = code.workers();
  if (code.regroup_every() > 0) {
    *why = fmt::format(
        "no timing model for code '{}' (its groups are re-formed from the run's history)",
        code.name());
    return std::nullopt;
  }
  const codes::CodeStructure structure = code.structure();
  switch (structure.layout) {
    case codes::CodeLayout::kGroups:
      // Groups of one worker are the uncoded scheme, whatever code built them.
      s.code = structure.group_size == 1 ? CodeFamily::kUncoded : CodeFamily::kFractionalRepetition;
      s.d = structure.group_size;
      break;
    case codes::CodeLayout::kCyclic:
      s.code = CodeFamily::kCyclic;
      s.d = structure.group_size;
      break;
    case codes::CodeLayout::kIrregular:
      if (code.decodes_from_any_count() && !code.compact()) {
        // Exact from any n − s workers at unequal loads (`proportional_crc`): the cyclic
        // family's order statistics over the per-worker marginals.
        s.code = CodeFamily::kCyclic;
        s.d = structure.stragglers_tolerated + 1;
        s.loads = code.loads();
        break;
      }
      if (!describe_groups(code, s)) {
        *why = fmt::format("no timing model for code '{}' (random or non-uniform supports)",
                           code.name());
        return std::nullopt;
      }
      break;
  }
  const std::optional<StoppingShape> shape = rule.shape();
  if (!shape) {
    *why = fmt::format("no timing model for rule '{}'", rule.name());
    return std::nullopt;
  }
  s.rule = shape->kind;
  if (s.rule == RuleKind::kFirstR || s.rule == RuleKind::kFirstROrDecodable) {
    s.r = shape->r;
  }
  if (s.rule == RuleKind::kDeadline) {
    s.deadline = shape->deadline;
  }
  return s;
}

}  // namespace stragglersim::sim

#include "sim/theory/trace_rows_theory.h"

#include <cmath>
#include <initializer_list>
#include <optional>

#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {
namespace {

/// max_g min_{i∈g} T_i: the moment every FRC group has been heard from.
double frc_covered_time(const SchemeDescription& scheme, std::span<const double> v) {
  double covered = -kInfinity;
  for (int g = 0; g < scheme.workers / scheme.d; ++g) {
    const auto group = v.subspan(index(g * scheme.d), index(scheme.d));
    covered = std::max(covered, *std::min_element(group.begin(), group.end()));
  }
  return covered;
}

}  // namespace

double row_stop(const SchemeDescription& scheme, const Shape& shape, const Row& row) {
  switch (shape.kind) {
    case StopShape::kOrderStatistic:
      return row.sorted[index(shape.order - 1)];
    case StopShape::kDeadline:
      return std::min(scheme.deadline, row.sorted.back());
    case StopShape::kFrcDecodable:
      return frc_covered_time(scheme, row.delay);
    case StopShape::kFrcFirstROrDecodable:
      return std::min(row.sorted[index(scheme.r - 1)], frc_covered_time(scheme, row.delay));
  }
  return kNaN;
}

namespace {

/// Whether every worker of the groups `ids` is unheard when the row stops: under a deadline,
/// every one later than τ; under first_r (and first_r_or_decodable, whose erasures are first_r's)
/// at least r others arrived by the groups' first arrival m, ties counting the others first
/// (as the marginal sums do): #{j : T_j ≤ m} − #{i in the groups : T_i = m} ≥ r.
bool row_erased(const SchemeDescription& scheme, const Row& row, std::initializer_list<int> ids) {
  double first = kInfinity;
  for (const int g : ids) {
    const auto group = row.delay.subspan(index(g * scheme.d), index(scheme.d));
    first = std::min(first, *std::min_element(group.begin(), group.end()));
  }
  if (scheme.rule == RuleKind::kDeadline) {
    return first > scheme.deadline;
  }
  auto arrived = std::upper_bound(row.sorted.begin(), row.sorted.end(), first) - row.sorted.begin();
  for (const int g : ids) {
    const auto group = row.delay.subspan(index(g * scheme.d), index(scheme.d));
    arrived -= std::count(group.begin(), group.end(), first);
  }
  return arrived >= scheme.r;
}

}  // namespace

IterationTimePrediction rows_prediction(const SchemeDescription& scheme,
                                        std::span<const double> table) {
  const std::size_t count = table.size() / index(scheme.workers);
  const Shape shape = stop_shape(scheme);
  const std::optional<Erasure> fixed = structural_erasure(scheme);
  const int groups = scheme.workers / scheme.d;
  const auto pairs = group_pairs(groups);
  std::vector<double> times(count);
  Erasure sum;
  for_each_row(scheme.workers, table, [&](std::size_t k, const Row& row) {
    times[k] = row_stop(scheme, shape, row);
    if (fixed) {
      return;
    }
    for (int g = 0; g < groups; ++g) {
      sum.q += row_erased(scheme, row, {g}) ? 1.0 : 0.0;
    }
    for (const auto& [g, h] : pairs) {
      sum.q2 += row_erased(scheme, row, {g, h}) ? 1.0 : 0.0;
    }
  });
  IterationTimePrediction out;
  const auto rows = static_cast<double>(count);
  for (const double z : times) out.mean += z / rows;
  double square = 0.0;
  for (const double z : times) square += (z - out.mean) * (z - out.mean);
  out.sd = std::sqrt(square / rows);
  if (fixed) {
    out.q = fixed->q;
    out.q2 = fixed->q2;
  } else {
    out.q = sum.q / (rows * groups);
    out.q2 = groups < 2 ? kNaN : sum.q2 / (rows * static_cast<double>(pairs.size()));
  }
  out.method = "trace rows";
  return out;
}

}  // namespace stragglersim::sim

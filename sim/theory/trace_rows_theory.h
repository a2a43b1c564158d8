#pragma once
// Replayed rows (sim/theory/iteration_time_theory.h, method "trace rows"): the stop of each row
// of a DelayModel::rows() table by the rule, and the exact averages over the rows. Used by the
// theory of sim/theory/ only.

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/stop_distribution.h"

namespace stragglersim::sim {

/// One row of a replayed table: the workers' delays and the same, sorted.
struct Row {
  std::span<const double> delay;
  std::span<const double> sorted;
};

/// The row's stopping time Z under the scheme's rule.
[[nodiscard]] double row_stop(const SchemeDescription& scheme, const Shape& shape, const Row& row);

/// Calls visit(k, row) for every row k of a DelayModel::rows() table with n workers, the row's
/// delays and the same sorted.
template <typename Visit>
void for_each_row(int workers, std::span<const double> table, Visit visit) {
  const auto n = index(workers);
  std::vector<double> sorted(n);
  for (std::size_t k = 0; k < table.size() / n; ++k) {
    const Row row{table.subspan(k * n, n), sorted};
    std::copy(row.delay.begin(), row.delay.end(), sorted.begin());
    std::sort(sorted.begin(), sorted.end());
    visit(k, row);
  }
}

/// The exact averages over the rows of a DelayModel::rows() table (method "trace rows"): Z of
/// every row by the rule, E[Z] and sd over rows; q the mean over rows and groups of the indicator
/// that the group is unheard, q₂ the same over the pairs of group_pairs.
[[nodiscard]] IterationTimePrediction rows_prediction(const SchemeDescription& scheme,
                                                      std::span<const double> table);

}  // namespace stragglersim::sim

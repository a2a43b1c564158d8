#include "models/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"

namespace stragglersim::models {

double roc_auc(const Eigen::VectorXd& scores, const Eigen::VectorXd& labels) {
  STRAGGLERSIM_ASSERT(scores.size() == labels.size(), "roc_auc: one label per score");
  STRAGGLERSIM_ASSERT(scores.allFinite(), "roc_auc: scores must be finite");
  const auto m = static_cast<std::size_t>(scores.size());
  std::vector<Eigen::Index> order(m);
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::sort(order.begin(), order.end(), [&](Eigen::Index i, Eigen::Index j) {
    return scores[i] < scores[j];
  });
  // Walk groups of equal scores in increasing order: each positive of a group beats every
  // negative seen before it and ties with the negatives of its own group (half credit).
  // Counts are kept in integers so the statistic is exact up to the final division.
  std::int64_t negatives_below = 0;
  std::int64_t positives = 0;
  std::int64_t wins_twice = 0;  // 2·(wins + ½·ties)
  for (std::size_t begin = 0; begin < m;) {
    std::size_t end = begin;
    std::int64_t group_positives = 0;
    std::int64_t group_negatives = 0;
    while (end < m && scores[order[end]] == scores[order[begin]]) {
      if (labels[order[end]] > 0.0) {
        ++group_positives;
      } else {
        ++group_negatives;
      }
      ++end;
    }
    wins_twice += group_positives * (2 * negatives_below + group_negatives);
    negatives_below += group_negatives;
    positives += group_positives;
    begin = end;
  }
  if (positives == 0 || negatives_below == 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return static_cast<double>(wins_twice) /
         (2.0 * static_cast<double>(positives) * static_cast<double>(negatives_below));
}

Eigen::VectorXd margins(const Dataset& data, const Eigen::VectorXd& x) {
  STRAGGLERSIM_ASSERT(x.size() == data.dimension(), "margins: x has the wrong dimension");
  count_data_bytes(data.stored_bytes());
  return std::visit([&](const auto& a) -> Eigen::VectorXd { return a * x; }, data.features);
}

bool reports_auc(const LossModel& loss) { return loss.traits().binary_labels; }

std::optional<double> test_auc(const Objective& objective, const Eigen::VectorXd& x) {
  if (!reports_auc(objective.loss())) {
    return std::nullopt;
  }
  return roc_auc(margins(objective.data(), x), objective.data().labels);
}

}  // namespace stragglersim::models

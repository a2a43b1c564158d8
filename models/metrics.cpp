#include "models/metrics.h"

#include <algorithm>
#include <boost/sort/pdqsort/pdqsort.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/row_kernels.h"
#include "models/worker_pool.h"

namespace stragglersim::models {

double roc_auc(const Eigen::VectorXd& scores, const Eigen::VectorXd& labels) {
  STRAGGLERSIM_ASSERT(scores.size() == labels.size(), "roc_auc: one label per score");
  STRAGGLERSIM_ASSERT(scores.allFinite(), "roc_auc: scores must be finite");
  // Sorting the two classes' scores apart (contiguous doubles, no index indirection) and walking
  // them together: each positive beats the negatives strictly below it and ties with the equal
  // ones (half credit). Counts are kept in integers so the statistic is exact up to the final
  // division. Boost's pattern-defeating quicksort runs branch-free on doubles: 2.0–2.4× std::sort
  // on the covtype-like test sets (benchmarks/README.md "Test AUC").
  std::vector<double> positive_scores;
  std::vector<double> negative_scores;
  for (Eigen::Index i = 0; i < scores.size(); ++i) {
    (labels[i] > 0.0 ? positive_scores : negative_scores).push_back(scores[i]);
  }
  boost::sort::pdqsort(positive_scores.begin(), positive_scores.end());
  boost::sort::pdqsort(negative_scores.begin(), negative_scores.end());
  const auto positives = static_cast<std::int64_t>(positive_scores.size());
  const auto negatives = static_cast<std::int64_t>(negative_scores.size());
  std::int64_t below = 0;       // negatives < the current positive
  std::int64_t not_above = 0;   // negatives ≤ the current positive
  std::int64_t wins_twice = 0;  // 2·(wins + ½·ties)
  for (const double s : positive_scores) {
    while (below < negatives && negative_scores[static_cast<std::size_t>(below)] < s) ++below;
    not_above = std::max(not_above, below);
    while (not_above < negatives && negative_scores[static_cast<std::size_t>(not_above)] <= s) {
      ++not_above;
    }
    wins_twice += below + not_above;
  }
  if (positives == 0 || negatives == 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return static_cast<double>(wins_twice) /
         (2.0 * static_cast<double>(positives) * static_cast<double>(negatives));
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

static_assert(kScoreChunkRows % internal::kSparseBlock == 0 &&
                  kScoreChunkRows % internal::kDenseBlock == 0,
              "a score chunk starts a block of every row pass");

namespace {

/// The scores of one column of margins and losses (score_test_set's summary of its pass).
std::optional<TestScores> scores_of(const LossModel& loss,
                                    const Dataset& data,
                                    const Eigen::VectorXd& z,
                                    const Eigen::VectorXd& losses) {
  const Eigen::Index m = data.rows();
  if (!z.allFinite()) {
    return std::nullopt;
  }
  double sum = 0.0;
  for (Eigen::Index i = 0; i < m; ++i) {
    sum += losses[i];
  }
  TestScores scores;
  scores.loss = sum / static_cast<double>(m);
  scores.metric = loss.metric_of_margins(z, data.labels);
  if (reports_auc(loss)) {
    scores.auc = roc_auc(z, data.labels);
  }
  return scores;
}

}  // namespace

std::optional<TestScores> score_test_set(const Objective& objective,
                                         const Eigen::VectorXd& x,
                                         WorkerPool* pool) {
  const LossModel& loss = objective.loss();
  STRAGGLERSIM_ASSERT(loss.traits().scalar_margin, "score_test_set: a scalar-margin loss");
  const Dataset& data = objective.data();
  const Eigen::Index m = data.rows();
  Eigen::VectorXd z(m);
  Eigen::VectorXd losses(m);
  const auto chunks = static_cast<int>((m + kScoreChunkRows - 1) / kScoreChunkRows);
  run_tasks(pool, chunks, [&](int c) {
    const Eigen::Index begin = c * kScoreChunkRows;
    const Eigen::Index size = std::min(kScoreChunkRows, m - begin);
    loss.score_rows(data,
                    RowRange{begin, begin + size},
                    x,
                    z.segment(begin, size),
                    losses.segment(begin, size));
  });
  return scores_of(loss, data, z, losses);
}

std::vector<std::optional<TestScores>> score_test_set_many(
    const Objective& objective, const std::vector<const Eigen::VectorXd*>& xs, WorkerPool* pool) {
  if (xs.size() == 1) {
    return {score_test_set(objective, *xs.front(), pool)};
  }
  const LossModel& loss = objective.loss();
  STRAGGLERSIM_ASSERT(loss.traits().scalar_margin, "score_test_set: a scalar-margin loss");
  const Dataset& data = objective.data();
  const Eigen::Index m = data.rows();
  const auto columns = static_cast<Eigen::Index>(xs.size());
  Eigen::MatrixXd x(objective.dimension(), columns);
  for (Eigen::Index s = 0; s < columns; ++s) {
    x.col(s) = *xs[static_cast<std::size_t>(s)];
  }
  Eigen::MatrixXd z(m, columns);
  Eigen::MatrixXd losses(m, columns);
  const auto chunks = static_cast<int>((m + kScoreChunkRows - 1) / kScoreChunkRows);
  run_tasks(pool, chunks, [&](int c) {
    const Eigen::Index begin = c * kScoreChunkRows;
    const Eigen::Index size = std::min(kScoreChunkRows, m - begin);
    loss.score_rows_many(data,
                         RowRange{begin, begin + size},
                         x,
                         z.middleRows(begin, size),
                         losses.middleRows(begin, size));
  });
  std::vector<std::optional<TestScores>> out;
  out.reserve(xs.size());
  for (Eigen::Index s = 0; s < columns; ++s) {
    out.push_back(scores_of(loss, data, z.col(s), losses.col(s)));
  }
  return out;
}

}  // namespace stragglersim::models

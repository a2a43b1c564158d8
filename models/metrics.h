#pragma once
// Ranking metrics of a linear classifier on a test set (README.md (The paper's figures): "AUC or
// MSE").

#include <Eigen/Core>
#include <optional>
#include <vector>

#include "models/dataset.h"
#include "models/loss_model.h"
#include "models/objective.h"

namespace stragglersim::models {

/// Area under the ROC curve of `scores` for labels b (positive: b > 0, negative: b ≤ 0), exact:
/// the Mann–Whitney statistic P(s⁺ > s⁻) + ½·P(s⁺ = s⁻) over all (positive, negative) pairs,
/// computed by one sort, O(m log m). NaN when either class is absent. Illegal: sizes differ,
/// a non-finite score.
double roc_auc(const Eigen::VectorXd& scores, const Eigen::VectorXd& labels);

/// Margins z_i = a_iᵀx of every row (dense or sparse, never densified).
Eigen::VectorXd margins(const Dataset& data, const Eigen::VectorXd& x);

/// True for losses whose test set is scored by AUC as well as their metric (logistic).
bool reports_auc(const LossModel& loss);

/// AUC of the margins aᵢᵀx on the objective's data when its loss reports one, else nullopt.
std::optional<double> test_auc(const Objective& objective, const Eigen::VectorXd& x);

/// A held-out set's scores at x.
struct TestScores {
  double loss = 0.0;          ///< (1/m) Σ_i ℓ(a_iᵀx; b_i), without the regulariser
  double metric = 0.0;        ///< the loss's metric (accuracy or mean squared error)
  std::optional<double> auc;  ///< the margins' AUC, for losses that report one
};

/// Rows per task of `score_test_set`: fixed, so its bytes do not depend on the thread count,
/// and a multiple of every block size of the row passes, so each row's loss is the same bytes
/// as in `Objective::value`.
inline constexpr Eigen::Index kScoreChunkRows = 8192;

/// Scalar-margin losses: the scores of the objective's data at x from one pass over its rows, in
/// chunks of kScoreChunkRows on `pool` (the losses summed in row order, as `Objective::value`
/// sums them). nullopt when a margin is not finite.
std::optional<TestScores> score_test_set(const Objective& objective,
                                         const Eigen::VectorXd& x,
                                         WorkerPool* pool = nullptr);

/// score_test_set for every x in `xs`, from one pass over the rows for all of them
/// (LossModel::score_rows_many): entry s the same bytes as score_test_set(objective, *xs[s],
/// pool), for every thread count.
std::vector<std::optional<TestScores>> score_test_set_many(
    const Objective& objective,
    const std::vector<const Eigen::VectorXd*>& xs,
    WorkerPool* pool = nullptr);

}  // namespace stragglersim::models

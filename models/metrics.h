#pragma once
// Ranking metrics of a linear classifier on a test set (README.md (The paper's figures): "AUC or
// MSE").

#include <Eigen/Core>
#include <optional>

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

}  // namespace stragglersim::models

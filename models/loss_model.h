#pragma once
// Per-row losses ℓ(z; b) of a linear model, z = aᵀx (docs/model.md):
//   least squares  ℓ = ½ (z − b)²            ℓ'' = 1
//   logistic       ℓ = log(1 + exp(−b z))    ℓ'' ≤ 1/4, b ∈ {−1, +1}
// The hot loop is one virtual call per partition (`accumulate`), never one per row.

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "models/dataset.h"

namespace stragglersim::models {

class WorkerPool;

/// What callers may rely on about a loss without knowing which one it is.
struct LossTraits {
  bool binary_labels = false;  ///< labels must be ±1; the test set reports ROC AUC (logistic)
  bool quadratic = false;      ///< ℓ is quadratic in z: the optimum solves normal equations
  /// |ℓ'(z; b)| ≤ |b| for every z (logistic): the gradient is bounded everywhere.
  bool bounded_derivative = false;
  /// One margin z = aᵀx per row, x in R^p (value, derivative, second_derivative apply); false
  /// for the softmax models (models/softmax_network.h), whose scalar methods must not be called.
  bool scalar_margin = true;
  /// f is convex in x: f*, the convergence bounds and step "auto" apply (false: the mlp).
  bool convex = true;
  /// Labels are class indices 0 … classes − 1 (softmax, mlp); 0 for the other losses.
  int classes = 0;
};

class LossModel {
 public:
  virtual ~LossModel() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual LossTraits traits() const = 0;
  /// ℓ(z; b).
  [[nodiscard]] virtual double value(double z, double b) const = 0;
  /// dℓ/dz at (z; b).
  [[nodiscard]] virtual double derivative(double z, double b) const = 0;
  /// d²ℓ/dz² at (z; b) (the weights of a Newton Hessian).
  [[nodiscard]] virtual double second_derivative(double z, double b) const = 0;
  /// sup_z d²ℓ/dz²: β ≤ curvature_bound · λ_max(AᵀA/m) + λ₂.
  [[nodiscard]] virtual double curvature_bound() const = 0;
  /// One pass over `rows`: returns Σ ℓ(a_iᵀx; b_i) and adds Σ ℓ'(a_iᵀx; b_i)·a_i to `gradient_sum`
  /// (unnormalised; the caller divides by m).
  // NOLINTNEXTLINE(modernize-use-nodiscard): also called for its gradient alone
  virtual double accumulate(const Dataset& data,
                            RowRange rows,
                            const Eigen::VectorXd& x,
                            Eigen::Ref<Eigen::VectorXd> gradient_sum) const = 0;
  /// `accumulate` for the S columns of x (p × S) at once: losses[s] = Σ ℓ(a_iᵀx_s; b_i) and
  /// column s of `gradient_sums` (p × S) gets Σ ℓ'(a_iᵀx_s; b_i)·a_i added, each the same bytes
  /// as accumulate(data, rows, x.col(s), gradient_sums.col(s)). The linear losses make one pass
  /// over the rows for every column (one pass of data traffic); the default calls `accumulate`
  /// once per column (S passes).
  virtual void accumulate_many(const Dataset& data,
                               RowRange rows,
                               const Eigen::MatrixXd& x,
                               Eigen::Ref<Eigen::MatrixXd> gradient_sums,
                               Eigen::Ref<Eigen::VectorXd> losses) const;
  /// accumulate_many over each of `ranges` (the partitions), the ranges on `pool`: losses(j, s)
  /// its loss sum on range j and column j of *gradients[s] (p × ranges.size()) its gradient sum
  /// on range j divided by `divisor`, the bytes of accumulate_many from zero sums, then that
  /// division. The sparse linear losses prepare the columns of x once for every range; the
  /// default calls accumulate_many per range.
  virtual void accumulate_ranges_many(const Dataset& data,
                                      const std::vector<RowRange>& ranges,
                                      const Eigen::MatrixXd& x,
                                      double divisor,
                                      const std::vector<Eigen::MatrixXd*>& gradients,
                                      Eigen::Ref<Eigen::MatrixXd> losses,
                                      WorkerPool* pool) const;
  /// Σ ℓ(a_iᵀx; b_i) over `rows` without the gradient work (the default calls `accumulate`).
  [[nodiscard]] virtual double accumulate_value(const Dataset& data,
                                                RowRange rows,
                                                const Eigen::VectorXd& x) const;
  /// Test metric over rows: classification accuracy (logistic) or mean squared error.
  [[nodiscard]] virtual std::string_view metric_name() const = 0;
  [[nodiscard]] virtual double metric(const Dataset& data, const Eigen::VectorXd& x) const = 0;
  /// Scalar-margin losses only: the margins z_i = a_iᵀx and losses ℓ(z_i; b_i) of `rows`, written
  /// to z and losses (indexed from rows.begin) in one pass. When rows.begin is a multiple of 32,
  /// each ℓ_i is the same bytes as the term `accumulate` adds for row i.
  virtual void score_rows(const Dataset& data,
                          RowRange rows,
                          const Eigen::VectorXd& x,
                          Eigen::Ref<Eigen::VectorXd> z,
                          Eigen::Ref<Eigen::VectorXd> losses) const = 0;
  /// score_rows for the S columns of x (p × S): column s of z and losses (rows × S) the same
  /// bytes as score_rows(data, rows, x.col(s), …), from one pass over the rows for every column
  /// (the default calls score_rows once per column).
  virtual void score_rows_many(const Dataset& data,
                               RowRange rows,
                               const Eigen::MatrixXd& x,
                               Eigen::Ref<Eigen::MatrixXd> z,
                               Eigen::Ref<Eigen::MatrixXd> losses) const;
  /// Scalar-margin losses only: `metric` of the rows whose margins are z and labels `labels`.
  [[nodiscard]] virtual double metric_of_margins(const Eigen::VectorXd& z,
                                                 const Eigen::VectorXd& labels) const = 0;
  /// The length of x for data with `features` columns: p for the linear losses.
  [[nodiscard]] virtual Eigen::Index parameter_count(Eigen::Index features) const {
    return features;
  }
  /// The optimiser's x₀, seeded from the run's init stream: zero unless the model needs
  /// symmetry broken (the mlp).
  [[nodiscard]] virtual Eigen::VectorXd initial_point(Eigen::Index features,
                                                      std::uint64_t /*seed*/) const {
    return Eigen::VectorXd::Zero(parameter_count(features));
  }
  /// Multiclass models (traits().classes > 0): the predicted class of every row. Others: empty.
  [[nodiscard]] virtual std::vector<int> predict(const Dataset& /*data*/,
                                                 const Eigen::VectorXd& /*x*/) const {
    return {};
  }
};

/// ℓ = ½ (aᵀx − b)².
std::unique_ptr<LossModel> make_least_squares_loss();
/// ℓ = log(1 + exp(−b aᵀx)), computed without overflow for any margin.
std::unique_ptr<LossModel> make_logistic_loss();

}  // namespace stragglersim::models

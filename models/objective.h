#pragma once
// The training objective (docs/model.md, fixed normalisation):
//   f(x) = (1/m) Σ_i ℓ(a_iᵀx; b_i) + (λ₂/2)‖x‖²,   F_j(x) = (1/m) Σ_{i∈P_j} ℓ_i(x).
// Partition gradients ∇F_j exclude the regulariser, which the master adds exactly.

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "models/base/random_stream.h"
#include "models/dataset.h"
#include "models/loss_model.h"
#include "models/worker_pool.h"

namespace stragglersim::models {

class Objective {
 public:
  /// Illegal: partitions < 1 or > rows, l2 < 0, null data or loss.
  Objective(std::shared_ptr<const Dataset> data,
            std::shared_ptr<const LossModel> loss,
            double l2,
            int partitions);

  /// Partitions `held.held` of a training set of `total_rows` rows from a partial data set
  /// holding only their rows (arrange_held_rows; an MPI worker's own partitions): only
  /// partition_gradient of a held partition is legal, bitwise equal to the full objective's;
  /// f, ∇f and the constants need the whole set. Illegal: held ranges outside the data.
  static Objective held_partitions(std::shared_ptr<const Dataset> data,
                                   std::shared_ptr<const LossModel> loss,
                                   double l2,
                                   int partitions,
                                   Eigen::Index total_rows,
                                   HeldRows held);

  [[nodiscard]] int partitions() const { return partitions_; }
  /// The length of x: p for the linear losses, the parameter count of a softmax model.
  [[nodiscard]] Eigen::Index dimension() const {
    return loss_->parameter_count(data_->dimension());
  }
  /// m, the training rows (of the whole set, also for held_partitions).
  [[nodiscard]] Eigen::Index rows() const { return total_rows_; }
  /// Whether this objective holds only some partitions (held_partitions).
  [[nodiscard]] bool partial() const { return partial_; }
  /// Rows of the data set in memory (padding included): m unless partial.
  [[nodiscard]] Eigen::Index rows_held() const { return data_->rows(); }
  [[nodiscard]] double l2() const { return l2_; }
  [[nodiscard]] RowRange partition(int j) const;
  [[nodiscard]] const Dataset& data() const { return *data_; }
  [[nodiscard]] const LossModel& loss() const { return *loss_; }

  /// f(x) in one streaming pass over the data; when `partition_gradients` is non-null it is
  /// resized to p × k and column j receives ∇F_j(x) from the same pass. With a pool the
  /// partitions are computed in parallel and their losses summed in partition order: the same
  /// bytes for every thread count.
  double evaluate(const Eigen::VectorXd& x,
                  Eigen::MatrixXd* partition_gradients,
                  WorkerPool* pool = nullptr) const;
  /// f(x_s) and every ∇F_j(x_s) for each s, in one pass over the data for all of them:
  /// losses[s] and *partition_gradients[s] (resized p × k) are the same bytes as
  /// evaluate(*xs[s], partition_gradients[s], pool) — for every S, thread count and data kind.
  /// Each partition's rows are read once for every x_s (LossModel::accumulate_many; the
  /// softmax models fall back to one pass per x_s). Illegal: no x, a null or missing matrix.
  std::vector<double> evaluate_many(const std::vector<const Eigen::VectorXd*>& xs,
                                    const std::vector<Eigen::MatrixXd*>& partition_gradients,
                                    WorkerPool* pool = nullptr) const;
  /// ∇F_j(x) for every j in `which`, written to column s of `out` (p × which.size()) for
  /// which[s]; in parallel on `pool` when given (each column is the same bytes as
  /// partition_gradient).
  void partition_gradients(const std::vector<int>& which,
                           const Eigen::VectorXd& x,
                           Eigen::MatrixXd& out,
                           WorkerPool* pool = nullptr) const;
  /// f(x).
  [[nodiscard]] double value(const Eigen::VectorXd& x) const;
  /// ∇f(x) = Σ_j ∇F_j(x) + λ₂x.
  [[nodiscard]] Eigen::VectorXd gradient(const Eigen::VectorXd& x) const;
  /// ∇F_j(x) written to `out` (size p).
  void partition_gradient(int j, const Eigen::VectorXd& x, Eigen::Ref<Eigen::VectorXd> out) const;
  /// One ∇F_j(x) to compute: partition_gradient(partition, *x, *out).
  struct PartitionTask {
    int partition = 0;
    const Eigen::VectorXd* x = nullptr;
    Eigen::VectorXd* out = nullptr;  ///< resized to p
  };
  /// Every task's ∇F_j(x), the same bytes as partition_gradient: the tasks of one partition read
  /// its rows once for all their x (LossModel::accumulate_many), the partitions on `pool`.
  /// Illegal: a partition out of range, a null x or out, an x of the wrong dimension.
  void partition_gradients_many(const std::vector<PartitionTask>& tasks,
                                WorkerPool* pool = nullptr) const;
  /// The stochastic partition gradient (|P_j| / (b·m)) Σ_{i∈S} ∇ℓ_i(x) over a uniform sample S
  /// of b = `batch` distinct rows of P_j (selection sampling from an engine seeded by `seed`,
  /// rows summed in ascending order): an unbiased estimate of ∇F_j(x), written to `out`.
  /// Illegal: batch < 1 or > |P_j|.
  void partition_minibatch_gradient(int j,
                                    const Eigen::VectorXd& x,
                                    Eigen::Index batch,
                                    std::uint64_t seed,
                                    Eigen::Ref<Eigen::VectorXd> out) const;
  /// The smallest partition's rows, min_j |P_j| (the largest legal minibatch).
  [[nodiscard]] Eigen::Index smallest_partition_rows() const;

  /// β = curvature_bound · λ_max(AᵀA/m) + λ₂ (an upper bound on the smoothness constant of f),
  /// λ_max by seeded Lanczos to relative tolerance 1e-10 (largest_gram_eigenvalue); each product
  /// AᵀAv is split into fixed row chunks, run on `pool` when given (same bytes for every thread
  /// count).
  [[nodiscard]] double smoothness(WorkerPool* pool = nullptr) const;
  /// PL constant μ: least squares, smallest non-zero eigenvalue of AᵀA/m plus λ₂ (PL holds
  /// even when m < p); logistic, λ₂ (nullopt when λ₂ = 0).
  [[nodiscard]] std::optional<double> pl_constant() const;

 private:
  /// The features partition j's rows have a non-zero in, ascending, for sparse data under a
  /// linear loss when they are fewer than p (internal::touched_features, found once per data
  /// set and shared by the copies of this objective); null otherwise (every entry of ∇F_j may be
  /// non-zero). ∇F_j is +0 at every other feature.
  [[nodiscard]] const std::vector<Eigen::Index>* partition_support(int j) const;

  struct Supports {
    std::once_flag found;
    std::vector<std::vector<Eigen::Index>> features;  ///< per partition; empty: every feature
  };

  std::shared_ptr<const Dataset> data_;
  std::shared_ptr<const LossModel> loss_;
  double l2_;
  int partitions_;
  Eigen::Index total_rows_ = 0;
  bool partial_ = false;
  HeldRows held_;
  std::shared_ptr<Supports> supports_ = std::make_shared<Supports>();
};

/// The seed of one stochastic gradient's sample: partition j's rows for draw `draw` (the
/// iteration of a synchronous run, the worker's computation count of an asynchronous one) of a
/// run seeded `seed`. Depends on nothing else, so the samples are the same for every thread count.
[[nodiscard]] constexpr std::uint64_t minibatch_seed(std::uint64_t seed,
                                                     std::uint64_t draw,
                                                     int partition) {
  return derive_seed(
      derive_seed(derive_seed(seed, static_cast<std::uint64_t>(Stream::kMinibatch)), draw),
      static_cast<std::uint64_t>(partition));
}

/// λ_max(AᵀA/m) by Lanczos with full reorthogonalisation from a fixed seeded start vector
/// (restarted from the top Ritz vector every 64 steps, fewer for wide data): the top Ritz value θ
/// (a Rayleigh quotient, θ ≤ λ_max) once the Ritz vector's residual ‖Gy − θy‖ is at most
/// tolerance·θ (then an eigenvalue lies within tolerance·θ of θ), or after `max_iterations` Gram
/// products (one pass over the data each; twin top eigenvalues closer than ~10⁻⁶ relative need
/// more than 64 vectors to separate, and end there within their gap).
double largest_gram_eigenvalue(const Dataset& data,
                               int max_iterations = 1000,
                               double tolerance = 1e-10,
                               WorkerPool* pool = nullptr);

}  // namespace stragglersim::models

#pragma once
// The training loop shared by every backend: record x_t, ask the backend for the decoded
// estimate at the optimiser's query point, add λ₂·y exactly, step, and check the numbers.
// Trace row t holds f(x_t) after t updates (row 0 is x₀ at time 0).

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "codes/gradient_code.h"
#include "models/objective.h"
#include "sim/asynchronous_cluster.h"
#include "sim/backend.h"
#include "sim/lockstep_group.h"
#include "sim/optimizer.h"

namespace stragglersim::sim {

struct TraceRow {
  std::uint64_t iteration = 0;
  double time = 0.0;            ///< counted simulated seconds since the start
  double iteration_time = 0.0;  ///< counted seconds of this iteration
  double wall_time = 0.0;       ///< simulated seconds including drained waits
  double real_seconds = 0.0;    ///< measured seconds (real backends)
  double loss = 0.0;            ///< f(x_t), regulariser included
  double grad_norm = 0.0;       ///< ‖∇f(x_t)‖
  double decoding_error = 0.0;  ///< ‖α − 1‖² of this iteration's decode (α after rescaling)
  /// ‖ĝ − ∇f(y)‖ of this iteration's estimate ĝ (decoded, rescaled, λ₂y added) at the query point
  /// y; only where the run already has ∇f(y): gradient descent (y = x_{t−1}), rows t ≥ 1.
  std::optional<double> gradient_error;
  std::optional<double> gradient_error_relative;  ///< gradient_error / ‖∇f(y)‖ (‖∇f(y)‖ > 0)
  int workers_heard = 0;
  int partitions_covered = 0;
  std::vector<int> heard;  ///< the workers heard, in arrival order (empty in row 0)
  /// The workers whose messages the update used, one entry per message: synchronous rules the
  /// workers with a non-zero decoding weight, in worker order; asynchronous rules the workers of
  /// the update's gradients (a worker twice when K-batch used two of its gradients).
  std::vector<int> used;
  /// Asynchronous runs: the staleness of each gradient in `used` (same order).
  std::vector<std::uint64_t> used_staleness;
  /// Anytime minibatch, rows t ≥ 1: each worker's c_i (indexed by worker).
  std::vector<std::int64_t> worker_rows;
  /// With a collective, rows t ≥ 1 (BackendIteration): each rank's completion − ready time and
  /// the rank whose compute end was the latest.
  std::vector<double> collective_seconds;
  std::optional<int> arrived_last;
  /// Asynchronous runs (train_asynchronous), rows t ≥ 1: mean and largest staleness of the
  /// update's gradients (updates between the parameters a gradient was computed at and x_{t−1}).
  std::optional<double> staleness_mean;
  std::optional<double> staleness_max;
  /// Anytime minibatch, rows t ≥ 1: the rows whose gradients the update used (Σ_i c_i).
  std::optional<std::int64_t> rows_used;
  /// Adaptive deadline, rows t ≥ 1: this iteration's deadline; nullopt when it waited for all.
  std::optional<double> deadline;
  std::optional<double> test_loss;    ///< (1/m_test) Σ ℓ on the test set, no regulariser
  std::optional<double> test_metric;  ///< accuracy (logistic) or MSE (least squares)
  std::optional<double> test_auc;     ///< ROC AUC of the test margins (logistic only)
  /// Multiclass models: C × C test confusion counts, row-major, [true class][predicted class].
  std::vector<std::int64_t> test_confusion;
};

struct TrainingOptions {
  std::uint64_t iterations = 100;
  /// Computes each row's partition gradients in parallel when set (same bytes as serial).
  models::WorkerPool* pool = nullptr;
  /// Stop after the first iteration whose cumulative simulated time reaches it (seconds).
  double time_budget = std::numeric_limits<double>::infinity();
  /// The lock-step group the run is a member of (sim/lockstep_group.h): its passes over the
  /// training and test sets are shared with the other members, the same bytes. Null: its own.
  LockstepGroup* lockstep = nullptr;
};

/// Runs the loop for options.iterations iterations or until the clock reaches options.time_budget,
/// whichever comes first; `on_row` sees every row as soon as it is complete (row 0 first). Throws
/// NumericalError on a non-finite loss or gradient, after the rows before it were delivered.
void train(const models::Objective& objective,
           const models::Objective* test_objective,
           Optimizer& optimizer,
           Backend& backend,
           const TrainingOptions& options,
           const std::function<void(const TraceRow&)>& on_row);

struct AsynchronousOptions {
  TrainingOptions run;
  StalenessStep staleness_step = StalenessStep::kConstant;
  /// Stochastic gradients; each computation c of a worker draws its own sample (draw c).
  std::optional<MinibatchOptions> minibatch;
  /// Shared sampling (Sampling::kShared): computation c of worker i reads the partition
  /// shared_partition(seed, i, c) instead of its own.
  std::uint64_t seed = 0;
};

/// The partition computation `computation` of `worker` reads under shared sampling: uniform over
/// the `partitions`, from the run's sampling stream; depends on nothing else.
[[nodiscard]] int shared_partition(std::uint64_t seed,
                                   int worker,
                                   std::uint64_t computation,
                                   int partitions);

/// The asynchronous loop (docs/model.md §4 "Asynchronous updates"): row t holds f(x_t) after t
/// updates of `cluster`'s discipline. Update t uses the K gradients g_l computed at the stale
/// iterates x_{v_l} (each worker's coded message y_i = Σ_j B_ij ∇F_j(x_{v_l}), stochastic with
/// `options.minibatch`; under shared sampling ∇F_j of the drawn partition) and steps with
///   ĝ = Σ_l w_l s(τ_l) g_l + λ₂ x_{t−1},   s(τ) = 1 (constant) or 1/(1 + τ) (inverse),
/// w_l = n/K (n/B for Rennala and MindFlayer), 1/b_i for Malenia (b_i the update's gradients
/// from the worker of g_l: the mean of each worker's gradients, summed), n τ_i/τ_H for Rescaled
/// ASGD; the gradients summed in (worker, computation) order, so that K = n with every gradient
/// fresh is the synchronous loop's sum over every worker, bit for bit. `optimizer` must query
/// its iterate (gradient descent). Throws NumericalError as train does.
void train_asynchronous(const models::Objective& objective,
                        const models::Objective* test_objective,
                        const codes::GradientCode& code,
                        Optimizer& optimizer,
                        AsynchronousCluster& cluster,
                        const AsynchronousOptions& options,
                        const std::function<void(const TraceRow&)>& on_row);

}  // namespace stragglersim::sim

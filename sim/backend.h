#pragma once
// Backends run one iteration of a scheme: broadcast the query point, let the workers compute,
// stop by the rule, decode, and return the gradient estimate Σ_j α_j ∇F_j (without the
// regulariser, which the training loop adds). The simulated clock is one backend; the threaded
// and MPI backends implement the same interface.

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::sim {

struct BackendIteration {
  double iteration_time = 0.0;  ///< counted simulated seconds, broadcast to stop
  double wall_time = 0.0;       ///< simulated seconds until the next broadcast (drain waits)
  double real_seconds = 0.0;    ///< measured wall-clock seconds (real backends; 0 when simulated)
  std::vector<int> heard;       ///< workers heard, in arrival order
  codes::Decoding decoding;
  Eigen::VectorXd estimate;  ///< Σ_j α_j ∇F_j(query)
  /// Anytime minibatch: the rows the workers finished within the window, Σ_i c_i.
  std::optional<std::int64_t> rows_used;
  /// Anytime minibatch: each worker's c_i, indexed by worker (empty for every other rule).
  std::vector<std::int64_t> worker_rows;
  /// The deadline of this iteration (seconds after the broadcast; IterationTiming::deadline).
  std::optional<double> deadline;
  /// With a collective (docs/model.md §3 "Aggregation"): each rank's completion − ready time of
  /// the all-reduce, indexed by rank (empty otherwise), and the rank whose compute end was the
  /// latest (ties: the lowest rank).
  std::vector<double> collective_seconds;
  std::optional<int> arrived_last;
};

/// One iteration of a wall-clock backend as its master saw it, next to what the simulation
/// predicts for the same delays.
struct ThreadedIterationRecord {
  std::uint64_t iteration = 0;
  double real_stop_seconds = 0.0;  ///< real seconds, broadcast to the stop
  double real_seconds = 0.0;       ///< real seconds, broadcast to return (decode, drain included)
  double real_wall_seconds = 0.0;  ///< real seconds, previous return to this return
  double simulated_stop = 0.0;     ///< simulated seconds, broadcast to the stop
  std::vector<int> heard;          ///< real arrival order
  std::vector<int> simulated_heard;
  bool same_set = false;  ///< heard and simulated_heard hold the same workers
  /// Distance (simulated seconds) from the simulated stop to the nearest other simulated arrival
  /// that could change the heard set if reordered (first_r: only later arrivals; all: +inf):
  /// a disagreement with the simulation is a near-tie when this is below the scheduling jitter.
  double near_tie_gap = 0.0;
  int late_dropped = 0;  ///< messages of earlier iterations dropped during this iteration
  /// With a collective (docs/backends.md "Collectives"), real_stop_seconds runs to the last
  /// rank's completion (the iteration's end, as the simulated iteration time does) and this is
  /// the real seconds from the broadcast to the rule's stop; without one, real_stop_seconds.
  double real_rule_stop_seconds = 0.0;
  /// With a collective, per rank: real seconds from the broadcast to its compute end (NaN when
  /// it abandoned its work at the stop: a right-censored time), and from its join (its compute
  /// end, or its abandonment) to its completion of the collective. Empty without one.
  std::vector<double> compute_seconds;
  std::vector<double> collective_seconds;
};

/// One worker's measured compute time of one iteration (mpi, inject false), real seconds.
struct WorkerTime {
  std::uint64_t iteration = 0;
  int worker = 0;
  double seconds = 0.0;
};

/// Stochastic gradients (the "optimizer.batch" option): every partition gradient a worker
/// computes is over `batch` rows of its partition, sampled by models::minibatch_seed(seed, draw,
/// j) (Objective::partition_minibatch_gradient).
struct MinibatchOptions {
  Eigen::Index batch = 1;
  std::uint64_t seed = 1;  ///< the run's seed
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// Runs iteration `iteration` (1-based) at `query`. `partition_gradients`, when non-null, holds
  /// ∇F_j(query) in column j, already computed by the caller; a backend may use it or not.
  virtual BackendIteration iterate(std::uint64_t iteration,
                                   const Eigen::VectorXd& query,
                                   const Eigen::MatrixXd* partition_gradients) = 0;

  /// A wall-clock backend's record of every iteration so far (the real_* trace columns and
  /// heard.csv); null for a backend on the simulated clock.
  [[nodiscard]] virtual const std::vector<ThreadedIterationRecord>* real_records() const {
    return nullptr;
  }
  /// Real seconds per simulated second of the injected delays; 0 on the simulated clock.
  [[nodiscard]] virtual double seconds_per_unit() const { return 0.0; }
  /// Called once after the last iteration: ends the workers' work still in flight and returns
  /// their measured compute times (worker_times.csv), or nullopt when the backend measures none.
  virtual std::optional<std::vector<WorkerTime>> finish() { return std::nullopt; }
};

}  // namespace stragglersim::sim

#pragma once
// Backends run one iteration of a scheme: broadcast the query point, let the workers compute,
// stop by the rule, decode, and return the gradient estimate Σ_j α_j ∇F_j (without the
// regulariser, which the training loop adds). The simulated clock is one backend; the threaded
// and MPI backends implement the same interface.

#include <Eigen/Core>
#include <cstdint>
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
};

}  // namespace stragglersim::sim

#include "sim/simulated_backend.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

SimulatedBackend::SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                                   Scheme scheme,
                                   std::unique_ptr<SimulatedCluster> cluster)
    : objective_(std::move(objective)), scheme_(std::move(scheme)), cluster_(std::move(cluster)) {
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  STRAGGLERSIM_ASSERT(cluster_->workers() == scheme_.code->workers(),
                      "code and cluster must have the same workers");
  partition_buffer_.resize(objective_->dimension());
}

BackendIteration SimulatedBackend::iterate(std::uint64_t iteration,
                                           const Eigen::VectorXd& query,
                                           const Eigen::MatrixXd* partition_gradients) {
  const IterationTiming& timing = cluster_->next_iteration();
  BackendIteration out;
  out.iteration_time = timing.iteration_time;
  out.wall_time = timing.wall_time;
  out.heard = timing.heard;
  out.decoding = scheme_.decode(timing.heard, iteration);
  out.estimate = Eigen::VectorXd::Zero(objective_->dimension());
  const Eigen::VectorXd& alpha = out.decoding.alpha;
  for (Eigen::Index j = 0; j < alpha.size(); ++j) {
    if (alpha(j) == 0.0) {
      continue;  // erased partitions are never computed
    }
    if (partition_gradients != nullptr) {
      out.estimate.noalias() += alpha(j) * partition_gradients->col(j);
    } else {
      objective_->partition_gradient(static_cast<int>(j), query, partition_buffer_);
      out.estimate.noalias() += alpha(j) * partition_buffer_;
    }
  }
  return out;
}

}  // namespace stragglersim::sim

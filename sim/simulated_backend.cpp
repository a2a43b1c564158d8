#include "sim/simulated_backend.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

SimulatedBackend::SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                                   Scheme scheme,
                                   std::unique_ptr<SimulatedCluster> cluster,
                                   models::WorkerPool* pool)
    : objective_(std::move(objective)),
      scheme_(std::move(scheme)),
      cluster_(std::move(cluster)),
      pool_(pool) {
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  STRAGGLERSIM_ASSERT(cluster_->workers() == scheme_.code->workers(),
                      "code and cluster must have the same workers");
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
  if (partition_gradients != nullptr) {
    for (Eigen::Index j = 0; j < alpha.size(); ++j) {
      if (alpha(j) != 0.0) {
        out.estimate.noalias() += alpha(j) * partition_gradients->col(j);
      }
    }
    return out;
  }
  // Erased partitions are never computed; the others in parallel, combined in partition order.
  needed_.clear();
  for (Eigen::Index j = 0; j < alpha.size(); ++j) {
    if (alpha(j) != 0.0) {
      needed_.push_back(static_cast<int>(j));
    }
  }
  objective_->partition_gradients(needed_, query, needed_gradients_, pool_);
  for (std::size_t s = 0; s < needed_.size(); ++s) {
    out.estimate.noalias() +=
        alpha(needed_[s]) * needed_gradients_.col(static_cast<Eigen::Index>(s));
  }
  return out;
}

}  // namespace stragglersim::sim

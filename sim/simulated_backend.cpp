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
  message_buffer_.resize(objective_->dimension());
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
  // Combined as the real masters combine their workers' messages (combine_messages), so a real
  // run that hears the same workers returns the same bytes; every partition gradient needed is
  // computed at most once per iteration.
  const Eigen::Index p = objective_->dimension();
  if (partition_gradients == nullptr) {
    computed_.assign(static_cast<std::size_t>(objective_->partitions()), false);
    computed_gradients_.resize(p, objective_->partitions());
  }
  auto gradient = [&](int j) -> Eigen::Ref<const Eigen::VectorXd> {
    if (partition_gradients != nullptr) {
      return partition_gradients->col(j);
    }
    if (!computed_[static_cast<std::size_t>(j)]) {
      objective_->partition_gradient(j, query, computed_gradients_.col(j));
      computed_[static_cast<std::size_t>(j)] = true;
    }
    return computed_gradients_.col(j);
  };
  out.estimate = combine_messages(out.decoding, p, [&](int i) -> const Eigen::VectorXd& {
    coded_message(*scheme_.code, i, gradient, message_buffer_);
    return message_buffer_;
  });
  return out;
}

}  // namespace stragglersim::sim

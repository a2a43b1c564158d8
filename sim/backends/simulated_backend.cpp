#include "sim/backends/simulated_backend.h"

#include <algorithm>

#include "models/base/invariant.h"

namespace stragglersim::sim {

SimulatedBackend::SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                                   Scheme scheme,
                                   std::unique_ptr<SimulatedCluster> cluster,
                                   models::WorkerPool* pool,
                                   std::optional<MinibatchOptions> minibatch)
    : objective_(std::move(objective)),
      scheme_(std::move(scheme)),
      cluster_(std::move(cluster)),
      pool_(pool),
      minibatch_(minibatch) {
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  STRAGGLERSIM_ASSERT(cluster_->workers() == scheme_.code->workers(),
                      "code and cluster must have the same workers");
  message_buffer_.resize(objective_->dimension());
  column_.assign(static_cast<std::size_t>(objective_->partitions()), -1);
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
  const Eigen::Index p = objective_->dimension();
  if (minibatch_) {
    partition_gradients = nullptr;  // the full gradients are not what the workers compute
  }
  if (partition_gradients == nullptr) {
    // The partitions some weighted worker holds, each computed once (in parallel on the pool,
    // each column the same bytes as a serial partition_gradient); erased ones never are.
    needed_.clear();
    const Eigen::VectorXd& a = out.decoding.weights;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      if (a(i) != 0.0) {
        const auto support = scheme_.code->support(static_cast<int>(i));
        needed_.insert(needed_.end(), support.begin(), support.end());
      }
    }
    std::sort(needed_.begin(), needed_.end());
    needed_.erase(std::unique(needed_.begin(), needed_.end()), needed_.end());
    if (minibatch_) {
      needed_gradients_.resize(p, static_cast<Eigen::Index>(needed_.size()));
      models::run_tasks(pool_, static_cast<int>(needed_.size()), [&](int s) {
        const int j = needed_[static_cast<std::size_t>(s)];
        objective_->partition_minibatch_gradient(
            j,
            query,
            minibatch_->batch,
            models::minibatch_seed(minibatch_->seed, iteration, j),
            needed_gradients_.col(s));
      });
    } else {
      objective_->partition_gradients(needed_, query, needed_gradients_, pool_);
    }
    for (std::size_t s = 0; s < needed_.size(); ++s) {
      column_[static_cast<std::size_t>(needed_[s])] = static_cast<Eigen::Index>(s);
    }
  }
  auto gradient = [&](int j) -> Eigen::Ref<const Eigen::VectorXd> {
    if (partition_gradients != nullptr) {
      return partition_gradients->col(j);
    }
    return needed_gradients_.col(column_[static_cast<std::size_t>(j)]);
  };
  // Combined as the real masters combine their workers' messages (combine_messages), so a real
  // run that hears the same workers returns the same bytes.
  out.estimate = combine_messages(out.decoding, p, [&](int i) -> const Eigen::VectorXd& {
    coded_message(*scheme_.code, i, gradient, message_buffer_);
    return message_buffer_;
  });
  return out;
}

}  // namespace stragglersim::sim

#pragma once
// The simulated-clock backend (README.md (Architecture)): delays from the cluster's event queue,
// and the gradient the master would decode computed for real from the partition gradients it needs,
// each computed once per iteration, combined into the heard workers' coded messages y_i and then
// ĝ = Σ_i a_i y_i in worker order, exactly as the real backends' masters combine (the same bytes
// when they hear the same workers). Bit-reproducible.

#include <memory>
#include <vector>

#include "models/objective.h"
#include "sim/backend.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

class SimulatedBackend final : public Backend {
 public:
  /// Illegal: code and objective partition counts that differ.
  SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                   Scheme scheme,
                   std::unique_ptr<SimulatedCluster> cluster);
  [[nodiscard]] std::string name() const override { return "simulated"; }
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           const Eigen::MatrixXd* partition_gradients) override;
  [[nodiscard]] const SimulatedCluster& cluster() const { return *cluster_; }

 private:
  std::shared_ptr<const models::Objective> objective_;
  Scheme scheme_;
  std::unique_ptr<SimulatedCluster> cluster_;
  Eigen::MatrixXd computed_gradients_;  // ∇F_j(query), filled on demand without a hint
  std::vector<bool> computed_;
  Eigen::VectorXd message_buffer_;
};

}  // namespace stragglersim::sim

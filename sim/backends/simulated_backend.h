#pragma once
// The simulated-clock backend (README.md (Architecture)): delays from the cluster's event queue,
// and the gradient the master would decode computed for real from the partition gradients it needs,
// each computed once per iteration (in parallel on a pool when given), combined into the heard
// workers' coded messages y_i and then ĝ = Σ_i a_i y_i in worker order, exactly as the real
// backends' masters combine (the same bytes when they hear the same workers, and for every
// thread count). Bit-reproducible. With a collective (the cluster's CollectiveAggregation) each
// rank's term a_i·y_i is its contribution and the schedule's reduction replaces the sum
// (docs/model.md §3 "Aggregation"): the same terms, summed in the schedule's order.

#include <memory>
#include <optional>
#include <vector>

#include "models/objective.h"
#include "sim/backend.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

class SimulatedBackend final : public Backend {
 public:
  /// Illegal: code and objective partition counts that differ. Partition gradients the
  /// iteration needs are computed in parallel on `pool` when given (it must outlive the
  /// backend); the estimate is the same bytes for every thread count. With `minibatch`,
  /// iteration t's partition gradients are stochastic, over the rows of draw t: every worker
  /// holding partition j in iteration t uses the same sample (so a code's decode stays exact for
  /// the sampled gradients), and the caller's full gradients are never used.
  /// Under the anytime rule (StoppingRule::compute_window), worker i's message is the gradient
  /// of the c_i rows it finished in the window (a uniform sample of its partition, drawn as
  /// models::minibatch_seed(seed, t, i); its exact partition gradient when c_i = |P_i|), and
  /// ĝ = (1/Σc) Σ_i Σ_{rows of i} ∇ℓ: the weights c_i·m/(|P_i|·Σc), exactly 1 when every worker
  /// finished (then ĝ is uncoded `all`'s estimate to the bit). It needs the uncoded code with
  /// one partition per worker and no minibatch.
  SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                   Scheme scheme,
                   std::unique_ptr<SimulatedCluster> cluster,
                   models::WorkerPool* pool = nullptr,
                   std::optional<MinibatchOptions> minibatch = std::nullopt,
                   std::uint64_t seed = 1);
  [[nodiscard]] std::string name() const override { return "simulated"; }
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           const Eigen::MatrixXd* partition_gradients) override;
  [[nodiscard]] const SimulatedCluster& cluster() const { return *cluster_; }

 private:
  /// The anytime rule's iteration: counts from the drawn delays, weights, partial gradients.
  void anytime(std::uint64_t iteration,
               double window,
               const IterationTiming& timing,
               const Eigen::VectorXd& query,
               const Eigen::MatrixXd* partition_gradients,
               BackendIteration& out);

  /// The multi-message rule's iteration (sim/multi_message.h): α_j = 1 for every partition
  /// received, ĝ = Σ_j α_j ∇F_j in ascending j.
  void multi_message(std::uint64_t iteration,
                     const IterationTiming& timing,
                     const Eigen::VectorXd& query,
                     const Eigen::MatrixXd* partition_gradients,
                     BackendIteration& out);
  /// With a collective: each rank's time in the all-reduce and the rank that arrived last.
  static void record_collective(const IterationTiming& timing, BackendIteration& out);
  /// ∇F_j(query) (or its minibatch sample) of the partitions in needed_, sorted and made
  /// distinct, into needed_gradients_ with column_ pointing at them.
  void compute_needed(std::uint64_t iteration, const Eigen::VectorXd& query);

  std::shared_ptr<const models::Objective> objective_;
  Scheme scheme_;
  std::unique_ptr<SimulatedCluster> cluster_;
  models::WorkerPool* pool_;
  std::optional<MinibatchOptions> minibatch_;
  std::uint64_t seed_;
  std::vector<Eigen::Index> rows_done_;  // anytime: c_i per worker
  std::vector<int> needed_;              // partitions in the support of a worker with weight ≠ 0
  std::vector<Eigen::Index> column_;     // partition j → its column of needed_gradients_
  Eigen::MatrixXd needed_gradients_;     // ∇F_j(query) of the needed partitions
  Eigen::VectorXd message_buffer_;
  Eigen::MatrixXd collective_buffers_;  // with a collective: one column per rank
};

}  // namespace stragglersim::sim

#pragma once
// Runs that share one objective advance in lock-step (docs/sweeps.md "Lock-step groups"): each
// member runs its own training loop on its own thread, with its own delays, stops, decode and
// optimiser, and hands every pass over the data to the group. A pass waits until every member
// still running has asked for one; then one member computes all of them at once
// (Objective::evaluate_many: the bytes of the data read once for every iterate) and each member
// goes on with exactly the bytes its own evaluate would have given. A member that ends leaves the
// group, and passes stop waiting for it. Results never depend on which member computes a pass,
// on the group's size or on the thread count.

#include <Eigen/Core>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "models/metrics.h"
#include "models/objective.h"
#include "models/worker_pool.h"

namespace stragglersim::sim {

class LockstepGroup {
 public:
  /// Members train on `train` and score on `test` (null: no test set); the passes run on `pool`
  /// (null: on the calling member's thread).
  LockstepGroup(std::shared_ptr<const models::Objective> train,
                std::shared_ptr<const models::Objective> test,
                models::WorkerPool* pool);

  /// One more member: call before its thread starts, so that no pass runs without it.
  void join();
  /// A member that will ask for no more passes (its run ended, or failed): the pending pass
  /// runs once every remaining member has asked.
  void leave();

  /// train.evaluate(x, partition_gradients, pool): f(x) and (when non-null) every ∇F_j(x), the
  /// same bytes, from a pass shared with the other members; with it, every task of `stale`
  /// (train.partition_gradient at an iterate of the member's own, the same bytes), the tasks of
  /// all members on one partition from one walk of its rows. Rethrows an error of the pass.
  double evaluate(const Eigen::VectorXd& x,
                  Eigen::MatrixXd* partition_gradients,
                  const std::vector<models::Objective::PartitionTask>& stale = {});
  /// models::score_test_set(test, x, pool), the same bytes, from a pass over the test set shared
  /// with the other members (scalar-margin losses).
  std::optional<models::TestScores> score(const Eigen::VectorXd& x);

  /// What the group's passes cost, for the sweep's log.
  struct Statistics {
    std::uint64_t passes = 0;       ///< passes over the training set (one per lock-step)
    std::uint64_t test_passes = 0;  ///< passes over the test set
    std::uint64_t requests = 0;     ///< evaluations asked for, every member's
    std::uint64_t test_requests = 0;
    int largest = 0;  ///< most iterates in one pass
    /// The most evaluations one member asked for: the passes of the longest run alone.
    std::uint64_t longest = 0;
    /// Partition gradients at the members' stale iterates (asynchronous rules), computed with
    /// the passes, and the walks of a partition's rows they took (one per partition and pass).
    std::uint64_t stale = 0;
    std::uint64_t stale_walks = 0;
    /// Bytes of data the group's passes read (models::data_bytes_read over each pass: sparse
    /// rows are walked once per group of up to 16 columns).
    std::int64_t bytes = 0;
  };
  [[nodiscard]] Statistics statistics() const;

 private:
  enum class Kind { kEvaluate, kScore };
  struct Request {
    Kind kind = Kind::kEvaluate;
    const Eigen::VectorXd* x = nullptr;
    Eigen::MatrixXd* gradients = nullptr;
    const std::vector<models::Objective::PartitionTask>* stale = nullptr;
    std::thread::id member;
    double loss = 0.0;
    std::optional<models::TestScores> scores;
    std::exception_ptr error;
    bool done = false;
  };

  /// Posts `request` and returns once it is computed (by this thread or another member's).
  void submit(Request& request);
  /// Computes the pending requests with the lock released; `lock` is held on entry and exit.
  void run_pending(std::unique_lock<std::mutex>& lock);
  void compute(const std::vector<Request*>& batch);
  /// The test-set scores the batch asks for, from one pass; how many.
  std::uint64_t score_batch(const std::vector<Request*>& batch);
  void add_statistics(const std::vector<Request*>& evaluations,
                      const std::vector<models::Objective::PartitionTask>& stale,
                      std::uint64_t scores,
                      std::int64_t read);

  std::shared_ptr<const models::Objective> train_;
  std::shared_ptr<const models::Objective> test_;
  models::WorkerPool* pool_;
  mutable std::mutex mutex_;
  std::condition_variable computed_;
  std::vector<Request*> pending_;
  /// Evaluations asked for by each member's thread.
  std::map<std::thread::id, std::uint64_t> asked_;
  int live_ = 0;
  Statistics statistics_;
};

}  // namespace stragglersim::sim

#include "sim/lockstep_group.h"

#include <algorithm>
#include <utility>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"

namespace stragglersim::sim {

LockstepGroup::LockstepGroup(std::shared_ptr<const models::Objective> train,
                             std::shared_ptr<const models::Objective> test,
                             models::WorkerPool* pool)
    : train_(std::move(train)), test_(std::move(test)), pool_(pool) {
  STRAGGLERSIM_ASSERT(train_ != nullptr, "a lock-step group trains on an objective");
}

void LockstepGroup::join() {
  const std::lock_guard lock(mutex_);
  ++live_;
}

void LockstepGroup::leave() {
  std::unique_lock lock(mutex_);
  STRAGGLERSIM_ASSERT(live_ > 0, "a member leaves a group it joined");
  --live_;
  // The members still running may all be waiting for this one: their pass runs now.
  if (!pending_.empty() && std::cmp_equal(pending_.size(), live_)) {
    run_pending(lock);
  }
}

double LockstepGroup::evaluate(const Eigen::VectorXd& x,
                               Eigen::MatrixXd* partition_gradients,
                               const std::vector<models::Objective::PartitionTask>& stale) {
  Request request;
  request.kind = Kind::kEvaluate;
  request.x = &x;
  request.gradients = partition_gradients;
  request.stale = &stale;
  request.member = std::this_thread::get_id();
  submit(request);
  return request.loss;
}

std::optional<models::TestScores> LockstepGroup::score(const Eigen::VectorXd& x) {
  STRAGGLERSIM_ASSERT(test_ != nullptr, "a score needs the group's test set");
  Request request;
  request.kind = Kind::kScore;
  request.x = &x;
  submit(request);
  return request.scores;
}

LockstepGroup::Statistics LockstepGroup::statistics() const {
  const std::lock_guard lock(mutex_);
  return statistics_;
}

void LockstepGroup::submit(Request& request) {
  std::unique_lock lock(mutex_);
  STRAGGLERSIM_ASSERT(std::cmp_less(pending_.size(), live_), "only members ask for passes");
  pending_.push_back(&request);
  if (std::cmp_equal(pending_.size(), live_)) {
    run_pending(lock);
  } else {
    computed_.wait(lock, [&request] { return request.done; });
  }
  if (request.error) {
    std::rethrow_exception(request.error);
  }
}

void LockstepGroup::run_pending(std::unique_lock<std::mutex>& lock) {
  std::vector<Request*> batch = std::move(pending_);
  pending_.clear();
  // Every other member is waiting for this batch, and a member joining now waits for the next:
  // the pass runs without the lock.
  lock.unlock();
  compute(batch);
  lock.lock();
  for (Request* request : batch) {
    request->done = true;
  }
  computed_.notify_all();
}

void LockstepGroup::compute(const std::vector<Request*>& batch) {
  // The evaluations in one pass over the training set, in the order the members asked (the order
  // changes no byte: each column of the pass is its own member's).
  std::vector<const Eigen::VectorXd*> xs;
  std::vector<Eigen::MatrixXd*> gradients;
  std::vector<Request*> evaluations;
  std::vector<models::Objective::PartitionTask> stale;
  for (Request* request : batch) {
    if (request->kind == Kind::kEvaluate) {
      evaluations.push_back(request);
      xs.push_back(request->x);
      gradients.push_back(request->gradients);
      stale.insert(stale.end(), request->stale->begin(), request->stale->end());
    }
  }
  std::uint64_t scores = 0;
  // Every other member waits for this pass, and runs alone do not run beside a group: the
  // process's count over the pass is the pass's.
  const std::int64_t bytes_before = models::data_bytes_read();
  try {
    if (!evaluations.empty()) {
      const std::vector<double> losses = train_->evaluate_many(xs, gradients, pool_);
      for (std::size_t s = 0; s < evaluations.size(); ++s) {
        evaluations[s]->loss = losses[s];
      }
    }
    if (!stale.empty()) {
      train_->partition_gradients_many(stale, pool_);
    }
    scores = score_batch(batch);
  } catch (...) {
    // A pass that fails fails for every member in it.
    for (Request* request : batch) {
      request->error = std::current_exception();
    }
  }
  add_statistics(evaluations, stale, scores, models::data_bytes_read() - bytes_before);
}

std::uint64_t LockstepGroup::score_batch(const std::vector<Request*>& batch) {
  std::vector<const Eigen::VectorXd*> scored;
  std::vector<Request*> scorings;
  for (Request* request : batch) {
    if (request->kind == Kind::kScore) {
      scored.push_back(request->x);
      scorings.push_back(request);
    }
  }
  if (scorings.empty()) {
    return 0;
  }
  auto results = models::score_test_set_many(*test_, scored, pool_);
  for (std::size_t s = 0; s < scorings.size(); ++s) {
    scorings[s]->scores = results[s];
  }
  return scorings.size();
}

void LockstepGroup::add_statistics(const std::vector<Request*>& evaluations,
                                   const std::vector<models::Objective::PartitionTask>& stale,
                                   std::uint64_t scores,
                                   std::int64_t read) {
  std::vector<char> walked(static_cast<std::size_t>(train_->partitions()), 0);
  for (const auto& task : stale) {
    walked[static_cast<std::size_t>(task.partition)] = 1;
  }
  const std::lock_guard lock(mutex_);
  statistics_.bytes += read;
  statistics_.passes += evaluations.empty() ? 0 : 1;
  statistics_.test_passes += scores > 0 ? 1 : 0;
  statistics_.requests += evaluations.size();
  statistics_.stale += stale.size();
  statistics_.stale_walks +=
      static_cast<std::uint64_t>(std::count(walked.begin(), walked.end(), char{1}));
  for (const Request* request : evaluations) {
    statistics_.longest = std::max(statistics_.longest, ++asked_[request->member]);
  }
  statistics_.test_requests += scores;
  statistics_.largest = std::max(statistics_.largest, static_cast<int>(evaluations.size()));
}

}  // namespace stragglersim::sim

#include "sim/backends/threaded_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

#include "models/base/error.h"
#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

Eigen::Index dimension_of(const std::shared_ptr<const models::Objective>& objective) {
  STRAGGLERSIM_ASSERT(objective != nullptr, "threaded backend needs an objective");
  return objective->dimension();
}

}  // namespace

ThreadedBackend::ThreadedBackend(std::shared_ptr<const models::Objective> objective,
                                 Scheme scheme,
                                 std::unique_ptr<DelayModel> delays,
                                 std::uint64_t seed,
                                 ThreadedOptions options)
    : objective_(std::move(objective)),
      scheme_(std::move(scheme)),
      options_(std::move(options)),
      n_(scheme_.code != nullptr ? scheme_.code->workers() : 0),
      master_(scheme_, dimension_of(objective_), std::move(delays), seed, options_) {
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  const auto n = static_cast<std::size_t>(n_);
  progress_.assign(n, 0);
  inbox_.reserve(n);
  threads_.reserve(n);
  try {
    for (int i = 0; i < n_; ++i) {
      threads_.emplace_back([this, i] { worker_loop(i); });
    }
  } catch (...) {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) {
      t.join();
    }
    refuse_thread_shortage(threads_.size());
    throw;
  }
}

/// Called while an exception is handled: a thread the system would not start (EAGAIN) is the
/// resources' limit, not a bug, and is refused (exit status 2) with the count that did start.
void ThreadedBackend::refuse_thread_shortage(std::size_t started) const {
  try {
    throw;
  } catch (const std::system_error& e) {
    throw InputError(fmt::format(
        "threads backend: cannot start a thread per worker ({}); got {} of {} started; expected "
        "at most as many workers as this process may start threads",
        e.code().message(),
        started,
        n_));
  } catch (...) {
    // another exception: the caller rethrows it
  }
}

ThreadedBackend::~ThreadedBackend() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

std::shared_ptr<const ThreadedBackend::Broadcast> ThreadedBackend::next_work(
    int worker, std::uint64_t done, std::unique_lock<std::mutex>& lock) {
  work_cv_.wait(lock, [&] { return stop_ || latest_.load(std::memory_order_relaxed) > done; });
  if (stop_) {
    return nullptr;
  }
  std::shared_ptr<const Broadcast> b = broadcasts_.back();
  if (options_.policy == StragglerPolicy::kFinish) {
    // Every broadcast is worked on in order, as a worker with a message queue would.
    for (const auto& candidate : broadcasts_) {
      if (candidate->iteration > done) {
        b = candidate;
        break;
      }
    }
  }
  progress_[static_cast<std::size_t>(worker)] = b->iteration;
  return b;
}

bool ThreadedBackend::compute(int worker,
                              const Broadcast& b,
                              Eigen::VectorXd& y,
                              Eigen::VectorXd& buffer) const {
  // The computation is real; under cancel and drain it is abandoned between partitions as
  // soon as a newer iteration has been broadcast.
  const std::span<const int> support = scheme_.code->support(worker);
  const std::span<const double> values = scheme_.code->support_values(worker);
  const bool finish = options_.policy == StragglerPolicy::kFinish;
  y = Eigen::VectorXd::Zero(objective_->dimension());
  for (std::size_t s = 0; s < support.size(); ++s) {
    if (!finish && latest_.load(std::memory_order_acquire) != b.iteration) {
      return false;
    }
    objective_->partition_gradient(support[s], b.x, buffer);
    y.noalias() += values[s] * buffer;
  }
  return true;
}

bool ThreadedBackend::superseded(std::uint64_t done, bool finish) const {
  return stop_ || (!finish && latest_.load(std::memory_order_relaxed) != done);
}

bool ThreadedBackend::wait_out_delay(std::unique_lock<std::mutex>& lock,
                                     Clock::time_point target,
                                     std::uint64_t done,
                                     bool finish) {
  // Sleep until just before the target, then yield-spin to it: a sleeping thread wakes tens
  // of µs late, by an amount that differs between threads and would reorder close arrivals.
  work_cv_.wait_until(lock, target - kSpinWindow, [&] { return superseded(done, finish); });
  if (!superseded(done, finish) && Clock::now() < target) {
    lock.unlock();
    while (Clock::now() < target && (finish || latest_.load(std::memory_order_acquire) == done)) {
      std::this_thread::yield();
    }
    lock.lock();
  }
  return !superseded(done, finish);
}

void ThreadedBackend::worker_loop(int worker) {
  tighten_timer_slack();
  const auto w = static_cast<std::size_t>(worker);
  const bool finish = options_.policy == StragglerPolicy::kFinish;
  Eigen::VectorXd buffer(objective_->dimension());
  std::uint64_t done = 0;
  Clock::time_point free_at{};

  std::unique_lock lock(mutex_);
  while (true) {
    const std::shared_ptr<const Broadcast> b = next_work(worker, done, lock);
    if (b == nullptr) {
      return;
    }
    done = b->iteration;
    const WorkerFault* fault = master_.fault_of(worker, done);
    if (fault != nullptr && fault->kind == FaultKind::kCrash) {
      progress_[w] = std::numeric_limits<std::uint64_t>::max();  // needs no more broadcasts
      work_cv_.wait(lock, [&] { return stop_; });
      return;
    }
    lock.unlock();

    Eigen::VectorXd y;
    const bool abandoned = !compute(worker, *b, y, buffer);
    const Clock::time_point computed = Clock::now();
    const double delay = b->delays[w];
    const Clock::time_point start = finish ? std::max(b->start, free_at) : b->start;
    const bool hang =
        (fault != nullptr && fault->kind == FaultKind::kHang) || !std::isfinite(delay);
    const Clock::time_point target =
        hang ? start : start + real_duration(delay * options_.seconds_per_unit);

    lock.lock();
    if (abandoned) {
      continue;
    }
    if (hang) {
      if (finish) {
        progress_[w] = std::numeric_limits<std::uint64_t>::max();
      }
      work_cv_.wait(lock, [&] { return superseded(done, finish); });
      if (stop_) {
        return;
      }
      continue;
    }
    const bool in_time = wait_out_delay(lock, target, done, finish);
    if (stop_) {
      return;
    }
    if (!in_time) {
      continue;  // cancelled while waiting out the delay
    }
    // Delivery = max(compute end, injected time): the next iteration (finish) starts then.
    free_at = std::max(computed, target);
    inbox_.push_back(WorkerMessage{done, worker, Clock::now(), std::move(y)});
    inbox_cv_.notify_one();
  }
}

ThreadedBackend::Clock::time_point ThreadedBackend::broadcast(std::uint64_t iteration,
                                                              const Eigen::VectorXd& x,
                                                              std::span<const double> delays) {
  auto fresh = std::make_shared<Broadcast>();
  fresh->iteration = iteration;
  fresh->x = x;
  fresh->delays.assign(delays.begin(), delays.end());
  {
    const std::lock_guard lock(mutex_);
    fresh->start = Clock::now();
    broadcasts_.push_back(fresh);
    if (options_.policy == StragglerPolicy::kFinish) {
      const std::uint64_t needed = *std::min_element(progress_.begin(), progress_.end());
      while (broadcasts_.size() > 1 && broadcasts_.front()->iteration <= needed) {
        broadcasts_.pop_front();
      }
    } else {
      while (broadcasts_.size() > 1) {
        broadcasts_.pop_front();
      }
    }
    latest_.store(iteration, std::memory_order_release);
  }
  work_cv_.notify_all();
  return fresh->start;
}

void ThreadedBackend::receive(Clock::time_point wake, std::vector<WorkerMessage>& out) {
  std::unique_lock lock(mutex_);
  inbox_cv_.wait_until(lock, wake, [&] { return !inbox_.empty(); });
  if (out.empty()) {
    out.swap(inbox_);  // keeps both buffers' capacity: no allocation per iteration
    return;
  }
  for (WorkerMessage& m : inbox_) {
    out.push_back(std::move(m));
  }
  inbox_.clear();
}

BackendIteration ThreadedBackend::iterate(std::uint64_t iteration,
                                          const Eigen::VectorXd& query,
                                          const Eigen::MatrixXd* /*partition_gradients*/) {
  return master_.iterate(iteration, query, *this);
}

}  // namespace stragglersim::sim

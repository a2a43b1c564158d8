#include "sim/backends/threaded_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double elapsed_seconds(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

class ThreadedBackend::SharedExchange {
 public:
  SharedExchange(const collectives::Schedule& schedule, int ranks)
      : schedule_(schedule),
        slots_(schedule.transfers.size()),
        boxes_(static_cast<std::size_t>(ranks)) {
    for (std::size_t t = 0; t < slots_.size(); ++t) {
      const collectives::Transfer& transfer = schedule.transfers[t];
      slots_[t].payload.resize(static_cast<std::size_t>(transfer.end - transfer.begin));
    }
  }

  /// Writes transfer t's payload of `iteration` and wakes its destination. The write needs no
  /// lock: the destination read the previous iteration's payload before the master's next
  /// broadcast (the class comment in the header).
  void post(std::size_t t, std::uint64_t iteration, std::span<const double> payload) {
    Slot& slot = slots_[t];
    std::copy(payload.begin(), payload.end(), slot.payload.begin());
    Mailbox& box = boxes_[static_cast<std::size_t>(schedule_.transfers[t].destination)];
    {
      const std::lock_guard lock(box.mutex);
      slot.posted = iteration;
    }
    box.cv.notify_one();
  }

  /// Waits for transfer t's payload of `iteration`; false when halted first.
  bool take(std::size_t t, std::uint64_t iteration, std::span<double> out) {
    Slot& slot = slots_[t];
    Mailbox& box = boxes_[static_cast<std::size_t>(schedule_.transfers[t].destination)];
    {
      std::unique_lock lock(box.mutex);
      box.cv.wait(lock, [&] { return slot.posted == iteration || halted_.load(); });
      if (slot.posted != iteration) {
        return false;
      }
    }
    std::copy(slot.payload.begin(), slot.payload.end(), out.begin());
    return true;
  }

  /// Wakes every waiting rank for good (the backend stops).
  void halt() {
    halted_.store(true);
    for (Mailbox& box : boxes_) {
      { const std::lock_guard lock(box.mutex); }
      box.cv.notify_all();
    }
  }

 private:
  struct Slot {
    std::vector<double> payload;
    std::uint64_t posted = 0;  // guarded by the destination's mailbox: the iteration posted
  };
  struct Mailbox {
    std::mutex mutex;
    std::condition_variable cv;
  };
  const collectives::Schedule& schedule_;
  std::vector<Slot> slots_;
  std::deque<Mailbox> boxes_;  // a deque: mutexes do not move
  std::atomic<bool> halted_{false};
};

namespace {

/// One rank's channel of one iteration over the shared exchange.
template <typename Exchange>
class SlotChannel final : public TransferChannel {
 public:
  SlotChannel(Exchange& exchange, std::uint64_t iteration)
      : exchange_(exchange), iteration_(iteration) {}
  void send(std::size_t index, std::span<const double> payload) override {
    exchange_.post(index, iteration_, payload);
  }
  bool receive(std::size_t index, std::span<double> payload) override {
    return exchange_.take(index, iteration_, payload);
  }

 private:
  Exchange& exchange_;
  std::uint64_t iteration_;
};

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
  if (options_.collective) {
    schedule_ = options_.collective->schedule;
    STRAGGLERSIM_ASSERT(schedule_ != nullptr && schedule_->ranks == n_ &&
                            schedule_->elements == objective_->dimension(),
                        "a collective's schedule over the workers and the model's dimension");
    for (int i = 0; i < n_; ++i) {
      programs_.push_back(rank_program(*schedule_, i));
    }
    exchange_ = std::make_unique<SharedExchange>(*schedule_, n_);
  }
  const auto n = static_cast<std::size_t>(n_);
  progress_.assign(n, 0);
  inbox_.reserve(n);
  threads_.reserve(n);
  try {
    for (int i = 0; i < n_; ++i) {
      threads_.emplace_back([this, i] {
        if (options_.collective) {
          collective_loop(i);
        } else {
          worker_loop(i);
        }
      });
    }
  } catch (...) {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    if (exchange_ != nullptr) {
      exchange_->halt();
    }
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
    return;  // another exception: the caller rethrows it
  }
}

ThreadedBackend::~ThreadedBackend() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (exchange_ != nullptr) {
    exchange_->halt();
  }
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
    if (!finish && (latest_.load(std::memory_order_acquire) != b.iteration ||
                    announced_.load(std::memory_order_acquire) == b.iteration)) {
      return false;
    }
    objective_->partition_gradient(support[s], b.x, buffer);
    y.noalias() += values[s] * buffer;
  }
  return true;
}

bool ThreadedBackend::superseded(std::uint64_t done, bool finish) const {
  // A collective's announcement of this iteration supersedes its unfinished work too.
  return stop_ || (!finish && (latest_.load(std::memory_order_relaxed) != done ||
                               announced_.load(std::memory_order_relaxed) == done));
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
    while (Clock::now() < target &&
           (finish || (latest_.load(std::memory_order_acquire) == done &&
                       announced_.load(std::memory_order_acquire) != done))) {
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

void ThreadedBackend::collective_loop(int worker) {
  tighten_timer_slack();
  Eigen::VectorXd buffer(objective_->dimension());
  std::uint64_t done = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    const std::shared_ptr<const Broadcast> b = next_work(worker, done, lock);
    if (b == nullptr || !serve_collective(worker, *b, lock, buffer)) {
      return;
    }
    done = b->iteration;
  }
}

bool ThreadedBackend::compute_and_notify(int worker,
                                         const Broadcast& b,
                                         std::unique_lock<std::mutex>& lock,
                                         Eigen::VectorXd& y,
                                         Eigen::VectorXd& buffer,
                                         Clock::time_point& ready) {
  lock.unlock();
  const bool computed = compute(worker, b, y, buffer);
  const Clock::time_point target =
      b.start +
      real_duration(b.delays[static_cast<std::size_t>(worker)] * options_.seconds_per_unit);
  lock.lock();
  if (!computed || !wait_out_delay(lock, target, b.iteration, /*finish=*/false)) {
    return false;
  }
  ready = Clock::now();
  WorkerMessage notice;
  notice.iteration = b.iteration;
  notice.worker = worker;
  notice.delivered = ready;
  notice.kind = MessageKind::kNotice;
  inbox_.push_back(std::move(notice));
  inbox_cv_.notify_one();
  return true;
}

bool ThreadedBackend::serve_collective(int worker,
                                       const Broadcast& b,
                                       std::unique_lock<std::mutex>& lock,
                                       Eigen::VectorXd& buffer) {
  Eigen::VectorXd y;
  Clock::time_point ready;
  const bool noticed = compute_and_notify(worker, b, lock, y, buffer, ready);
  // Heard or not, every rank joins the collective once the master announced the stop.
  work_cv_.wait(lock,
                [&] { return stop_ || announced_.load(std::memory_order_relaxed) == b.iteration; });
  if (stop_) {
    return false;
  }
  const std::shared_ptr<const Announcement> announcement = announcement_;
  lock.unlock();
  if (!noticed) {
    ready = announcement->at;  // abandoned: it joins at the stop, min(compute end, t*)
  }
  const double a = announcement->weights(worker);
  STRAGGLERSIM_ASSERT(a == 0.0 || noticed, "a worker with a decode weight was heard");
  Eigen::VectorXd v = contribution(a, y, objective_->dimension());
  SlotChannel<SharedExchange> channel(*exchange_, b.iteration);
  std::vector<double> scratch;
  const bool completed =
      run_program(*schedule_, programs_[static_cast<std::size_t>(worker)], v, channel, scratch);
  const Clock::time_point end = Clock::now();
  lock.lock();
  if (!completed || stop_) {
    return false;
  }
  WorkerMessage report;
  report.iteration = b.iteration;
  report.worker = worker;
  report.delivered = end;
  report.kind = MessageKind::kDone;
  report.compute_seconds = noticed ? elapsed_seconds(b.start, ready) : kNaN;
  report.collective_seconds = elapsed_seconds(ready, end);
  if (worker == 0) {
    report.y = std::move(v);
  }
  inbox_.push_back(std::move(report));
  inbox_cv_.notify_one();
  return true;
}

void ThreadedBackend::announce(std::uint64_t iteration, const Eigen::VectorXd& weights) {
  auto fresh = std::make_shared<Announcement>();
  fresh->iteration = iteration;
  fresh->weights = weights;
  {
    const std::lock_guard lock(mutex_);
    fresh->at = Clock::now();
    announcement_ = std::move(fresh);
    announced_.store(iteration, std::memory_order_release);
  }
  work_cv_.notify_all();
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

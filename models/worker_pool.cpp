#include "models/worker_pool.h"

#include <exception>
#include <system_error>

#include "models/base/invariant.h"

namespace stragglersim::models {

WorkerPool::WorkerPool(int threads) {
  STRAGGLERSIM_ASSERT(threads >= 1, "a worker pool needs at least one thread");
  helpers_.reserve(static_cast<std::size_t>(threads - 1));
  // The generation is read here, not when the thread first takes the lock: a run() that
  // started before then would otherwise look already seen, and the helper would sit it out.
  const std::uint64_t seen = generation_.load();
  for (int t = 1; t < threads; ++t) {
    try {
      helpers_.emplace_back([this, seen] { help(seen); });
    } catch (const std::system_error&) {
      // The system lets this process start no more threads (EAGAIN): the pool runs on those
      // it has, and the results are the same bytes for any count.
      break;
    }
  }
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& helper : helpers_) {
    helper.join();
  }
}

template <class Ready>
void WorkerPool::poll(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + kPollLimit;
  while (!ready() && std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 64; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
}

void WorkerPool::work_through() {
  // Called with the lock held; claims tasks one by one and runs each without the lock.
  std::unique_lock lock(mutex_, std::adopt_lock);
  while (next_ < count_) {
    const int i = next_++;
    const std::function<void(int)>& task = *task_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      task(i);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !error_) {
      error_ = failure;
    }
    --unfinished_;
  }
  lock.release();
}

void WorkerPool::help(std::uint64_t seen) {
  std::unique_lock lock(mutex_);
  while (true) {
    const auto woken = [&] { return stop_.load() || generation_.load() != seen; };
    if (!woken()) {
      lock.unlock();
      poll(woken);
      lock.lock();
      wake_.wait(lock, woken);
    }
    if (stop_.load()) {
      return;
    }
    seen = generation_.load();
    ++busy_helpers_;
    lock.release();
    work_through();
    lock = std::unique_lock(mutex_, std::adopt_lock);
    --busy_helpers_;
    if (unfinished_ == 0 && busy_helpers_ == 0) {
      quiet_.store(true);
      done_.notify_all();
    }
  }
}

void WorkerPool::run(int count, const std::function<void(int)>& task) {
  if (count <= 0) {
    return;
  }
  std::unique_lock lock(mutex_);
  STRAGGLERSIM_ASSERT(task_ == nullptr, "WorkerPool::run is not reentrant");
  task_ = &task;
  count_ = count;
  next_ = 0;
  unfinished_ = count;
  quiet_.store(false);
  error_ = nullptr;
  generation_.fetch_add(1);
  if (!helpers_.empty() && count > 1) {
    wake_.notify_all();
  }
  lock.release();
  work_through();
  // Helpers still inside work_through hold a reference to `task`: wait for them to leave too.
  const auto finished = [&] { return unfinished_ == 0 && busy_helpers_ == 0; };
  if (!finished()) {
    mutex_.unlock();
    poll([&] { return quiet_.load(); });
    mutex_.lock();
  }
  lock = std::unique_lock(mutex_, std::adopt_lock);
  done_.wait(lock, finished);
  task_ = nullptr;
  count_ = 0;
  std::exception_ptr failure = error_;
  error_ = nullptr;
  lock.unlock();
  if (failure) {
    std::rethrow_exception(failure);
  }
}

void run_tasks(WorkerPool* pool, int count, const std::function<void(int)>& task) {
  if (pool == nullptr || pool->threads() == 1) {
    for (int i = 0; i < count; ++i) {
      task(i);
    }
    return;
  }
  pool->run(count, task);
}

}  // namespace stragglersim::models

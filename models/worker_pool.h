#pragma once
// A small pool of threads for one run's data-parallel passes (partition gradients, the power
// iteration). Tasks are numbered 0 … count − 1 and each writes only its own output, so the
// caller sums the outputs in task order and the result is the same bytes for every thread
// count. Not to be confused with the "threads" backend (sim/backends/threaded_backend.h), whose
// threads play workers with injected delays.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stragglersim::models {

class WorkerPool {
 public:
  /// `threads` ≥ 1 threads in all, the calling thread included (1: every task runs inline);
  /// fewer when the system refuses to start more (threads() says how many).
  explicit WorkerPool(int threads);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  WorkerPool(WorkerPool&&) = delete;
  WorkerPool& operator=(WorkerPool&&) = delete;
  ~WorkerPool();

  [[nodiscard]] int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  /// Calls task(i) once for every i in [0, count) and returns when all have returned. Tasks
  /// run concurrently on the pool's threads in no fixed order; the first exception a task
  /// throws is rethrown here after every task has finished. One run() at a time.
  void run(int count, const std::function<void(int)>& task);

  /// How long a thread that runs out of work polls before it sleeps: a helper, for the next
  /// run(); the caller, for the helpers' last tasks. A training loop calls run() every few
  /// milliseconds with microseconds of serial work between, and waking a sleeping thread
  /// costs tens of microseconds (more in a virtual machine): polling keeps both threads on
  /// the pass. Past the limit the thread sleeps on a condition variable, so an idle pool
  /// (between runs of a sweep, say) costs no CPU.
  static constexpr std::chrono::microseconds kPollLimit{200};

 private:
  /// A helper's loop; `seen` is the generation at construction, before any run().
  void help(std::uint64_t seen);
  void work_through();
  /// Polls `ready` until it holds or kPollLimit has passed (the caller re-checks under the lock).
  template <class Ready>
  static void poll(Ready ready);

  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;
  int count_ = 0;
  int next_ = 0;
  int unfinished_ = 0;
  int busy_helpers_ = 0;
  // Written under mutex_; atomic so that a polling thread may read them without it.
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> quiet_{true};  ///< unfinished_ == 0 && busy_helpers_ == 0
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

/// Runs task(i) for i in [0, count) on `pool`, or inline in order when `pool` is null.
void run_tasks(WorkerPool* pool, int count, const std::function<void(int)>& task);

}  // namespace stragglersim::models

#pragma once
// The threaded backend (README.md (Architecture) "threads"): one master (the thread that calls
// iterate) and n worker threads that really compute their coded messages y_i = Σ_j B_ij ∇F_j(x)
// with Eigen on their own partitions, then wait out the injected delay T_i (simulated seconds,
// drawn from the run's delay stream in the same order as the simulated clock) scaled by
// `seconds_per_unit`, and deliver (iteration tag, y_i) to the master.
//
// Timing contract, in real seconds from the broadcast b_t of iteration t:
//   delivery_i = max(compute end, start_i + T_i · seconds_per_unit),
//   start_i    = b_t (cancel, drain) or max(b_t, worker i's previous delivery) (finish).
// The delay is waited with an absolute, interruptible wait (condition_variable::wait_until on
// the steady clock), never a plain sleep. The master applies the stopping rule after every
// arrival (and its deadline, scaled by seconds_per_unit), decodes the heard set with the same
// Scheme as the simulated clock and returns ĝ = Σ_{i∈K} a_i y_i. Messages whose tag is not the
// current iteration are late and are dropped, never mixed into a later gradient. That master
// logic is RealMaster (sim/backends/real_master.h), shared with the MPI backend; this class is its
// shared-memory transport and the worker threads.
//
// Straggler policies: cancel, a worker abandons stale work as soon as a newer iteration is
// broadcast (checked between partitions and during the wait); finish, it completes every
// iteration in order and starts the next one late; drain, the master waits for every worker (up
// to `timeout`) before returning, so the next broadcast finds everyone idle.
//
// A SimulatedCluster runs in lock-step with the same seed: it supplies the delays and the
// simulated stop time (BackendIteration::iteration_time), so the real run can be compared with
// what the simulator predicts for the very same delays (`records()`).
//
// Faults: from `from_iteration` on, a crashed worker never answers; a hung worker computes and
// then waits forever (until cancelled or shut down); in the lock-step simulation both have
// T_i = +inf. A slow worker's delay is T_i · factor in the real run and the simulation alike.
// If the rule is not satisfied `timeout` real seconds after a broadcast, iterate throws
// BackendTimeout (a NumericalError). The destructor stops and joins every thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "models/objective.h"
#include "sim/backend.h"
#include "sim/backends/real_master.h"
#include "sim/delays/delay_model.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

class ThreadedBackend final : public Backend, private MasterTransport {
 public:
  /// Starts n = code workers threads. Illegal: partition/worker counts that differ between
  /// objective, code and delays; a fault naming no worker; non-positive options.
  ThreadedBackend(std::shared_ptr<const models::Objective> objective,
                  Scheme scheme,
                  std::unique_ptr<DelayModel> delays,
                  std::uint64_t seed,
                  ThreadedOptions options);
  ~ThreadedBackend() override;
  ThreadedBackend(const ThreadedBackend&) = delete;
  ThreadedBackend& operator=(const ThreadedBackend&) = delete;

  [[nodiscard]] std::string name() const override { return "threads"; }
  /// Ignores `partition_gradients`: the workers compute their own messages.
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           const Eigen::MatrixXd* partition_gradients) override;

  [[nodiscard]] const std::vector<ThreadedIterationRecord>& records() const {
    return master_.records();
  }
  [[nodiscard]] const std::vector<ThreadedIterationRecord>* real_records() const override {
    return &master_.records();
  }
  [[nodiscard]] double seconds_per_unit() const override { return options_.seconds_per_unit; }
  [[nodiscard]] const ThreadedOptions& options() const { return options_; }
  [[nodiscard]] int workers() const { return n_; }

 private:
  using Clock = std::chrono::steady_clock;

  Clock::time_point broadcast(std::uint64_t iteration,
                              const Eigen::VectorXd& x,
                              std::span<const double> delays) override;
  void receive(Clock::time_point wake, std::vector<WorkerMessage>& out) override;

  struct Broadcast {
    std::uint64_t iteration = 0;
    Eigen::VectorXd x;
    Clock::time_point start;
    std::vector<double> delays;  // simulated seconds, per worker
  };

  void worker_loop(int worker);
  /// Under the lock: the backend stops, or (cancel, drain) a newer broadcast than `done` came.
  [[nodiscard]] bool superseded(std::uint64_t done, bool finish) const;
  /// Holds the worker, lock held on entry and exit, until the real time `target` of its
  /// delivery; false when superseded while waiting.
  bool wait_out_delay(std::unique_lock<std::mutex>& lock,
                      Clock::time_point target,
                      std::uint64_t done,
                      bool finish);
  /// y = Σ_j B_ij ∇F_j(b.x) over worker's partitions; false when abandoned (cancel, drain) for a
  /// newer broadcast.
  bool compute(int worker, const Broadcast& b, Eigen::VectorXd& y, Eigen::VectorXd& buffer) const;
  [[nodiscard]] std::shared_ptr<const Broadcast> next_work(int worker,
                                                           std::uint64_t done,
                                                           std::unique_lock<std::mutex>& lock);

  std::shared_ptr<const models::Objective> objective_;
  Scheme scheme_;
  ThreadedOptions options_;
  int n_ = 0;
  RealMaster master_;

  std::mutex mutex_;
  std::condition_variable work_cv_;                          // workers: a new broadcast or shutdown
  std::condition_variable inbox_cv_;                         // master: a message arrived
  std::deque<std::shared_ptr<const Broadcast>> broadcasts_;  // guarded; history under finish
  std::vector<std::uint64_t> progress_;                      // guarded; last iteration taken
  std::vector<WorkerMessage> inbox_;                         // guarded
  bool stop_ = false;                                        // guarded
  std::atomic<std::uint64_t> latest_{0};  // newest broadcast, read lock-free between partitions

  /// Rethrows the exception being handled as InputError when the system refused a thread.
  void refuse_thread_shortage(std::size_t started) const;
  std::vector<std::thread> threads_;
};

}  // namespace stragglersim::sim

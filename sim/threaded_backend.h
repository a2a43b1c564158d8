#pragma once
// The threaded backend (DESIGN.md §3 "threads"): one master (the thread that calls iterate) and
// n worker threads that really compute their coded messages y_i = Σ_j B_ij ∇F_j(x) with Eigen
// on their own partitions, then wait out the injected delay T_i (simulated seconds, drawn from
// the run's delay stream in the same order as the simulated clock) scaled by
// `seconds_per_unit`, and deliver (iteration tag, y_i) to the master.
//
// Timing contract, in real seconds from the broadcast b_t of iteration t:
//   delivery_i = max(compute end, start_i + T_i · seconds_per_unit),
//   start_i    = b_t (cancel, drain) or max(b_t, worker i's previous delivery) (finish).
// The delay is waited with an absolute, interruptible wait (condition_variable::wait_until on
// the steady clock), never a plain sleep. The master applies the stopping rule after every
// arrival (and its deadline, scaled by seconds_per_unit), decodes the heard set with the same
// Scheme as the simulated clock and returns ĝ = Σ_{i∈K} a_i y_i. Messages whose tag is not the
// current iteration are late and are dropped, never mixed into a later gradient.
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
// then waits forever (until cancelled or shut down). In the lock-step simulation both have
// T_i = +inf. If the rule is not satisfied `timeout` real seconds after a broadcast, iterate
// throws BackendTimeout (a NumericalError). The destructor stops and joins every thread.

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
#include "sim/delay_model.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

enum class FaultKind { kCrash, kHang };

/// Worker `worker` crashes or hangs from iteration `from_iteration` (1-based) on.
struct WorkerFault {
  int worker = 0;
  FaultKind kind = FaultKind::kCrash;
  std::uint64_t from_iteration = 1;
};

/// Largest `timeout` (real seconds, one hour): a hung worker must end the run in bounded time.
inline constexpr double kMaxThreadedTimeout = 3600.0;

struct ThreadedOptions {
  /// Real seconds per simulated second. Illegal: ≤ 0.
  double seconds_per_unit = 0.01;
  StragglerPolicy policy = StragglerPolicy::kCancel;
  std::vector<WorkerFault> faults;
  /// Real seconds after a broadcast at which an unsatisfied rule is an error. Illegal: ≤ 0 or
  /// above kMaxThreadedTimeout.
  double timeout = 5.0;
};

/// The stopping rule was not satisfied within the timeout (e.g. uncoded with a crashed worker).
class BackendTimeout : public NumericalError {
 public:
  using NumericalError::NumericalError;
};

/// One iteration as the master saw it, next to what the simulation predicts for the same delays.
struct ThreadedIterationRecord {
  std::uint64_t iteration = 0;
  double real_stop_seconds = 0.0;  ///< real seconds, broadcast to the stop
  double real_seconds = 0.0;       ///< real seconds, broadcast to return (decode, drain included)
  double simulated_stop = 0.0;     ///< simulated seconds, broadcast to the stop
  std::vector<int> heard;          ///< real arrival order
  std::vector<int> simulated_heard;
  bool same_set = false;  ///< heard and simulated_heard hold the same workers
  /// Distance (simulated seconds) from the simulated stop to the nearest other simulated arrival
  /// that could change the heard set if reordered (first_r: only later arrivals; all: +inf):
  /// a disagreement with the simulation is a near-tie when this is below the scheduling jitter.
  double near_tie_gap = 0.0;
  int late_dropped = 0;  ///< messages of earlier iterations dropped during this iteration
};

class ThreadedBackend final : public Backend {
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

  [[nodiscard]] const std::vector<ThreadedIterationRecord>& records() const { return records_; }
  [[nodiscard]] const ThreadedOptions& options() const { return options_; }
  [[nodiscard]] int workers() const { return n_; }

 private:
  using Clock = std::chrono::steady_clock;

  struct Broadcast {
    std::uint64_t iteration = 0;
    Eigen::VectorXd x;
    Clock::time_point start;
    std::vector<double> delays;  // simulated seconds, per worker
  };
  struct Message {
    std::uint64_t iteration = 0;
    int worker = 0;
    Clock::time_point delivered;
    Eigen::VectorXd y;
  };

  void worker_loop(int worker);
  [[nodiscard]] std::shared_ptr<const Broadcast> next_work(int worker,
                                                           std::uint64_t done,
                                                           std::unique_lock<std::mutex>& lock);
  [[nodiscard]] const WorkerFault* fault_of(int worker, std::uint64_t iteration) const;
  [[nodiscard]] double near_tie_gap(const IterationTiming& timing,
                                    std::span<const double> arrivals) const;

  std::shared_ptr<const models::Objective> objective_;
  Scheme scheme_;
  ThreadedOptions options_;
  int n_ = 0;
  std::unique_ptr<SimulatedCluster> cluster_;
  std::vector<double> sim_busy_until_;  // mirrors the cluster's finish bookkeeping
  std::vector<double> sim_arrivals_;

  std::mutex mutex_;
  std::condition_variable work_cv_;                          // workers: a new broadcast or shutdown
  std::condition_variable inbox_cv_;                         // master: a message arrived
  std::deque<std::shared_ptr<const Broadcast>> broadcasts_;  // guarded; history under finish
  std::vector<std::uint64_t> progress_;                      // guarded; last iteration taken
  std::vector<Message> inbox_;                               // guarded
  bool stop_ = false;                                        // guarded
  std::atomic<std::uint64_t> latest_{0};  // newest broadcast, read lock-free between partitions

  std::vector<Message> batch_;  // master only
  std::vector<Eigen::VectorXd> received_;
  std::vector<ThreadedIterationRecord> records_;
  std::vector<std::thread> threads_;
};

}  // namespace stragglersim::sim

#pragma once
// The master of the real backends (threads in one process, MPI ranks across machines): what
// they share, so that they differ only in transport (README.md (Architecture)).
//
// Each iteration t the master draws the n delays T_i from the run's delay stream in the same
// order as the simulated clock (a SimulatedCluster runs in lock-step with the same seed),
// broadcasts (t, x, T) through a MasterTransport, applies the stopping rule after every arrival
// tagged t (a `deadline` is scaled by seconds_per_unit), decodes the heard set with the same
// Scheme as the simulated clock and returns ĝ = Σ_{i∈K} a_i y_i (summed in worker order, never
// arrival order: combine_messages). Messages tagged with another
// iteration are late and are dropped, never mixed into a later gradient. Under drain it then
// waits for every worker (up to `timeout`); if the rule is not satisfied `timeout` real seconds
// after the broadcast, iterate throws BackendTimeout (a NumericalError).
//
// Accounting, in real seconds: real_stop_seconds = broadcast to stop; real_seconds = broadcast
// to return (decode and drained waits included); real_wall_seconds = previous return (first
// iteration: its broadcast) to this return, so that the sum over iterations is the wall clock
// from the first broadcast to the last return, whatever the master did between iterations.
//
// With a collective (ThreadedOptions::collective; docs/backends.md "Collectives") the master is
// a coordinator: the workers send a "compute done" notice without their message, the master
// stops by the rule on the notices, decodes the heard set and announces every worker's decode
// weight a_i (0: not heard; such a worker abandons its work). The workers then run the
// collective's schedule among themselves on v_i = a_i·y_i (zero when a_i = 0), each timing its
// join (its compute end, or the announcement when it abandoned) to its completion, and report
// that they completed it; worker 0's report carries the reduced vector, the estimate. The
// master waits for every report (up to `timeout` after the broadcast): real_stop_seconds is then
// the broadcast to the last report, the real counterpart of the simulated iteration time (the
// last completion).

#include <Eigen/Core>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "models/base/options_check.h"
#include "sim/backend.h"
#include "sim/delays/delay_model.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {

enum class FaultKind { kCrash, kHang, kSlow };

/// Largest slowdown `factor` of a slow worker.
inline constexpr double kMaxSlowFactor = 1.0e6;

/// Worker `worker` crashes, hangs or is slow from iteration `from_iteration` (1-based) on. A slow
/// worker's delay is T_i · factor, in the real run and in the lock-step simulation alike (so its
/// heard sets stay comparable); without injected delays (mpi, inject false) it stretches its
/// measured compute time c to c · factor before it delivers.
struct WorkerFault {
  int worker = 0;
  FaultKind kind = FaultKind::kCrash;
  std::uint64_t from_iteration = 1;
  double factor = 1.0;  ///< kSlow only: the slowdown, in [1, kMaxSlowFactor]
};

/// Largest `timeout` (real seconds, one hour): a hung worker must end the run in bounded time.
inline constexpr double kMaxThreadedTimeout = 3600.0;

/// Options of the real backends' master (threads and MPI).
struct ThreadedOptions {
  /// Real seconds per simulated second. Illegal: ≤ 0.
  double seconds_per_unit = 0.01;
  StragglerPolicy policy = StragglerPolicy::kCancel;
  std::vector<WorkerFault> faults;
  /// Real seconds after a broadcast at which an unsatisfied rule is an error. Illegal: ≤ 0 or
  /// above kMaxThreadedTimeout.
  double timeout = 5.0;
  /// The aggregation when it is a collective (the header comment); nullopt: the parameter
  /// server. With one, the policy must be cancel and there may be no faults (every rank takes
  /// part in the collective; the config layer refuses the rest).
  std::optional<CollectiveAggregation> collective;

  /// The first violated constraint of seconds_per_unit and timeout (the faults are checked
  /// against the workers by their reader and RealMaster).
  [[nodiscard]] Validation validate() const;
};

/// The stopping rule was not satisfied within the timeout (e.g. uncoded with a crashed worker).
class BackendTimeout : public NumericalError {
 public:
  using NumericalError::NumericalError;
};

/// What a worker's message says.
enum class MessageKind {
  kResult,  ///< parameter server: its coded message y_i
  kNotice,  ///< collective: its compute is done (no payload)
  kDone,    ///< collective: it completed the collective (worker 0: y is the reduced vector)
};

/// A worker's message of iteration `iteration`, as the transport delivered it.
struct WorkerMessage {
  std::uint64_t iteration = 0;
  int worker = 0;
  std::chrono::steady_clock::time_point delivered;  ///< when the master could first see it
  Eigen::VectorXd y;
  MessageKind kind = MessageKind::kResult;
  /// kDone: real seconds from the broadcast to the worker's compute end (NaN: abandoned), and
  /// from its join to its completion of the collective.
  double compute_seconds = 0.0;
  double collective_seconds = 0.0;
};

/// How the master reaches its workers (threads: shared memory; MPI: messages).
class MasterTransport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~MasterTransport() = default;
  /// Starts iteration `iteration` at every worker: the query x and the n delays (simulated
  /// seconds; +inf for a faulty worker). Returns the broadcast instant.
  virtual Clock::time_point broadcast(std::uint64_t iteration,
                                      const Eigen::VectorXd& x,
                                      std::span<const double> delays) = 0;
  /// Waits until at least one message arrived or `wake` passed; appends the messages that
  /// arrived, in arrival order, to `out` (any iteration tag: the master filters).
  virtual void receive(Clock::time_point wake, std::vector<WorkerMessage>& out) = 0;
  /// Collectives: the stop of iteration `iteration`, with every worker's decode weight a_i (0:
  /// not heard); the workers then run the collective. Never called without a collective.
  virtual void announce(std::uint64_t iteration, const Eigen::VectorXd& weights) = 0;
};

/// Sets a 1 ns timer slack for the calling thread (Linux): the default 50 µs would add its own
/// jitter to every injected delay.
void tighten_timer_slack();

/// `seconds` as a steady-clock duration, clamped to [0, 10⁶] s (far from overflow).
std::chrono::steady_clock::duration real_duration(double seconds);

/// The last stretch before a delivery target that a worker of either real backend spins
/// (yielding) instead of sleeping.
inline constexpr std::chrono::microseconds kSpinWindow{100};

class RealMaster {
 public:
  using Clock = std::chrono::steady_clock;
  /// How often a waiting master looks for a recorded signal.
  static constexpr std::chrono::milliseconds kStopPoll{50};
  /// Illegal: worker counts that differ between code and delays; a fault naming no worker;
  /// a slow factor outside [1, kMaxSlowFactor]; non-positive options; a null code, rule or delay
  /// model.
  RealMaster(Scheme scheme,
             Eigen::Index dimension,
             std::unique_ptr<DelayModel> delays,
             std::uint64_t seed,
             ThreadedOptions options);

  /// Runs iteration `iteration` (increasing) at `query` through `transport`. While it waits for
  /// workers it looks at models::stop_signal() every kStopPoll and throws models::StopRequested
  /// when SIGINT or SIGTERM was recorded: a hung worker cannot hold a signalled run until its
  /// timeout (the iteration is abandoned; the rows before it stand).
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           MasterTransport& transport);

  [[nodiscard]] const std::vector<ThreadedIterationRecord>& records() const { return records_; }
  [[nodiscard]] const ThreadedOptions& options() const { return options_; }
  [[nodiscard]] int workers() const { return n_; }
  /// The fault of `worker` at `iteration`, or null.
  [[nodiscard]] const WorkerFault* fault_of(int worker, std::uint64_t iteration) const;

 private:
  /// The state of the iteration in flight.
  struct Round {
    std::uint64_t iteration = 0;
    Clock::time_point start;
    Clock::time_point timeout_at;
    std::optional<Clock::time_point> deadline_at;
    std::optional<int> needed;  // the adaptive r of this iteration (the simulated twin's)
    ThreadedIterationRecord record;
    bool stopped = false;
    int answered = 0;  // messages of this iteration, before or after the stop
    Clock::time_point stop_at;
  };

  void collect(Round& round, MasterTransport& transport);
  void accept(Round& round, WorkerMessage& m);
  [[noreturn]] void fail_timeout(const Round& round) const;
  void drain(Round& round, MasterTransport& transport);
  [[nodiscard]] BackendIteration decode(const Round& round, const IterationTiming& timing);
  /// Collectives: announces the decode weights and waits for every worker's completion.
  [[nodiscard]] BackendIteration run_collective(Round& round,
                                                const IterationTiming& timing,
                                                MasterTransport& transport);
  void await_completions(Round& round, MasterTransport& transport);
  [[noreturn]] void fail_collective_timeout(const Round& round) const;
  void simulate_arrivals(const IterationTiming& timing);
  void update_finish_bookkeeping(const IterationTiming& timing);
  [[nodiscard]] double near_tie_gap(const IterationTiming& timing,
                                    std::span<const double> arrivals) const;

  Scheme scheme_;
  Eigen::Index dimension_ = 0;
  ThreadedOptions options_;
  int n_ = 0;
  std::unique_ptr<SimulatedCluster> cluster_;
  std::vector<double> sim_busy_until_;  // mirrors the cluster's finish bookkeeping
  std::vector<double> sim_arrivals_;
  std::uint64_t last_iteration_ = 0;
  std::optional<Clock::time_point> last_return_;

  std::vector<WorkerMessage> batch_;
  std::vector<Eigen::VectorXd> received_;
  std::vector<char> completed_;  // collectives: the workers that reported completion
  Eigen::VectorXd reduced_;      // collectives: worker 0's reduced vector
  std::vector<ThreadedIterationRecord> records_;
};

}  // namespace stragglersim::sim

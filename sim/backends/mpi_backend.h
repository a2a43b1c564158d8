#pragma once
// The MPI backend (README "MPI backend"): the master (rank 0, this class) and n workers (ranks
// 1..n, run_mpi_worker) of `mpirun -np n+1 stragglersim run`. The master logic (delays from the
// simulated clock's stream, stopping, decoding, accounting, policies, faults, timeout) is
// RealMaster, shared with the threaded backend; this file is only the message transport.
//
// Messages (MPI_DOUBLE, point-to-point on MPI_COMM_WORLD, never collectives, so that a busy or
// hung rank blocks nobody):
//   work   (tag kWork, 0 → i): [t, x (d values), T_1..T_n]            one per worker per iteration
//   stop   (tag kStop, 0 → i): [0]                                     once, at shutdown
//   result (tag kResult, i → 0): [t, compute seconds, send stamp, y_i (d values)]
//   bye    (tag kBye, i → 0): [0]                                      the worker's last message
// Every message carries its iteration t (the tag the master matches): a result of another
// iteration is received and discarded. The master keeps exactly one nonblocking receive posted
// per worker and polls them (MPI_Testsome), so nothing queues up unreceived; a worker keeps one
// nonblocking receive posted and polls it between partitions and while it waits out its delay,
// so under cancel and drain it abandons stale work as soon as a newer iteration arrives (and
// keeps only the newest of several queued broadcasts), under finish it works through them in
// order.
//
// Worker timing, in real seconds from its receipt r_t of broadcast t (its own clock, so that
// hosts need no synchronised clocks): start = r_t (cancel, drain) or max(r_t, previous delivery)
// (finish); inject: delivery = max(compute end, start + T_i · seconds_per_unit); no inject:
// delivery = compute end, and the compute seconds of every result (late ones included) are
// recorded (`worker_times()`); a slow worker (fault kind slow) then stretches its compute time
// c to c · factor (with inject, the master already scaled its T_i). A batch of results seen in
// one poll is ordered by the workers' send stamps (steady clock: exact on one host).
//
// Collectives (ThreadedOptions::collective; docs/mpi_backend.md "Collectives"): a worker sends a
// notice [t, compute seconds, send stamp] (tag kNotice) instead of its result; the master stops
// by the rule and sends every worker the announcement [t, a_1..a_n] (tag kAnnounce); a worker
// still busy then abandons its work and joins with zero. The workers run the schedule among
// themselves, point-to-point between worker ranks (tag kTransfer: [t, transfer index, payload]),
// or, with `allreduce` mpi, call MPI_Iallreduce on a communicator of the worker ranks; then each
// reports [t, compute seconds, collective seconds, send stamp] (tag kDone), worker 0 followed by
// the reduced vector.
//
// Shutdown (destructor, also after a timeout or an exception): stop to every worker, then every
// result is received and discarded until each worker's bye; a worker that does not say bye
// within max(timeout, 10) s is a bug or a dead host, and only then MPI_Abort ends the job.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "models/objective.h"
#include "sim/backend.h"
#include "sim/backends/real_master.h"
#include "sim/delays/delay_model.h"
#include "sim/scheme.h"

namespace stragglersim::sim {

struct MpiOptions {
  /// seconds_per_unit, policy, faults, timeout: as for the threaded backend.
  ThreadedOptions master;
  /// true: workers wait out T_i · seconds_per_unit (comparable with the simulated clock);
  /// false: no injected delay, the machine's own stragglers (compute times are recorded).
  bool inject = true;
  /// With a collective: true, the workers reduce with MPI_Allreduce (MPI's own order, so not
  /// the simulated backend's bytes) instead of executing the schedule.
  bool mpi_allreduce = false;
};

class MpiBackend final : public Backend, private MasterTransport {
 public:
  /// Runs on rank 0 of MPI_COMM_WORLD, with workers on ranks 1..n (n = code workers), each in
  /// run_mpi_worker. Illegal: MPI not compiled in or not initialised; a world size other than
  /// n + 1; the counts or options RealMaster refuses.
  MpiBackend(Scheme scheme,
             Eigen::Index dimension,
             std::unique_ptr<DelayModel> delays,
             std::uint64_t seed,
             MpiOptions options);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  [[nodiscard]] std::string name() const override { return "mpi"; }
  /// Ignores `partition_gradients`: the workers compute their own messages.
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           const Eigen::MatrixXd* partition_gradients) override;

  [[nodiscard]] const std::vector<ThreadedIterationRecord>& records() const {
    return master_.records();
  }
  [[nodiscard]] int workers() const { return n_; }
  [[nodiscard]] const std::vector<ThreadedIterationRecord>* real_records() const override {
    return &master_.records();
  }
  [[nodiscard]] double seconds_per_unit() const override {
    return options_.master.seconds_per_unit;
  }
  /// inject false: shutdown(), then worker_times(); nullopt with inject (nothing measured).
  std::optional<std::vector<WorkerTime>> finish() override {
    if (options_.inject) {
      return std::nullopt;
    }
    shutdown();
    return worker_times_;
  }
  /// Compute times of every result received (inject false; empty with inject), in arrival order.
  [[nodiscard]] const std::vector<WorkerTime>& worker_times() const { return worker_times_; }
  /// Stops every worker and waits for their byes, up to max(timeout, 10 s) (idempotent; the
  /// destructor calls it). Ranks that never answer (a stopped or lost process) are counted, and
  /// the destructor then aborts the MPI job with status 3: run_output keeps the backend alive
  /// until the run's summary.json and heard.csv are written, so the abort loses no file.
  void shutdown();

 private:
  struct Impl;
  Clock::time_point broadcast(std::uint64_t iteration,
                              const Eigen::VectorXd& x,
                              std::span<const double> delays) override;
  void receive(Clock::time_point wake, std::vector<WorkerMessage>& out) override;
  void announce(std::uint64_t iteration, const Eigen::VectorXd& weights) override;
  /// Completes the receives that are ready; returns how many results it appended to `out`.
  std::size_t poll(std::vector<WorkerMessage>* out);

  MpiOptions options_;
  Eigen::Index dimension_ = 0;
  int n_ = 0;
  RealMaster master_;
  std::unique_ptr<Impl> impl_;
  std::vector<WorkerTime> worker_times_;
  bool shut_down_ = false;
  int unresponsive_ = 0;  ///< workers whose bye never came (shutdown gave up on them)
};

/// The loop of worker `worker` (0-based; MPI rank worker + 1): computes y_i = Σ_j B_ij ∇F_j(x)
/// on its own partitions with the same code paths as the other backends, waits out its delay
/// (inject) and sends it, until the master's stop. Illegal: MPI not compiled in.
void run_mpi_worker(const models::Objective& objective,
                    const Scheme& scheme,
                    const MpiOptions& options,
                    int worker);

}  // namespace stragglersim::sim

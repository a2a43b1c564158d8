#pragma once
// The simulated clock of an asynchronous run (docs/model.md §4 "Asynchronous updates"): the
// K-batch-sync, K-async and K-batch-async disciplines of Dutta et al. (AISTATS 2018) on the
// event queue. Each worker computes one gradient at a time; its c-th computation (c = 1, 2, …)
// takes the delay of worker i in round c of the delay model (DelayModel::sample(c, …), rounds
// drawn in order from the run's delay stream), so the delays are those a synchronous run draws
// in its iterations 1, 2, …, whatever the discipline. The master applies an update after every
// K gradients; a gradient computed at the parameters of update v and used in update u has
// staleness u − 1 − v ≥ 0 (the updates between the parameters it saw and the ones it changes).
// A gradient reaches the master through the network (sim/network.h) when the run has one: a
// message leaves when its computation ends, takes L + S/B over parallel links, and over a serial
// link waits for the messages that left before it (one FIFO queue over the whole run: with a
// continuous stream of pushes the link is never reset). A free network delivers at once.
//
// The time-optimal methods (UpdateMode::kRennala … kRescaledAsync, sim/stopping_rule.h) run on
// the same clock: a worker that delivers is sent the master's current x and starts again (the
// batch methods discard a gradient computed at an older x on arrival, Ringmaster one whose delay
// reached R); an abandoned computation (MindFlayer's cut-off, stop_stale) is forgotten and the
// worker starts its next computation at once, with the next round's draw. Arrivals at the
// same instant are received together: a batch method sends x to the workers that delivered only
// after the last arrival of that instant, so that when one of them completes the batch every one
// of them starts at the new x (with equal compute times, Rennala with B = n is synchronous SGD). A
// time-varying delay model (DelayModel::time_varying(), the universal computation model) gives each
// computation the duration that starts at the clock's time instead of a round's draw.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/event_queue.h"
#include "sim/network.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

/// One gradient the master used.
struct UsedGradient {
  int worker = 0;
  std::uint64_t version = 0;      ///< computed at x_version (0 = x₀, v = after update v)
  std::uint64_t computation = 0;  ///< the worker's computation count c (1-based)
  std::uint64_t staleness = 0;    ///< updates between x_version and this update's parameters
  double arrival = 0.0;           ///< simulated s
};

/// One update, in simulated seconds.
struct AsynchronousUpdate {
  std::uint64_t update = 0;        ///< 1-based
  double time = 0.0;               ///< the clock at the update (the K-th gradient's arrival)
  double update_time = 0.0;        ///< time since the previous update (or the start)
  std::vector<UsedGradient> used;  ///< the K gradients, in arrival order
  std::uint64_t discarded = 0;     ///< gradients that arrived since the last update, unused
  std::uint64_t abandoned = 0;     ///< computations abandoned since the last update
};

class AsynchronousCluster {
 public:
  /// Illegal: a null model, k outside 1 … workers, network options failing validate().
  AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                      UpdateMode mode,
                      int k,
                      std::uint64_t seed,
                      const NetworkOptions& network = {});
  /// Any update rule's shape. Illegal: a null model, a shape UpdateRule::Options rejects for
  /// the model's n, network options failing validate().
  AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                      UpdateShape shape,
                      std::uint64_t seed,
                      const NetworkOptions& network = {});

  /// Runs the clock to the next update and returns it (valid until the next call).
  const AsynchronousUpdate& next_update();

  [[nodiscard]] int workers() const { return delays_->workers(); }
  [[nodiscard]] UpdateMode mode() const { return shape_.mode; }
  [[nodiscard]] int k() const { return shape_.k; }
  [[nodiscard]] const UpdateShape& shape() const { return shape_; }
  /// Rescaled ASGD's step factor of `worker`, τ_i/τ_H (τ_i the model's mean compute time of the
  /// worker, τ_H the harmonic mean over workers); 1 for every other mode.
  [[nodiscard]] double step_factor(int worker) const;
  /// Updates applied so far (the master's parameter version).
  [[nodiscard]] std::uint64_t version() const { return version_; }
  /// The oldest parameter version a busy worker still computes at (version() when none): the
  /// parameters older than it are never needed again.
  [[nodiscard]] std::uint64_t oldest_version_in_use() const;
  [[nodiscard]] const DelayModel& delay_model() const { return *delays_; }

 private:
  void start(int worker, double now);
  double delay_of(int worker, std::uint64_t computation);
  /// Whether the event of `worker`'s computation `computation` is for an abandoned computation.
  [[nodiscard]] bool abandoned(int worker, std::uint64_t computation) const;
  /// An arrival the mode uses or discards; the worker restarts where the mode says.
  void receive(const UsedGradient& gradient, double now);
  /// Whether the gradients in pending_ make an update.
  [[nodiscard]] bool update_ready() const;
  /// After the update: who starts at the new x.
  void restart_after_update(double now);
  /// The arrival at the master of a message that leaves at `end` (the link's FIFO order).
  double deliver(double end);

  std::unique_ptr<DelayModel> delays_;
  UpdateShape shape_;
  RandomEngine rng_;
  NetworkOptions network_;
  bool free_network_ = true;
  double link_free_ = 0.0;  // serial link: when it finishes the last message that entered it
  EventQueue queue_;
  std::vector<std::uint64_t> computations_;  // per worker: computations started
  std::vector<std::uint64_t> worker_version_;
  std::vector<char> busy_;
  std::deque<std::vector<double>> rounds_;  // rounds first_round_, first_round_ + 1, …
  std::deque<int> round_starts_;            // workers that have started each round's computation
  std::uint64_t first_round_ = 1;
  std::vector<UsedGradient> pending_;
  std::vector<int> batch_counts_;  // Malenia: b_i, worker i's gradients in pending_
  // The batch methods: workers that delivered at the current instant, to be sent the master's x
  // once every arrival of that instant is in (the new x if one of them completes the batch).
  std::vector<int> deferred_;
  std::vector<double> step_factor_;  // Rescaled ASGD: τ_i/τ_H
  AsynchronousUpdate current_;
  std::uint64_t version_ = 0;
  double last_update_ = 0.0;
  bool started_ = false;
};

}  // namespace stragglersim::sim

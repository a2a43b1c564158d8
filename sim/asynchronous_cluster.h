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
};

class AsynchronousCluster {
 public:
  /// Illegal: a null model, k outside 1 … workers, network options failing validate().
  AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                      UpdateMode mode,
                      int k,
                      std::uint64_t seed,
                      const NetworkOptions& network = {});

  /// Runs the clock to the next update and returns it (valid until the next call).
  const AsynchronousUpdate& next_update();

  [[nodiscard]] int workers() const { return delays_->workers(); }
  [[nodiscard]] UpdateMode mode() const { return mode_; }
  [[nodiscard]] int k() const { return k_; }
  /// Updates applied so far (the master's parameter version).
  [[nodiscard]] std::uint64_t version() const { return version_; }
  /// The oldest parameter version a busy worker still computes at (version() when none): the
  /// parameters older than it are never needed again.
  [[nodiscard]] std::uint64_t oldest_version_in_use() const;
  [[nodiscard]] const DelayModel& delay_model() const { return *delays_; }

 private:
  void start(int worker, double now);
  double delay_of(int worker, std::uint64_t computation);
  /// The arrival at the master of a message that leaves at `end` (the link's FIFO order).
  double deliver(double end);

  std::unique_ptr<DelayModel> delays_;
  UpdateMode mode_;
  int k_;
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
  AsynchronousUpdate current_;
  std::uint64_t version_ = 0;
  double last_update_ = 0.0;
  bool started_ = false;
};

}  // namespace stragglersim::sim

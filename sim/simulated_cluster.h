#pragma once
// The simulated clock of one run (README.md (Architecture)): each iteration draws every worker's
// delay from the run's delay stream (in worker order), schedules the arrivals on the event queue
// and lets the stopping rule decide when the master stops waiting. What stragglers then do is the
// straggler policy:
//   cancel  they abandon the work at once; every worker starts the next iteration on time;
//   finish  they finish the stale work and start the next iteration when done;
//   drain   the master waits for everyone before the next broadcast but does not count that
//           time (the paper's reference implementation): `time` excludes it, `wall_time` not.
// A worker's message reaches the master through the network (sim/network.h): arrival = the
// network's delivery of the compute end (start + T_i); a free network delivers at once.
//
// With a collective (CollectiveAggregation, docs/model.md §3 "Aggregation") the rule decides the
// stop t* from the compute ends as above (no network); then every rank joins the all-reduce at
// ready_i = min(compute end_i, t*) (a rank not heard by t* abandons its computation and joins
// with a zero contribution), and the iteration lasts until the last rank completes:
// max_i completion_i (collectives::complete_times). Every rank starts the next iteration then.
//
// With a regrouping code (sim/regrouping.h) every per-worker quantity of an iteration (delays,
// arrivals, heard) is indexed by code position: position p is played by worker worker_at[p], and
// takes that worker's delay (drawn in worker order, as always) and its leftover work under
// finish. Without one, positions are workers.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sim/collectives/collective.h"
#include "sim/delays/delay_model.h"
#include "sim/event_queue.h"
#include "sim/network.h"
#include "sim/regrouping.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

enum class StragglerPolicy { kCancel, kFinish, kDrain };

/// A collective in place of the parameter server: the algorithm and its links, its schedule over
/// the run's ranks, and the bytes of one element of the reduced vector (8 with data; a delay-only
/// run's message size over the schedule's elements).
struct CollectiveAggregation {
  collectives::CollectiveOptions options;
  std::shared_ptr<const collectives::Schedule> schedule;
  double bytes_per_element = 0.0;
};

/// What one iteration looked like, in simulated seconds.
struct IterationTiming {
  std::uint64_t iteration = 0;   ///< 1-based
  double broadcast = 0.0;        ///< counted clock at the broadcast
  double iteration_time = 0.0;   ///< counted time from broadcast to the stop
  double wall_time = 0.0;        ///< real time until the next broadcast can happen (drain waits)
  std::vector<int> heard;        ///< workers heard, in arrival order
  std::vector<double> delays;    ///< each worker's drawn delay T_i
  std::vector<double> arrivals;  ///< when each worker's message reaches the master (from broadcast)
  /// The deadline this iteration stopped at or before (seconds after the broadcast): the rule's
  /// fixed one, the adaptive deadline's current one; nullopt when the master waited for the rule.
  std::optional<double> deadline;
  /// The arrivals this iteration waited for under the adaptive r (the tracker's r before the
  /// iteration); nullopt for every other rule.
  std::optional<int> needed;
  /// Under a regrouping code, the worker at each code position this iteration (the indices
  /// above are positions); empty otherwise (positions are workers).
  std::vector<int> worker_at;
  /// Multi-message (StoppingRule::partition_orders): the distinct partitions received by the
  /// stop, in arrival order (`heard` then lists the workers with at least one message in, in
  /// the order of their first, and `arrivals` each worker's last message); empty otherwise.
  std::vector<int> received;
  /// Multi-message: the position whose message delivered each partition of `received`.
  std::vector<int> received_from;
  /// With a collective: each rank's ready time min(compute end, stop) and its completion of the
  /// all-reduce (seconds after the broadcast; iteration_time is the largest completion); empty
  /// otherwise.
  std::vector<double> ready;
  std::vector<double> completion;
};

class SimulatedCluster {
 public:
  /// Illegal: null model or rule; a regrouping whose positions are not the delay's workers; a
  /// collective with a network that is not free, a policy other than cancel, or a schedule not
  /// over the delay's workers.
  SimulatedCluster(std::unique_ptr<DelayModel> delays,
                   std::shared_ptr<const StoppingRule> rule,
                   StragglerPolicy policy,
                   std::uint64_t seed,
                   const NetworkOptions& network = {},
                   const std::optional<RegroupOptions>& regroup = std::nullopt,
                   std::optional<CollectiveAggregation> collective = std::nullopt);

  /// Runs the next iteration on the event queue and returns its timing (valid until the next call).
  const IterationTiming& next_iteration();

  [[nodiscard]] int workers() const { return delays_->workers(); }
  /// Counted simulated time so far (sum of iteration times).
  [[nodiscard]] double time() const { return time_; }
  /// Real simulated time so far (includes drained waits).
  [[nodiscard]] double wall_time() const { return wall_; }
  [[nodiscard]] const DelayModel& delay_model() const { return *delays_; }
  [[nodiscard]] const StoppingRule& rule() const { return *rule_; }
  [[nodiscard]] StragglerPolicy policy() const { return policy_; }
  /// The collective the ranks aggregate by; null for the parameter server.
  [[nodiscard]] const CollectiveAggregation* collective() const {
    return collective_ ? &*collective_ : nullptr;
  }

 private:
  /// Whether the master stops after `heard`: the adaptive r's count, or the rule.
  [[nodiscard]] bool stops(std::span<const int> heard) const;
  /// Under `finish`: when each worker not heard ends its stale work (the queue's leftovers).
  void record_busy_workers();
  /// The worker playing code position p (p itself without a regrouping).
  [[nodiscard]] std::size_t worker_of(int position) const;
  /// Draws the iteration's delays (in worker order) into current_.delays, by position.
  void draw_delays();
  /// The delay model's draws of this iteration into `out` (one per worker), at each
  /// computation's start when the model is time-varying.
  void sample_workers(std::span<double> out);
  /// After the stop: the leftover work under finish and the adaptive rules' and the regrouping's
  /// state.
  void observe_iteration();
  /// Worker i's start (seconds after the broadcast): late under finish while still busy.
  [[nodiscard]] double start_of(int position) const;
  /// Schedules one message per (worker, partition) of a multi-message rule (and the deadline),
  /// sets each worker's last arrival; returns the number of partitions some worker holds.
  std::size_t schedule_messages(const std::vector<std::vector<int>>& orders);
  /// schedule_messages, then runs the queue until every held partition is in or the deadline;
  /// returns the stop.
  double multi_message_stop(const std::vector<std::vector<int>>& orders);
  /// With a collective: every rank's ready time and completion after the stop; returns the last
  /// completion.
  double all_reduce(double stop);
  /// After the stop: observe_iteration, the iteration's times and the clocks.
  const IterationTiming& finish_iteration(double stop, double last_arrival);

  std::unique_ptr<DelayModel> delays_;
  std::shared_ptr<const StoppingRule> rule_;
  StragglerPolicy policy_;
  RandomEngine rng_;
  EventQueue queue_;
  Network network_;
  IterationTiming current_;
  std::optional<DeadlineTracker> tracker_;      // the adaptive deadline's state
  std::optional<ArrivalCountTracker> counter_;  // the adaptive r's state
  std::optional<Regrouper> regrouper_;          // dynamic clustering's state
  std::optional<CollectiveAggregation> collective_;
  std::vector<double> drawn_;  // the delays by worker (regrouping only)
  std::vector<double> compute_end_;
  std::vector<double> message_end_;     // multi-message: each message's compute end, then arrival
  std::vector<int> message_worker_;     // multi-message: the position that sent each message
  std::vector<int> message_partition_;  // multi-message: the partition each message carries
  std::vector<char> covered_;           // multi-message: partitions received this iteration
  std::vector<char> seen_;              // multi-message: positions heard this iteration
  std::vector<double> busy_until_;      // per worker, relative to the counted clock (finish policy)
  double time_ = 0.0;
  double wall_ = 0.0;
};

}  // namespace stragglersim::sim

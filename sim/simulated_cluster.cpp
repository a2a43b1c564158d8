#include "sim/simulated_cluster.h"

#include <algorithm>
#include <limits>

#include "models/base/invariant.h"

namespace stragglersim::sim {

SimulatedCluster::SimulatedCluster(std::unique_ptr<DelayModel> delays,
                                   std::shared_ptr<const StoppingRule> rule,
                                   StragglerPolicy policy,
                                   std::uint64_t seed,
                                   const NetworkOptions& network,
                                   const std::optional<RegroupOptions>& regroup,
                                   std::optional<CollectiveAggregation> collective)
    : delays_(std::move(delays)),
      rule_(std::move(rule)),
      policy_(policy),
      rng_(make_engine(seed, Stream::kDelays)),
      network_(network),
      collective_(std::move(collective)) {
  STRAGGLERSIM_ASSERT(delays_ != nullptr && rule_ != nullptr, "cluster needs delays and a rule");
  const auto n = static_cast<std::size_t>(delays_->workers());
  if (collective_) {
    STRAGGLERSIM_ASSERT(collective_->schedule != nullptr &&
                            collective_->schedule->ranks == delays_->workers() &&
                            network.is_free() && policy_ == StragglerPolicy::kCancel,
                        "a collective needs a schedule over the workers, no network and cancel");
    current_.ready.resize(n);
    current_.completion.resize(n);
  }
  current_.delays.resize(n);
  current_.arrivals.resize(n);
  compute_end_.resize(n);
  current_.heard.reserve(n);
  busy_until_.assign(n, 0.0);
  queue_.reserve(n + 1);
  if (const auto adaptive = rule_->adaptive_deadline()) {
    tracker_.emplace(*adaptive);
  }
  if (const auto adaptive = rule_->adaptive_r()) {
    counter_.emplace(*adaptive);
  }
  if (regroup) {
    STRAGGLERSIM_ASSERT(regroup->groups.size() == n, "one group per worker of the delay model");
    regrouper_.emplace(*regroup);
    drawn_.resize(n);
  }
}

std::size_t SimulatedCluster::worker_of(int position) const {
  return static_cast<std::size_t>(
      regrouper_ ? regrouper_->worker_at()[static_cast<std::size_t>(position)] : position);
}

void SimulatedCluster::sample_workers(std::span<double> out) {
  if (!delays_->time_varying()) {
    delays_->sample(current_.iteration, rng_, out);
    return;
  }
  // A time-varying model (the universal computation model) needs when each computation starts:
  // the broadcast, on the clock the workers live by (wall_: under drain the next broadcast waits
  // for every worker, time_ leaving that wait out), or, under finish, when a worker still busy
  // with the last iteration's computation is free.
  if (policy_ != StragglerPolicy::kFinish) {
    delays_->sample_at(current_.iteration, wall_, rng_, out);
    return;
  }
  for (std::size_t w = 0; w < out.size(); ++w) {
    out[w] = delays_->duration_at(static_cast<int>(w), std::max(wall_, busy_until_[w]), rng_);
  }
}

void SimulatedCluster::draw_delays() {
  if (!regrouper_) {
    sample_workers(current_.delays);
    return;
  }
  sample_workers(drawn_);
  const std::span<const int> at = regrouper_->worker_at();
  current_.worker_at.assign(at.begin(), at.end());
  for (std::size_t p = 0; p < drawn_.size(); ++p) {
    current_.delays[p] = drawn_[static_cast<std::size_t>(at[p])];
  }
}

void SimulatedCluster::record_busy_workers() {
  // Workers not heard are still busy until their compute ends (their stale message is
  // dropped); their arrivals are the events left in the queue.
  std::fill(busy_until_.begin(), busy_until_.end(), 0.0);
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    int position = -1;
    if (const auto* a = std::get_if<ArrivalEvent>(&e.payload)) {
      position = a->worker;
    } else if (const auto* m = std::get_if<MessageEvent>(&e.payload)) {
      position = message_worker_[static_cast<std::size_t>(m->message)];
    }
    if (position >= 0) {
      busy_until_[worker_of(position)] = time_ + compute_end_[static_cast<std::size_t>(position)];
    }
  }
}

bool SimulatedCluster::stops(std::span<const int> heard) const {
  return current_.needed ? heard.size() >= static_cast<std::size_t>(*current_.needed)
                         : rule_->stop_after(heard);
}

void SimulatedCluster::observe_iteration() {
  if (policy_ == StragglerPolicy::kFinish) {
    record_busy_workers();
  }
  if (tracker_) {
    tracker_->observe(current_.heard, current_.arrivals);
  }
  if (counter_) {
    counter_->observe(current_.heard, current_.arrivals);
  }
  if (regrouper_) {
    regrouper_->observe(current_.heard);
  }
}

double SimulatedCluster::start_of(int position) const {
  return policy_ == StragglerPolicy::kFinish
             ? std::max(0.0, busy_until_[worker_of(position)] - time_)
             : 0.0;
}

std::size_t SimulatedCluster::schedule_messages(const std::vector<std::vector<int>>& orders) {
  const int n = workers();
  message_end_.clear();
  message_worker_.clear();
  message_partition_.clear();
  int partitions = 0;
  for (int i = 0; i < n; ++i) {
    const auto w = static_cast<std::size_t>(i);
    const std::vector<int>& order = orders[w];
    const double start = start_of(i);
    const double whole = current_.delays[w];
    const auto s = static_cast<double>(order.size());
    for (std::size_t l = 0; l < order.size(); ++l) {
      // A uniform pace: the ℓ-th of s partitions at start + T·ℓ/s (the last exactly at T).
      const double done = l + 1 == order.size() ? whole : whole * static_cast<double>(l + 1) / s;
      message_end_.push_back(start + done);
      message_worker_.push_back(i);
      message_partition_.push_back(order[l]);
      partitions = std::max(partitions, order[l] + 1);
    }
    compute_end_[w] = start + whole;
  }
  network_.deliver(message_end_, message_end_);
  std::fill(current_.arrivals.begin(), current_.arrivals.end(), 0.0);
  for (std::size_t m = 0; m < message_end_.size(); ++m) {
    const auto w = static_cast<std::size_t>(message_worker_[m]);
    current_.arrivals[w] = std::max(current_.arrivals[w], message_end_[m]);
    queue_.push(message_end_[m], MessageEvent{static_cast<int>(m)});
  }
  if (current_.deadline) {
    queue_.push(*current_.deadline, DeadlineEvent{});
  }
  // The partitions some worker holds (a random code may leave one unheld: it never arrives).
  covered_.assign(static_cast<std::size_t>(partitions), 1);
  for (const int j : message_partition_) {
    covered_[static_cast<std::size_t>(j)] = 0;
  }
  const auto held = static_cast<std::size_t>(std::count(covered_.begin(), covered_.end(), 0));
  std::fill(covered_.begin(), covered_.end(), 0);
  return held;
}

double SimulatedCluster::multi_message_stop(const std::vector<std::vector<int>>& orders) {
  const std::size_t held = schedule_messages(orders);
  const double last_arrival = *std::max_element(current_.arrivals.begin(), current_.arrivals.end());
  seen_.assign(static_cast<std::size_t>(workers()), 0);
  current_.received.clear();
  current_.received_from.clear();
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    const auto* message = std::get_if<MessageEvent>(&e.payload);
    if (message == nullptr) {
      return e.time;  // the deadline
    }
    const auto m = static_cast<std::size_t>(message->message);
    const int worker = message_worker_[m];
    if (seen_[static_cast<std::size_t>(worker)] == 0) {
      seen_[static_cast<std::size_t>(worker)] = 1;
      current_.heard.push_back(worker);
    }
    char& covered = covered_[static_cast<std::size_t>(message_partition_[m])];
    if (covered == 0) {
      covered = 1;
      current_.received.push_back(message_partition_[m]);
      current_.received_from.push_back(worker);
      if (current_.received.size() == held) {
        return e.time;
      }
    }
  }
  return last_arrival;
}

double SimulatedCluster::all_reduce(double stop) {
  // Without a network the compute ends are the arrivals the rule saw; a rank not heard by the
  // stop abandons its computation and joins at the stop.
  for (std::size_t i = 0; i < current_.ready.size(); ++i) {
    current_.ready[i] = std::min(compute_end_[i], stop);
  }
  collectives::complete_times(*collective_->schedule,
                              collective_->options,
                              collective_->bytes_per_element,
                              current_.ready,
                              current_.completion);
  return *std::max_element(current_.completion.begin(), current_.completion.end());
}

const IterationTiming& SimulatedCluster::finish_iteration(double stop, double last_arrival) {
  observe_iteration();
  if (collective_) {
    // Every rank starts the next iteration once the last one holds the result.
    stop = all_reduce(stop);
    last_arrival = stop;
  }
  current_.iteration_time = stop;
  current_.wall_time = policy_ == StragglerPolicy::kDrain ? last_arrival : stop;
  time_ += stop;
  wall_ += current_.wall_time;
  return current_;
}

const IterationTiming& SimulatedCluster::next_iteration() {
  const int n = workers();
  current_.iteration += 1;
  current_.broadcast = time_;
  draw_delays();

  queue_.clear();
  current_.heard.clear();
  if (const auto* orders = rule_->partition_orders()) {
    current_.deadline = rule_->deadline();
    current_.needed = std::nullopt;
    const double stop = multi_message_stop(*orders);
    return finish_iteration(stop,
                            *std::max_element(current_.arrivals.begin(), current_.arrivals.end()));
  }
  // Anytime minibatch: a worker sends what it has when the window closes.
  const double window = rule_->compute_window().value_or(std::numeric_limits<double>::infinity());
  for (int i = 0; i < n; ++i) {
    const auto w = static_cast<std::size_t>(i);
    // Under `finish` a worker still busy with stale work starts late; otherwise at once.
    compute_end_[w] = start_of(i) + std::min(window, current_.delays[w]);
  }
  network_.deliver(compute_end_, current_.arrivals);
  double last_arrival = 0.0;
  for (int i = 0; i < n; ++i) {
    const double arrival = current_.arrivals[static_cast<std::size_t>(i)];
    last_arrival = std::max(last_arrival, arrival);
    queue_.push(arrival, ArrivalEvent{i});
  }
  current_.deadline = tracker_ ? tracker_->deadline() : rule_->deadline();
  if (current_.deadline) {
    queue_.push(*current_.deadline, DeadlineEvent{});
  }
  current_.needed = counter_ ? std::optional<int>(counter_->r()) : std::nullopt;

  const auto minimum = static_cast<std::size_t>(rule_->minimum_arrivals());
  double stop = last_arrival;
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    if (std::holds_alternative<DeadlineEvent>(e.payload)) {
      stop = e.time;
      break;
    }
    current_.heard.push_back(std::get<ArrivalEvent>(e.payload).worker);
    if (current_.heard.size() >= minimum && stops(current_.heard)) {
      stop = e.time;
      break;
    }
  }

  return finish_iteration(stop, last_arrival);
}

}  // namespace stragglersim::sim

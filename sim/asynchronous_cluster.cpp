#include "sim/asynchronous_cluster.h"

#include <algorithm>
#include <span>
#include <variant>

#include "models/base/invariant.h"

namespace stragglersim::sim {

AsynchronousCluster::AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                                         UpdateMode mode,
                                         int k,
                                         std::uint64_t seed,
                                         const NetworkOptions& network)
    : delays_(std::move(delays)),
      mode_(mode),
      k_(k),
      rng_(make_engine(seed, Stream::kDelays)),
      network_(options_check::require_valid(network)),
      free_network_(network.is_free()) {
  STRAGGLERSIM_ASSERT(delays_ != nullptr, "the asynchronous cluster needs delays");
  STRAGGLERSIM_ASSERT(k_ >= 1 && k_ <= delays_->workers(), "K outside 1 ... workers");
  const auto n = static_cast<std::size_t>(delays_->workers());
  computations_.assign(n, 0);
  worker_version_.assign(n, 0);
  busy_.assign(n, 0);
  pending_.reserve(static_cast<std::size_t>(k_));
  queue_.reserve(n);
}

double AsynchronousCluster::delay_of(int worker, std::uint64_t computation) {
  // Rounds are drawn in order, each when its first computation starts; a round is dropped once
  // every worker has started its computation of it (each worker goes through them in order).
  while (first_round_ + rounds_.size() <= computation) {
    rounds_.emplace_back(static_cast<std::size_t>(workers()));
    const std::uint64_t round = first_round_ + rounds_.size() - 1;
    delays_->sample(round, rng_, std::span<double>(rounds_.back()));
    round_starts_.push_back(0);
  }
  const auto index = static_cast<std::size_t>(computation - first_round_);
  const double delay = rounds_[index][static_cast<std::size_t>(worker)];
  round_starts_[index] += 1;
  while (!round_starts_.empty() && round_starts_.front() == workers()) {
    rounds_.pop_front();
    round_starts_.pop_front();
    first_round_ += 1;
  }
  return delay;
}

void AsynchronousCluster::start(int worker, double now) {
  const auto w = static_cast<std::size_t>(worker);
  computations_[w] += 1;
  worker_version_[w] = version_;
  busy_[w] = 1;
  const double end = now + delay_of(worker, computations_[w]);
  if (free_network_) {
    queue_.push(end, ArrivalEvent{worker});
  } else {
    queue_.push(end, ComputeEndEvent{worker});
  }
}

double AsynchronousCluster::deliver(double end) {
  if (!network_.serial) {
    return end + (network_.latency + network_.transfer_time());  // Network::deliver's sum
  }
  // Compute ends pop in time order, so this is the FIFO order of the link:
  // A = max(end + L, the previous message's A) + S/B.
  link_free_ = std::max(end + network_.latency, link_free_) + network_.transfer_time();
  return link_free_;
}

std::uint64_t AsynchronousCluster::oldest_version_in_use() const {
  std::uint64_t oldest = version_;
  for (std::size_t w = 0; w < busy_.size(); ++w) {
    if (busy_[w] != 0) {
      oldest = std::min(oldest, worker_version_[w]);
    }
  }
  return oldest;
}

const AsynchronousUpdate& AsynchronousCluster::next_update() {
  if (!started_) {
    started_ = true;
    for (int i = 0; i < workers(); ++i) {
      start(i, 0.0);
    }
  }
  pending_.clear();
  double now = last_update_;
  while (static_cast<int>(pending_.size()) < k_) {
    STRAGGLERSIM_ASSERT(!queue_.empty(), "an asynchronous run ran out of work");
    const Event e = queue_.pop();
    if (const auto* left = std::get_if<ComputeEndEvent>(&e.payload)) {
      // The worker stays busy (its version in use) until its gradient is used.
      queue_.push(deliver(e.time), ArrivalEvent{left->worker});
      continue;
    }
    now = e.time;
    const int worker = std::get<ArrivalEvent>(e.payload).worker;
    const auto w = static_cast<std::size_t>(worker);
    busy_[w] = 0;
    pending_.push_back(UsedGradient{worker, worker_version_[w], computations_[w], 0, now});
    if (static_cast<int>(pending_.size()) < k_ && mode_ != UpdateMode::kKAsync) {
      // Both batch disciplines restart at once at the master's x (unchanged until the update).
      start(worker, now);
    }
  }
  version_ += 1;
  for (UsedGradient& g : pending_) {
    g.staleness = version_ - 1 - g.version;
  }
  switch (mode_) {
    case UpdateMode::kKBatchSync:
      // Every computation in flight is cancelled; everyone restarts at the new x (in worker
      // order, so the draws are consumed in a fixed order). A message already on a serial link
      // keeps it busy until it has crossed (link_free_ stays) and is dropped.
      queue_.clear();
      for (int i = 0; i < workers(); ++i) {
        start(i, now);
      }
      break;
    case UpdateMode::kKAsync:
      // The new x goes to the K workers whose gradients were used: all of them are idle.
      for (const UsedGradient& g : pending_) {
        start(g.worker, now);
      }
      break;
    case UpdateMode::kKBatchAsync:
      // The worker whose push completed the update fetches the new x.
      start(pending_.back().worker, now);
      break;
  }
  current_.update = version_;
  current_.time = now;
  current_.update_time = now - last_update_;
  current_.used = pending_;
  last_update_ = now;
  return current_;
}

}  // namespace stragglersim::sim

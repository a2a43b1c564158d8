#include "sim/asynchronous_cluster.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <variant>

#include "models/base/invariant.h"

namespace stragglersim::sim {

namespace {

UpdateShape k_shape(UpdateMode mode, int k) {
  UpdateShape shape;
  shape.mode = mode;
  shape.k = k;
  return shape;
}

}  // namespace

AsynchronousCluster::AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                                         UpdateMode mode,
                                         int k,
                                         std::uint64_t seed,
                                         const NetworkOptions& network)
    : AsynchronousCluster(std::move(delays), k_shape(mode, k), seed, network) {}

AsynchronousCluster::AsynchronousCluster(std::unique_ptr<DelayModel> delays,
                                         UpdateShape shape,
                                         std::uint64_t seed,
                                         const NetworkOptions& network)
    : delays_(std::move(delays)),
      shape_(std::move(shape)),
      rng_(make_engine(seed, Stream::kDelays)),
      network_(options_check::require_valid(network)),
      free_network_(network.is_free()) {
  STRAGGLERSIM_ASSERT(delays_ != nullptr, "the asynchronous cluster needs delays");
  static_cast<void>(options_check::require_valid(UpdateRule::Options{delays_->workers(),
                                                                     shape_.k,
                                                                     shape_.mode,
                                                                     shape_.step,
                                                                     shape_.max_delay,
                                                                     shape_.stop_stale,
                                                                     shape_.cutoffs,
                                                                     shape_.sampling}));
  const auto n = static_cast<std::size_t>(delays_->workers());
  computations_.assign(n, 0);
  worker_version_.assign(n, 0);
  busy_.assign(n, 0);
  batch_counts_.assign(n, 0);
  pending_.reserve(static_cast<std::size_t>(shape_.k));
  queue_.reserve(n);
  step_factor_.assign(n, 1.0);
  if (shape_.mode == UpdateMode::kRescaledAsync) {
    // γ_i = γ τ_i/τ_H: worker i updates at rate 1/τ_i, so each contributes γ/τ_H per second
    // and the mean step over updates is γ.
    double inverse_sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double tau = delays_->mean(static_cast<int>(i));
      STRAGGLERSIM_ASSERT(tau > 0.0 && std::isfinite(tau),
                          "Rescaled ASGD needs finite positive mean compute times");
      step_factor_[i] = tau;
      inverse_sum += 1.0 / tau;
    }
    const double harmonic = static_cast<double>(n) / inverse_sum;
    for (double& f : step_factor_) {
      f /= harmonic;
    }
  }
}

double AsynchronousCluster::step_factor(int worker) const {
  return step_factor_[static_cast<std::size_t>(worker)];
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
  const std::uint64_t c = computations_[w];
  worker_version_[w] = version_;
  busy_[w] = 1;
  const double duration =
      delays_->time_varying() ? delays_->duration_at(worker, now, rng_) : delay_of(worker, c);
  if (shape_.mode == UpdateMode::kMindFlayer && duration > shape_.cutoffs[w]) {
    queue_.push(now + shape_.cutoffs[w], AbandonEvent{worker, c});
    return;
  }
  const double end = now + duration;
  if (free_network_) {
    queue_.push(end, ArrivalEvent{worker, c});
  } else {
    queue_.push(end, ComputeEndEvent{worker, c});
  }
}

bool AsynchronousCluster::abandoned(int worker, std::uint64_t computation) const {
  return computation != computations_[static_cast<std::size_t>(worker)];
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

bool AsynchronousCluster::update_ready() const {
  if (shape_.mode != UpdateMode::kMalenia) {
    return static_cast<int>(pending_.size()) >= shape_.k;
  }
  // Every worker heard at x, and the harmonic mean of the counts at least S/n:
  // n / Σ 1/b_i ≥ S/n  ⇔  S·Σ 1/b_i ≤ n² (relative slack for the rounding of the sum).
  double inverse_sum = 0.0;
  for (const int b : batch_counts_) {
    if (b == 0) {
      return false;
    }
    inverse_sum += 1.0 / static_cast<double>(b);
  }
  const auto n = static_cast<double>(workers());
  return static_cast<double>(shape_.k) * inverse_sum <= n * n * (1.0 + 1e-12);
}

void AsynchronousCluster::receive(const UsedGradient& gradient, double now) {
  const int worker = gradient.worker;
  switch (shape_.mode) {
    case UpdateMode::kKBatchSync:
    case UpdateMode::kKBatchAsync:
      pending_.push_back(gradient);
      if (!update_ready()) {
        // Both batch disciplines restart at once at the master's x (unchanged until the update).
        start(worker, now);
      }
      return;
    case UpdateMode::kKAsync:
      pending_.push_back(gradient);
      return;
    case UpdateMode::kRingmaster:
    case UpdateMode::kRescaledAsync:
      if (shape_.max_delay && version_ - gradient.version >= *shape_.max_delay) {
        current_.discarded += 1;
        start(worker, now);
        return;
      }
      pending_.push_back(gradient);
      return;
    case UpdateMode::kRennala:
    case UpdateMode::kMalenia:
    case UpdateMode::kMindFlayer:
      if (gradient.version == version_) {
        pending_.push_back(gradient);
        batch_counts_[static_cast<std::size_t>(worker)] += 1;
      } else {
        current_.discarded += 1;
      }
      if (!update_ready()) {
        deferred_.push_back(worker);
      }
      return;
  }
}

void AsynchronousCluster::restart_after_update(double now) {
  switch (shape_.mode) {
    case UpdateMode::kKBatchSync:
      // Every computation in flight is cancelled; everyone restarts at the new x (in worker
      // order, so the draws are consumed in a fixed order). A message already on a serial link
      // keeps it busy until it has crossed (link_free_ stays) and is dropped.
      queue_.clear();
      for (int i = 0; i < workers(); ++i) {
        start(i, now);
      }
      return;
    case UpdateMode::kKAsync:
      // The new x goes to the K workers whose gradients were used: all of them are idle.
      for (const UsedGradient& g : pending_) {
        start(g.worker, now);
      }
      return;
    case UpdateMode::kKBatchAsync:
      // The worker whose push completed the update fetches the new x.
      start(pending_.back().worker, now);
      return;
    case UpdateMode::kRingmaster:
    case UpdateMode::kRescaledAsync:
      start(pending_.back().worker, now);
      if (shape_.stop_stale && shape_.max_delay) {
        // A computation whose delay has reached R would be discarded on arrival: stop it now.
        for (int i = 0; i < workers(); ++i) {
          const auto w = static_cast<std::size_t>(i);
          if (busy_[w] != 0 && version_ - worker_version_[w] >= *shape_.max_delay) {
            start(i, now);
          }
        }
      }
      return;
    case UpdateMode::kRennala:
    case UpdateMode::kMalenia:
    case UpdateMode::kMindFlayer:
      // The workers that delivered at this instant are idle and start at the new x; the others
      // keep computing at the old x (their gradients will be discarded), or with stop_stale
      // restart at the new x too (every worker, in worker order).
      deferred_.push_back(pending_.back().worker);
      if (shape_.stop_stale) {
        for (int i = 0; i < workers(); ++i) {
          start(i, now);
        }
      } else {
        for (const int worker : deferred_) {
          start(worker, now);
        }
      }
      deferred_.clear();
      return;
  }
}

const AsynchronousUpdate& AsynchronousCluster::next_update() {
  if (!started_) {
    started_ = true;
    for (int i = 0; i < workers(); ++i) {
      start(i, 0.0);
    }
  }
  pending_.clear();
  std::fill(batch_counts_.begin(), batch_counts_.end(), 0);
  current_.discarded = 0;
  current_.abandoned = 0;
  double now = last_update_;
  while (!update_ready()) {
    if (!deferred_.empty() && (queue_.empty() || queue_.next_time() > now)) {
      // Every arrival of this instant is in: the workers that delivered get the current x.
      for (const int worker : deferred_) {
        start(worker, now);
      }
      deferred_.clear();
    }
    STRAGGLERSIM_ASSERT(!queue_.empty(), "an asynchronous run ran out of work");
    const Event e = queue_.pop();
    if (const auto* left = std::get_if<ComputeEndEvent>(&e.payload)) {
      if (!abandoned(left->worker, left->computation)) {
        // The worker stays busy (its version in use) until its gradient is used.
        queue_.push(deliver(e.time), ArrivalEvent{left->worker, left->computation});
      }
      continue;
    }
    if (const auto* cut = std::get_if<AbandonEvent>(&e.payload)) {
      if (!abandoned(cut->worker, cut->computation)) {
        current_.abandoned += 1;
        start(cut->worker, e.time);
      }
      continue;
    }
    const auto& arrival = std::get<ArrivalEvent>(e.payload);
    if (abandoned(arrival.worker, arrival.computation)) {
      continue;
    }
    now = e.time;
    const auto w = static_cast<std::size_t>(arrival.worker);
    busy_[w] = 0;
    receive(UsedGradient{arrival.worker, worker_version_[w], computations_[w], 0, now}, now);
  }
  version_ += 1;
  for (UsedGradient& g : pending_) {
    g.staleness = version_ - 1 - g.version;
  }
  restart_after_update(now);
  current_.update = version_;
  current_.time = now;
  current_.update_time = now - last_update_;
  current_.used = pending_;
  last_update_ = now;
  return current_;
}

}  // namespace stragglersim::sim

#include "sim/backends/simulated_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

/// ĝ over a collective (docs/model.md §3 "Aggregation"): column i of `buffers` is rank i's
/// contribution v_i = a_i·y_i, added to zero as combine_messages adds it (a zero column when
/// a_i = 0), then the schedule reduces them; every column holds ĝ, column 0 is returned. Without a
/// collective, combine_messages.
template <typename Message>
Eigen::VectorXd aggregate(const CollectiveAggregation* collective,
                          const codes::Decoding& decoding,
                          Eigen::Index dimension,
                          Message&& message,
                          Eigen::MatrixXd& buffers) {
  if (collective == nullptr) {
    return combine_messages(decoding, dimension, std::forward<Message>(message));
  }
  buffers.setZero(dimension, decoding.weights.size());
  for (Eigen::Index i = 0; i < decoding.weights.size(); ++i) {
    const double a = decoding.weights(i);
    if (a != 0.0) {
      buffers.col(i).noalias() += a * message(static_cast<int>(i));
    }
  }
  collectives::execute(*collective->schedule, buffers);
  return buffers.col(0);
}

}  // namespace

SimulatedBackend::SimulatedBackend(std::shared_ptr<const models::Objective> objective,
                                   Scheme scheme,
                                   std::unique_ptr<SimulatedCluster> cluster,
                                   models::WorkerPool* pool,
                                   std::optional<MinibatchOptions> minibatch,
                                   std::uint64_t seed)
    : objective_(std::move(objective)),
      scheme_(std::move(scheme)),
      cluster_(std::move(cluster)),
      pool_(pool),
      minibatch_(minibatch),
      seed_(seed) {
  STRAGGLERSIM_ASSERT(objective_->partitions() == scheme_.code->partitions(),
                      "code and objective must have the same partitions");
  STRAGGLERSIM_ASSERT(cluster_->workers() == scheme_.code->workers(),
                      "code and cluster must have the same workers");
  STRAGGLERSIM_ASSERT(cluster_->collective() == nullptr ||
                          cluster_->collective()->schedule->elements == objective_->dimension(),
                      "a collective reduces the model's dimension");
  message_buffer_.resize(objective_->dimension());
  column_.assign(static_cast<std::size_t>(objective_->partitions()), -1);
  if (scheme_.rule->compute_window()) {
    STRAGGLERSIM_ASSERT(!minibatch_, "the anytime rule draws its own samples: no minibatch");
    for (int i = 0; i < scheme_.code->workers(); ++i) {
      const auto support = scheme_.code->support(i);
      STRAGGLERSIM_ASSERT(
          support.size() == 1 && support[0] == i && scheme_.code->support_values(i)[0] == 1.0,
          "the anytime rule needs the uncoded code, one partition per worker");
    }
  }
}

void SimulatedBackend::anytime(std::uint64_t iteration,
                               double window,
                               const IterationTiming& timing,
                               const Eigen::VectorXd& query,
                               const Eigen::MatrixXd* partition_gradients,
                               BackendIteration& out) {
  const int n = scheme_.code->workers();
  const Eigen::Index m = objective_->rows();
  rows_done_.assign(static_cast<std::size_t>(n), 0);
  std::int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const Eigen::Index rows = models::partition_rows(m, n, i).size();
    const double x = timing.delays[static_cast<std::size_t>(i)];
    // A uniform pace over the drawn time X_i: ⌊|P_i|·T/X_i⌋ rows by the window's end.
    const Eigen::Index done =
        x <= window
            ? rows
            : static_cast<Eigen::Index>(std::floor(static_cast<double>(rows) * (window / x)));
    rows_done_[static_cast<std::size_t>(i)] = std::min(done, rows);
    total += rows_done_[static_cast<std::size_t>(i)];
  }
  out.rows_used = total;
  out.worker_rows.assign(rows_done_.begin(), rows_done_.end());
  codes::Decoding& d = out.decoding;
  d.weights = Eigen::VectorXd::Zero(n);
  for (int i = 0; i < n && total > 0; ++i) {
    const auto c = static_cast<double>(rows_done_[static_cast<std::size_t>(i)]);
    const auto rows = static_cast<double>(models::partition_rows(m, n, i).size());
    // (c_i·m)/(|P_i|·Σc): exactly 1 when every worker finished (Σc = m, c_i = |P_i|).
    d.weights(i) = (c * static_cast<double>(m)) / (rows * static_cast<double>(total));
  }
  d.alpha = d.weights;
  d.error = (d.alpha.array() - 1.0).square().sum();
  d.partitions_covered = static_cast<int>((d.weights.array() != 0.0).count());
  d.exact = d.error <= codes::kExactTolerance;
  const Eigen::Index p = objective_->dimension();
  needed_gradients_.resize(p, n);
  models::run_tasks(pool_, n, [&](int i) {
    const Eigen::Index c = rows_done_[static_cast<std::size_t>(i)];
    if (c == 0) {
      return;
    }
    if (c < models::partition_rows(m, n, i).size()) {
      objective_->partition_minibatch_gradient(
          i, query, c, models::minibatch_seed(seed_, iteration, i), needed_gradients_.col(i));
    } else if (partition_gradients != nullptr) {
      needed_gradients_.col(i) = partition_gradients->col(i);
    } else {
      objective_->partition_gradient(i, query, needed_gradients_.col(i));
    }
  });
  out.estimate = aggregate(
      cluster_->collective(),
      d,
      p,
      [&](int i) -> const Eigen::VectorXd& {
        message_buffer_ = needed_gradients_.col(i);
        return message_buffer_;
      },
      collective_buffers_);
}

void SimulatedBackend::compute_needed(std::uint64_t iteration, const Eigen::VectorXd& query) {
  std::sort(needed_.begin(), needed_.end());
  needed_.erase(std::unique(needed_.begin(), needed_.end()), needed_.end());
  const Eigen::Index p = objective_->dimension();
  if (minibatch_) {
    needed_gradients_.resize(p, static_cast<Eigen::Index>(needed_.size()));
    models::run_tasks(pool_, static_cast<int>(needed_.size()), [&](int s) {
      const int j = needed_[static_cast<std::size_t>(s)];
      objective_->partition_minibatch_gradient(
          j,
          query,
          minibatch_->batch,
          models::minibatch_seed(minibatch_->seed, iteration, j),
          needed_gradients_.col(s));
    });
  } else {
    objective_->partition_gradients(needed_, query, needed_gradients_, pool_);
  }
  for (std::size_t s = 0; s < needed_.size(); ++s) {
    column_[static_cast<std::size_t>(needed_[s])] = static_cast<Eigen::Index>(s);
  }
}

void SimulatedBackend::multi_message(std::uint64_t iteration,
                                     const IterationTiming& timing,
                                     const Eigen::VectorXd& query,
                                     const Eigen::MatrixXd* partition_gradients,
                                     BackendIteration& out) {
  const int n = scheme_.code->workers();
  const int k = scheme_.code->partitions();
  codes::Decoding& d = out.decoding;
  d.weights = Eigen::VectorXd::Zero(n);
  for (const int i : timing.heard) {
    d.weights(i) = 1.0;
  }
  d.alpha = Eigen::VectorXd::Zero(k);
  for (const int j : timing.received) {
    d.alpha(j) = 1.0;
  }
  d.error = (d.alpha.array() - 1.0).square().sum();
  d.partitions_covered = static_cast<int>(timing.received.size());
  d.exact = d.error <= codes::kExactTolerance;
  if (!d.exact && scheme_.rescale == codes::Rescale::kEmpirical && d.partitions_covered > 0) {
    codes::rescale(d, scheme_.rescale, 0.0);
  }
  if (minibatch_) {
    partition_gradients = nullptr;
  }
  if (partition_gradients == nullptr) {
    needed_.assign(timing.received.begin(), timing.received.end());
    compute_needed(iteration, query);
  }
  const Eigen::Index p = objective_->dimension();
  auto gradient = [&](int j) -> Eigen::Ref<const Eigen::VectorXd> {
    if (partition_gradients != nullptr) {
      return partition_gradients->col(j);
    }
    return needed_gradients_.col(column_[static_cast<std::size_t>(j)]);
  };
  if (const CollectiveAggregation* collective = cluster_->collective()) {
    // Each rank contributes the partitions it delivered first, Σ α_j ∇F_j in ascending j.
    std::vector<std::pair<int, int>> delivered;
    delivered.reserve(timing.received.size());
    for (std::size_t l = 0; l < timing.received.size(); ++l) {
      delivered.emplace_back(timing.received[l], timing.received_from[l]);
    }
    std::sort(delivered.begin(), delivered.end());
    collective_buffers_.setZero(p, n);
    for (const auto& [j, rank] : delivered) {
      collective_buffers_.col(rank).noalias() += d.alpha(j) * gradient(j);
    }
    collectives::execute(*collective->schedule, collective_buffers_);
    out.estimate = collective_buffers_.col(0);
    return;
  }
  // ĝ = Σ_j α_j ∇F_j in ascending j from zero: with every α_j = 1 and k = n the bytes of
  // uncoded `all` (Σ_i 1·y_i, y_i = 0 + 1·∇F_i).
  out.estimate = Eigen::VectorXd::Zero(p);
  for (int j = 0; j < k; ++j) {
    const double a = d.alpha(j);
    if (a != 0.0) {
      out.estimate.noalias() += a * gradient(j);
    }
  }
}

BackendIteration SimulatedBackend::iterate(std::uint64_t iteration,
                                           const Eigen::VectorXd& query,
                                           const Eigen::MatrixXd* partition_gradients) {
  const IterationTiming& timing = cluster_->next_iteration();
  BackendIteration out;
  out.iteration_time = timing.iteration_time;
  out.deadline = timing.deadline;
  out.wall_time = timing.wall_time;
  out.heard = timing.heard;
  if (cluster_->collective() != nullptr) {
    record_collective(timing, out);
  }
  if (const auto window = scheme_.rule->compute_window()) {
    anytime(iteration, *window, timing, query, partition_gradients, out);
    return out;
  }
  if (scheme_.rule->partition_orders() != nullptr) {
    multi_message(iteration, timing, query, partition_gradients, out);
    return out;
  }
  out.decoding = scheme_.decode(timing.heard, iteration);
  if (minibatch_) {
    partition_gradients = nullptr;  // the full gradients are not what the workers compute
  }
  if (partition_gradients == nullptr) {
    // The partitions some weighted worker holds, each computed once (in parallel on the pool,
    // each column the same bytes as a serial partition_gradient); erased ones never are.
    needed_.clear();
    const Eigen::VectorXd& a = out.decoding.weights;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      if (a(i) != 0.0) {
        const auto support = scheme_.code->support(static_cast<int>(i));
        needed_.insert(needed_.end(), support.begin(), support.end());
      }
    }
    compute_needed(iteration, query);
  }
  const Eigen::Index p = objective_->dimension();
  auto gradient = [&](int j) -> Eigen::Ref<const Eigen::VectorXd> {
    if (partition_gradients != nullptr) {
      return partition_gradients->col(j);
    }
    return needed_gradients_.col(column_[static_cast<std::size_t>(j)]);
  };
  // Combined as the real masters combine their workers' messages (combine_messages), so a real
  // run that hears the same workers returns the same bytes.
  if (cluster_->collective() == nullptr) {
    out.estimate = combine_coded_messages(*scheme_.code, out.decoding, p, gradient);
    return out;
  }
  out.estimate = aggregate(
      cluster_->collective(),
      out.decoding,
      p,
      [&](int i) -> const Eigen::VectorXd& {
        coded_message(*scheme_.code, i, gradient, message_buffer_);
        return message_buffer_;
      },
      collective_buffers_);
  return out;
}

void SimulatedBackend::record_collective(const IterationTiming& timing, BackendIteration& out) {
  out.collective_seconds.resize(timing.ready.size());
  for (std::size_t i = 0; i < timing.ready.size(); ++i) {
    out.collective_seconds[i] = timing.completion[i] - timing.ready[i];
  }
  // Without a network the arrivals are the compute ends; max_element keeps the lowest rank.
  out.arrived_last = static_cast<int>(
      std::max_element(timing.arrivals.begin(), timing.arrivals.end()) - timing.arrivals.begin());
}

}  // namespace stragglersim::sim

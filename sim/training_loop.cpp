#include "sim/training_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include "models/base/invariant.h"
#include "models/metrics.h"
#include "models/softmax_network.h"
#include "sim/scheme.h"

namespace stragglersim::sim {
namespace {

void fill_test(const models::Objective* test,
               const Eigen::VectorXd& x,
               const TrainingOptions& options,
               TraceRow& row) {
  if (test == nullptr) {
    return;
  }
  const models::LossModel& loss = test->loss();
  // A finite training loss does not bound the test margins (a huge step can overflow them
  // while the training loss saturates): non-finite margins are numerical trouble, not a bug.
  const auto nonfinite = [&] {
    return NumericalError(fmt::format(
        "iteration {}: non-finite test margins (the step is probably too large)", row.iteration));
  };
  if (loss.traits().scalar_margin) {
    // One pass over the test rows gives the loss, the metric and the AUC.
    const auto scores = options.lockstep != nullptr
                            ? options.lockstep->score(x)
                            : models::score_test_set(*test, x, options.pool);
    if (!scores) {
      throw nonfinite();
    }
    row.test_loss = scores->loss;
    row.test_metric = scores->metric;
    row.test_auc = scores->auc;
    return;
  }
  if (!x.allFinite()) {
    throw nonfinite();
  }
  row.test_loss = test->value(x) - 0.5 * test->l2() * x.squaredNorm();
  const int classes = loss.traits().classes;
  // One forward pass gives both: accuracy is the confusion matrix's trace over the rows.
  const auto counts =
      models::confusion_counts(test->data().labels, loss.predict(test->data(), x), classes);
  row.test_confusion.assign(static_cast<std::size_t>(classes) * static_cast<std::size_t>(classes),
                            0);
  std::int64_t right = 0;
  for (int t = 0; t < classes; ++t) {
    for (int s = 0; s < classes; ++s) {
      row.test_confusion[static_cast<std::size_t>(t * classes + s)] = counts(t, s);
    }
    right += counts(t, t);
  }
  row.test_metric = test->rows() > 0
                        ? static_cast<double>(right) / static_cast<double>(test->rows())
                        : std::numeric_limits<double>::quiet_NaN();
}

/// f(x) and every ∇F_j(x) in one pass, and the partition gradients `stale` asks for at iterates
/// of the run's own: the run's own passes, or ones shared with its lock-step group.
double evaluate(const models::Objective& objective,
                const Eigen::VectorXd& x,
                Eigen::MatrixXd& partition_gradients,
                const TrainingOptions& options,
                const std::vector<models::Objective::PartitionTask>& stale = {}) {
  if (options.lockstep != nullptr) {
    return options.lockstep->evaluate(x, &partition_gradients, stale);
  }
  const double loss = objective.evaluate(x, &partition_gradients, options.pool);
  if (!stale.empty()) {
    objective.partition_gradients_many(stale, options.pool);
  }
  return loss;
}

void check_finite(const TraceRow& row) {
  if (!std::isfinite(row.time) || !std::isfinite(row.iteration_time)) {
    throw NumericalError(fmt::format(
        "iteration {}: non-finite simulated time {} (iteration time {}; delays too large)",
        row.iteration,
        row.time,
        row.iteration_time));
  }
  if (!std::isfinite(row.loss) || !std::isfinite(row.grad_norm)) {
    throw NumericalError(fmt::format(
        "iteration {}: non-finite loss {} or gradient norm {} (the step is probably too large)",
        row.iteration,
        row.loss,
        row.grad_norm));
  }
}

/// ∇F_j at `x`: full, or the minibatch of the worker's computation `draw`.
void partition_gradient_of(const models::Objective& objective,
                           int j,
                           const Eigen::VectorXd& x,
                           std::uint64_t draw,
                           const std::optional<MinibatchOptions>& minibatch,
                           Eigen::Ref<Eigen::VectorXd> out) {
  if (minibatch) {
    objective.partition_minibatch_gradient(
        j, x, minibatch->batch, models::minibatch_seed(minibatch->seed, draw, j), out);
  } else {
    objective.partition_gradient(j, x, out);
  }
}

/// The full partition gradients an update's messages are made of, one per (version, partition),
/// and the tasks that compute them (with the pass at the iterate before the update).
struct StaleGradients {
  std::map<std::pair<std::uint64_t, int>, Eigen::VectorXd> values;
  std::vector<models::Objective::PartitionTask> tasks;
};

/// The partitions of the message of `g`: its worker's support, or under shared sampling the
/// partition its computation drew (uncoded, the rule's requirement).
std::vector<int> message_partitions(const codes::GradientCode& code,
                                    const UsedGradient& g,
                                    const AsynchronousOptions& options,
                                    Sampling sampling) {
  if (sampling == Sampling::kShared) {
    return {shared_partition(options.seed, g.worker, g.computation, code.partitions())};
  }
  const auto support = code.support(g.worker);
  return {support.begin(), support.end()};
}

/// `stale` for `update`'s messages; none with minibatches (each computation draws its own rows,
/// computed by used_messages).
void plan_stale(const codes::GradientCode& code,
                const AsynchronousUpdate& update,
                const std::map<std::uint64_t, Eigen::VectorXd>& history,
                const AsynchronousOptions& options,
                Sampling sampling,
                StaleGradients& stale) {
  stale.values.clear();
  stale.tasks.clear();
  if (options.minibatch) {
    return;
  }
  for (const UsedGradient& g : update.used) {
    for (const int j : message_partitions(code, g, options, sampling)) {
      const auto [at, added] = stale.values.try_emplace({g.version, j});
      if (added) {
        stale.tasks.push_back({j, &history.at(g.version), &at->second});
      }
    }
  }
}

/// The used gradients' messages y_i (column l for used[order[l]]), each at its own stale x: from
/// `stale`'s partition gradients, or with minibatches each computation's own draw.
void used_messages(const models::Objective& objective,
                   const codes::GradientCode& code,
                   const AsynchronousUpdate& update,
                   const std::vector<std::size_t>& order,
                   const std::map<std::uint64_t, Eigen::VectorXd>& history,
                   const StaleGradients& stale,
                   const AsynchronousOptions& options,
                   Sampling sampling,
                   Eigen::MatrixXd& messages) {
  const Eigen::Index p = objective.dimension();
  messages.resize(p, static_cast<Eigen::Index>(order.size()));
  models::run_tasks(options.run.pool, static_cast<int>(order.size()), [&](int l) {
    const UsedGradient& g = update.used[order[static_cast<std::size_t>(l)]];
    Eigen::VectorXd buffer;  // a minibatch draw (the full gradients are in `stale`)
    auto gradient = [&](int j) -> const Eigen::VectorXd& {
      if (!options.minibatch) {
        return stale.values.at({g.version, j});
      }
      buffer.resize(p);
      partition_gradient_of(
          objective, j, history.at(g.version), g.computation, options.minibatch, buffer);
      return buffer;
    };
    if (sampling == Sampling::kShared) {
      // Uncoded (the rule's requirement): the message is the drawn partition's gradient.
      messages.col(l) = gradient(message_partitions(code, g, options, sampling).front());
      return;
    }
    Eigen::VectorXd y(p);
    coded_message(code, g.worker, gradient, y);
    messages.col(l) = y;
  });
}

/// The weight w_l of the update's gradient `g` before the staleness factor (train_asynchronous);
/// `from_worker`: the update's gradients from g's worker.
double gradient_weight(const AsynchronousCluster& cluster,
                       const AsynchronousUpdate& update,
                       const UsedGradient& g,
                       std::size_t from_worker) {
  const auto n = static_cast<double>(cluster.workers());
  switch (cluster.mode()) {
    case UpdateMode::kMalenia:
      return 1.0 / static_cast<double>(from_worker);
    case UpdateMode::kRescaledAsync:
      return n * cluster.step_factor(g.worker);
    case UpdateMode::kRennala:
    case UpdateMode::kMindFlayer:
      // B gradients, possibly more or fewer than n: (n/B) Σ is unbiased for Σ_j ∇F_j.
      return n / static_cast<double>(update.used.size());
    default:
      return n / static_cast<double>(cluster.k());
  }
}

/// Σ_l w_l s(τ_l) y_l over the update's gradients in (worker, computation) order (`order`),
/// with their weights w_l s(τ_l) in `weights`.
Eigen::VectorXd update_estimate(const models::Objective& objective,
                                const codes::GradientCode& code,
                                const AsynchronousCluster& cluster,
                                const AsynchronousUpdate& update,
                                const std::map<std::uint64_t, Eigen::VectorXd>& history,
                                const StaleGradients& stale,
                                const AsynchronousOptions& options,
                                std::vector<std::size_t>& order,
                                std::vector<double>& weights) {
  order.resize(update.used.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const UsedGradient& ga = update.used[a];
    const UsedGradient& gb = update.used[b];
    return ga.worker != gb.worker ? ga.worker < gb.worker : ga.computation < gb.computation;
  });
  Eigen::MatrixXd messages;
  used_messages(
      objective, code, update, order, history, stale, options, cluster.shape().sampling, messages);
  weights.resize(order.size());
  // The update's gradients from each worker (Malenia averages each worker's own).
  std::vector<std::size_t> from_worker(static_cast<std::size_t>(cluster.workers()), 0);
  for (const UsedGradient& g : update.used) {
    ++from_worker[static_cast<std::size_t>(g.worker)];
  }
  Eigen::VectorXd estimate = Eigen::VectorXd::Zero(objective.dimension());
  for (std::size_t l = 0; l < order.size(); ++l) {
    const UsedGradient& g = update.used[order[l]];
    const auto tau = static_cast<double>(g.staleness);
    const double scale =
        gradient_weight(cluster, update, g, from_worker[static_cast<std::size_t>(g.worker)]);
    weights[l] = options.staleness_step == StalenessStep::kInverse ? scale / (1.0 + tau) : scale;
    estimate.noalias() += weights[l] * messages.col(static_cast<Eigen::Index>(l));
  }
  return estimate;
}

/// Staleness mean and maximum, α = Σ_l w_l B_{i_l}ᵀ (its decoding error), partitions covered.
void describe_update(const codes::GradientCode& code,
                     const AsynchronousUpdate& update,
                     const std::vector<double>& weights,
                     const std::vector<std::size_t>& order,
                     TraceRow& row) {
  double sum = 0.0;
  double largest = 0.0;
  Eigen::VectorXd alpha = Eigen::VectorXd::Zero(code.partitions());
  for (std::size_t l = 0; l < order.size(); ++l) {
    const UsedGradient& g = update.used[order[l]];
    sum += static_cast<double>(g.staleness);
    largest = std::max(largest, static_cast<double>(g.staleness));
    const auto support = code.support(g.worker);
    const auto values = code.support_values(g.worker);
    for (std::size_t s = 0; s < support.size(); ++s) {
      alpha(support[s]) += weights[l] * values[s];
    }
  }
  row.staleness_mean = sum / static_cast<double>(order.size());
  row.staleness_max = largest;
  row.decoding_error = (alpha.array() - 1.0).square().sum();
  row.partitions_covered = static_cast<int>((alpha.array() != 0.0).count());
  for (const UsedGradient& g : update.used) {
    row.heard.push_back(g.worker);
    row.used.push_back(g.worker);
    row.used_staleness.push_back(g.staleness);
  }
  row.workers_heard = static_cast<int>(update.used.size());
}

/// A synchronous iteration's heard and used workers, coverage and rule columns.
void describe_iteration(BackendIteration& it, TraceRow& row) {
  row.workers_heard = static_cast<int>(it.heard.size());
  row.partitions_covered = it.decoding.partitions_covered;
  row.rows_used = it.rows_used;
  row.worker_rows = std::move(it.worker_rows);
  row.collective_seconds = std::move(it.collective_seconds);
  row.arrived_last = it.arrived_last;
  row.deadline = it.deadline;
  row.heard = std::move(it.heard);
  for (Eigen::Index i = 0; i < it.decoding.weights.size(); ++i) {
    if (it.decoding.weights(i) != 0.0) {
      row.used.push_back(static_cast<int>(i));
    }
  }
}

}  // namespace

int shared_partition(std::uint64_t seed, int worker, std::uint64_t computation, int partitions) {
  const std::uint64_t h =
      derive_seed(derive_seed(derive_seed(seed, static_cast<std::uint64_t>(Stream::kSampling)),
                              static_cast<std::uint64_t>(worker)),
                  computation);
  return static_cast<int>(h % static_cast<std::uint64_t>(partitions));
}

void train_asynchronous(const models::Objective& objective,
                        const models::Objective* test_objective,
                        const codes::GradientCode& code,
                        Optimizer& optimizer,
                        AsynchronousCluster& cluster,
                        const AsynchronousOptions& options,
                        const std::function<void(const TraceRow&)>& on_row) {
  STRAGGLERSIM_ASSERT(optimizer.queries_iterate(),
                      "the asynchronous loop steps by gradient descent");
  Eigen::MatrixXd partition_gradients;
  Eigen::VectorXd full_gradient;
  // The iterates some worker may still compute at, by version.
  std::map<std::uint64_t, Eigen::VectorXd> history;
  history.emplace(0, optimizer.iterate());
  // Update t is drawn before row t − 1 is recorded (the clock does not depend on x), so that its
  // messages' partition gradients come with that row's pass.
  StaleGradients stale;
  const auto next_update = [&](std::uint64_t t) -> const AsynchronousUpdate* {
    if (t > options.run.iterations) {
      return nullptr;
    }
    const AsynchronousUpdate& update = cluster.next_update();
    plan_stale(code, update, history, options, cluster.shape().sampling, stale);
    return &update;
  };
  auto record = [&](TraceRow& row) {
    const Eigen::VectorXd& x = optimizer.iterate();
    row.loss = evaluate(objective, x, partition_gradients, options.run, stale.tasks);
    full_gradient = partition_gradients.rowwise().sum() + objective.l2() * x;
    row.grad_norm = full_gradient.norm();
    check_finite(row);
    fill_test(test_objective, x, options.run, row);
    on_row(row);
  };
  TraceRow row;
  const AsynchronousUpdate* update = next_update(1);
  record(row);
  for (std::uint64_t t = 1; update != nullptr; ++t) {
    std::vector<std::size_t> order;
    std::vector<double> weights;
    Eigen::VectorXd estimate =
        update_estimate(objective, code, cluster, *update, history, stale, options, order, weights);
    estimate.noalias() += objective.l2() * optimizer.iterate();
    const double gradient_norm = full_gradient.norm();
    const double gradient_error = (estimate - full_gradient).norm();
    optimizer.step(estimate);
    row = TraceRow{};
    row.iteration = t;
    row.time = update->time;
    row.iteration_time = update->update_time;
    row.wall_time = update->time;
    row.gradient_error = gradient_error;
    if (gradient_norm > 0.0) {
      row.gradient_error_relative = gradient_error / gradient_norm;
    }
    describe_update(code, *update, weights, order, row);
    history.emplace(update->update, optimizer.iterate());
    history.erase(history.begin(), history.lower_bound(cluster.oldest_version_in_use()));
    // The run ends after this row at its iteration count or at its time budget.
    update = update->time >= options.run.time_budget ? nullptr : next_update(t + 1);
    if (update == nullptr) {
      stale.tasks.clear();
    }
    record(row);
  }
}

void train(const models::Objective& objective,
           const models::Objective* test_objective,
           Optimizer& optimizer,
           Backend& backend,
           const TrainingOptions& options,
           const std::function<void(const TraceRow&)>& on_row) {
  Eigen::MatrixXd partition_gradients;
  Eigen::VectorXd full_gradient;
  auto record = [&](TraceRow& row) {
    const Eigen::VectorXd& x = optimizer.iterate();
    // One pass gives f(x_t) and every ∇F_j(x_t): the trace's gradient norm, and for GD the
    // next iteration's partition gradients too.
    row.loss = evaluate(objective, x, partition_gradients, options);
    full_gradient = partition_gradients.rowwise().sum() + objective.l2() * x;
    row.grad_norm = full_gradient.norm();
    check_finite(row);
    fill_test(test_objective, x, options, row);
    on_row(row);
  };

  TraceRow row;
  record(row);
  double time = 0.0;
  double wall = 0.0;
  double real = 0.0;
  for (std::uint64_t t = 1; t <= options.iterations; ++t) {
    const Eigen::VectorXd& y = optimizer.query_point();
    const Eigen::MatrixXd* hint = optimizer.queries_iterate() ? &partition_gradients : nullptr;
    BackendIteration it = backend.iterate(t, y, hint);
    it.estimate.noalias() += objective.l2() * y;
    // For GD the query point is x_{t−1}, whose full gradient the last row already computed.
    std::optional<double> gradient_error;
    std::optional<double> gradient_norm;
    if (optimizer.queries_iterate()) {
      gradient_error = (it.estimate - full_gradient).norm();
      gradient_norm = full_gradient.norm();
    }
    optimizer.step(it.estimate);
    time += it.iteration_time;
    wall += it.wall_time;
    real += it.real_seconds;
    row = TraceRow{};
    row.iteration = t;
    row.time = time;
    row.iteration_time = it.iteration_time;
    row.wall_time = wall;
    row.real_seconds = real;
    row.decoding_error = it.decoding.error;
    row.gradient_error = gradient_error;
    if (gradient_error && *gradient_norm > 0.0) {
      row.gradient_error_relative = *gradient_error / *gradient_norm;
    }
    describe_iteration(it, row);
    record(row);
    if (time >= options.time_budget) {
      break;
    }
  }
}

}  // namespace stragglersim::sim

#include "sim/training_loop.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "models/metrics.h"
#include "models/softmax_network.h"
#include "sim/scheme.h"

namespace stragglersim::sim {
namespace {

void fill_test(const models::Objective* test, const Eigen::VectorXd& x, TraceRow& row) {
  if (test == nullptr) {
    return;
  }
  const models::LossModel& loss = test->loss();
  // A finite training loss does not bound the test margins (a huge step can overflow them
  // while the training loss saturates): non-finite margins are numerical trouble, not a bug.
  const bool finite =
      loss.traits().scalar_margin ? models::margins(test->data(), x).allFinite() : x.allFinite();
  if (!finite) {
    throw NumericalError(fmt::format(
        "iteration {}: non-finite test margins (the step is probably too large)", row.iteration));
  }
  const double reg = 0.5 * test->l2() * x.squaredNorm();
  row.test_loss = test->value(x) - reg;
  if (const int classes = loss.traits().classes; classes > 0) {
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
  } else {
    row.test_metric = loss.metric(test->data(), x);
  }
  row.test_auc = models::test_auc(*test, x);
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

}  // namespace

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
    row.loss = objective.evaluate(x, &partition_gradients, options.pool);
    full_gradient = partition_gradients.rowwise().sum() + objective.l2() * x;
    row.grad_norm = full_gradient.norm();
    check_finite(row);
    fill_test(test_objective, x, row);
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
    row.workers_heard = static_cast<int>(it.heard.size());
    row.partitions_covered = it.decoding.partitions_covered;
    row.heard = std::move(it.heard);
    record(row);
    if (time >= options.time_budget) {
      break;
    }
  }
}

}  // namespace stragglersim::sim

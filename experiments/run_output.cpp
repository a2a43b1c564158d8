#include "experiments/run_output.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/predict/predictions.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_summary.h"
#include "experiments/run_trace.h"
#include "experiments/run_workers.h"
#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "models/worker_pool.h"
#include "sim/backend.h"
#include "sim/fastpath/delay_only.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

namespace {

/// Thrown out of a row callback when a signal asked the run to stop after this row.
struct Interrupted {};

RunSetUp set_up(const RunPlan& plan) {
  const models::StopScope scope;
  RunSetUp out;
  if (!plan.delay_only()) {
    // A pool of the run's threads for the f* solve (the simulated backend's count).
    models::WorkerPool pool(plan.backend.traits.real_time ? 1 : plan.threads);
    out.optimum = reference_optimum(plan, &pool);
  }
  models::throw_if_stop_requested();
  // The iteration-time prediction beside the measured totals (docs/model.md §6).
  const auto started = std::chrono::steady_clock::now();
  out.theory = predictions(plan, /*convergence=*/false);
  out.predictions_seconds = seconds_since(started);
  models::throw_if_stop_requested();
  return out;
}

/// Ends a run whose loss rose above divergence_bound × f(x₀) after this row (numerical trouble:
/// status failed); `first_loss` is f(x₀), taken from row 0.
void check_divergence(const RunPlan& plan, const sim::TraceRow& row, double& first_loss) {
  if (!plan.divergence_bound) {
    return;
  }
  if (row.iteration == 0) {
    first_loss = row.loss;
    return;
  }
  const double bound = *plan.divergence_bound * std::abs(first_loss);
  if (row.loss > bound) {
    throw sim::NumericalError(fmt::format(
        "iteration {}: diverged: loss {} above divergence_bound × f(x0) = {} (the step is "
        "probably too large)",
        row.iteration,
        row.loss,
        bound));
  }
}

/// Ends the run after this row when the stop hook asks (Interrupted is caught by end_of_rows).
void stop_after_row(const StopHook& should_stop) {
  if (should_stop && should_stop()) {
    throw Interrupted{};
  }
}

/// Runs `produce_rows` and records how it ended in `outcome`: ok, failed (numerical trouble,
/// the rows so far kept) or interrupted (the stop hook asked after a row).
template <typename ProduceRows>
void end_of_rows(ProduceRows&& produce_rows, RunOutcome& outcome) {
  try {
    std::forward<ProduceRows>(produce_rows)();
  } catch (const sim::NumericalError& e) {
    outcome.status = "failed";
    outcome.error = e.what();
  } catch (const Interrupted&) {
    outcome.status = "interrupted";
  } catch (const models::StopRequested&) {
    // A real backend abandoned an iteration its workers held when the signal came.
    outcome.status = "interrupted";
  }
}

/// One delay-only trace row at cumulative time `time`; a non-finite clock is numerical trouble,
/// reported, never written.
void format_delay_only_row(fmt::memory_buffer& buffer,
                           const sim::DelayOnlyIteration& it,
                           double time) {
  if (!std::isfinite(time)) {
    throw sim::NumericalError(fmt::format(
        "iteration {}: non-finite simulated time {} (iteration time {}; delays too large)",
        it.iteration,
        time,
        it.iteration_time));
  }
  fmt::format_to(std::back_inserter(buffer),
                 "{},{},{},{},{}\n",
                 it.iteration,
                 time,
                 it.iteration_time,
                 it.workers_heard,
                 it.groups_covered);
}

RunOutcome run_delay_only(const RunPlan& plan,
                          const RunSetUp& setup,
                          TraceWriter& trace,
                          const StopHook& should_stop,
                          const ProgressHook& progress) {
  fmt::memory_buffer buffer;
  fmt::format_to(std::back_inserter(buffer),
                 "iteration,time,iteration_time,workers_heard,partitions_covered\n0,0,0,0,0\n");
  sim::DelayOnlySimulator simulator(plan.make_delays(),
                                    plan.scheme.rule,
                                    plan.scheme.code,
                                    plan.stragglers,
                                    plan.seed,
                                    plan.network,
                                    plan.sampler,
                                    plan.collective);
  double time = 0.0;
  // Totals of the rows written, for a run that ends early (interrupted or failed).
  sim::DelayOnlyStatistics written;
  RunOutcome outcome;
  sim::DelayOnlyStatistics stats;
  std::uint64_t silent = 0;
  std::uint64_t first_silent = 0;
  end_of_rows(
      [&] {
        stats = simulator.run(
            plan.iterations,
            [&](const sim::DelayOnlyIteration& it) {
              time += it.iteration_time;
              format_delay_only_row(buffer, it, time);
              if (it.workers_heard == 0 && silent++ == 0) {
                first_silent = it.iteration;
              }
              written.add(it.iteration_time);
              written.total_time += it.iteration_time;
              written.total_wall_time += it.wall_time;
              trace.add(buffer);
              if (progress) {
                progress({it.iteration, plan.iterations, time, std::nullopt});
              }
              stop_after_row(should_stop);
            },
            plan.time_budget);
      },
      outcome);
  trace.finish(buffer);
  if (outcome.status != "ok") {
    stats = written;
  }
  write_delay_only_summary(plan, setup, simulator, stats, silent, first_silent, outcome);
  return outcome;
}

/// The asynchronous loop of a plan with an update rule, on its own clock.
void train_asynchronously(const RunPlan& plan,
                          const sim::TrainingOptions& options,
                          sim::Optimizer& optimizer,
                          const std::function<void(const sim::TraceRow&)>& on_row) {
  sim::AsynchronousCluster cluster(plan.make_delays(), *plan.update, plan.seed, plan.network);
  sim::AsynchronousOptions async{options, plan.update->step, std::nullopt, plan.seed};
  if (plan.batch) {
    async.minibatch = sim::MinibatchOptions{*plan.batch, plan.seed};
  }
  sim::train_asynchronous(*plan.objective,
                          plan.test_objective.get(),
                          *plan.scheme.code,
                          optimizer,
                          cluster,
                          async,
                          on_row);
}

/// The pool and backend of a training run. execute_run owns them and lets them go only after it
/// wrote the run's files: a backend's destructor may end the process (MPI_Abort when a worker
/// rank never answers the stop), and must not lose summary.json or heard.csv.
struct TrainingResources {
  std::optional<models::WorkerPool> pool;
  std::unique_ptr<sim::Backend> backend;
};

RunOutcome run_training(const RunPlan& plan,
                        const RunSetUp& setup,
                        TraceWriter& writer,
                        const StopHook& should_stop,
                        const ProgressHook& progress,
                        TrainingResources& resources) {
  const TraceColumns columns(plan);
  fmt::memory_buffer buffer;
  const std::string header = columns.header();
  buffer.append(header.data(), header.data() + header.size());
  // Wall-clock backends time real cores: their master computes on one thread, leaving the rest
  // to the workers.
  models::WorkerPool& pool =
      resources.pool.emplace(plan.backend.traits.real_time ? 1 : plan.threads);
  resources.backend = plan.make_backend(&pool);
  sim::Backend* const backend = resources.backend.get();
  const std::vector<sim::ThreadedIterationRecord>* records = backend->real_records();
  STRAGGLERSIM_ASSERT((records != nullptr) == columns.threads,
                      "a backend keeps real records exactly when its row says it is real time");
  auto optimizer = plan.make_optimizer();
  RunOutcome outcome;
  TrainingTally tally;
  tally.seconds_per_unit = backend->seconds_per_unit();
  tally.workers.resize(plan.workers);
  TrainingDiagnostics diagnostics(plan, setup.optimum);
  double first_loss = 0.0;  // f(x₀), for divergence_bound
  end_of_rows(
      [&] {
        const auto on_row = [&](const sim::TraceRow& row) {
          write_row(plan, columns, records, row, buffer, tally);
          diagnostics.add(row);
          writer.add(buffer);
          if (progress) {
            progress({row.iteration, plan.iterations, row.time, row.loss});
          }
          stop_after_row(should_stop);
          check_divergence(plan, row, first_loss);
        };
        const sim::TrainingOptions options{plan.iterations, &pool, plan.time_budget, plan.lockstep};
        if (plan.update) {
          train_asynchronously(plan, options, *optimizer, on_row);
        } else {
          sim::train(
              *plan.objective, plan.test_objective.get(), *optimizer, *backend, options, on_row);
        }
      },
      outcome);
  writer.finish(buffer);
  if (records != nullptr) {
    outcome.heard_csv = heard_csv(*records);
    outcome.collective_csv = collective_csv(*records);
  }
  if (const auto times = backend->finish()) {
    outcome.worker_times_csv = worker_times_csv(*times, tally.last.iteration, plan.workers);
  }
  outcome.workers_csv =
      tally.workers.csv(columns.rows, columns.staleness, plan.collective.has_value());
  outcome.summary = training_summary(plan, setup, columns, outcome, tally, diagnostics);
  return outcome;
}

}  // namespace

RunOutcome execute_run(const RunPlan& plan,
                       const std::filesystem::path& out_dir,
                       const StopHook& should_stop,
                       const ProgressHook& progress) {
  const auto started = std::chrono::steady_clock::now();
  const RunSetUp setup = set_up(plan);
  std::filesystem::create_directories(out_dir);
  // summary.json, written last and atomically, marks a complete run; trace.csv grows row by row.
  // The files a run writes at its end go first, so that none of an earlier run's (a training
  // run's workers.csv under a delay-only one, a real backend's heard.csv) stays beside this one.
  for (const char* name :
       {"summary.json", "workers.csv", "heard.csv", "worker_times.csv", "collective.csv"}) {
    remove_regular_file(out_dir / name);
  }
  TraceWriter trace(out_dir / "trace.csv");
  TrainingResources resources;  // outlives the writes below (TrainingResources)
  const auto iterations_started = std::chrono::steady_clock::now();
  RunOutcome outcome = plan.delay_only()
                           ? run_delay_only(plan, setup, trace, should_stop, progress)
                           : run_training(plan, setup, trace, should_stop, progress, resources);
  const double iterations_seconds = seconds_since(iterations_started) - trace.seconds();
  // Every row may be finite while a total or a variance of the times overflows (delays near
  // 1e300): numerical trouble too, not an "ok" run with an infinity in its summary.
  for (const auto& [key, value] : outcome.summary.items()) {
    if (outcome.status == "ok" && key.find("time") != std::string::npos &&
        value.is_number_float() && !std::isfinite(value.get<double>())) {
      outcome.status = "failed";
      outcome.error = fmt::format("non-finite {} (delays or data too large)", key);
      outcome.summary["status"] = outcome.status;
      outcome.summary["error"] = outcome.error;
    }
  }
  // Measured, not simulated: excluded from every same-bytes comparison (docs/model.md §7).
  outcome.summary["plan_seconds"] =
      plan.plan_seconds ? nlohmann::json(*plan.plan_seconds) : nlohmann::json(nullptr);
  outcome.summary["predictions_seconds"] = setup.predictions_seconds;
  outcome.summary["iterations_seconds"] = iterations_seconds;
  outcome.summary["writing_seconds"] = trace.seconds();
  outcome.summary["wall_clock_seconds"] = seconds_since(started);
  outcome.summary["data_bytes_read"] =
      plan.data_bytes_before_plan
          ? nlohmann::json(models::data_bytes_read() - *plan.data_bytes_before_plan)
          : nlohmann::json(nullptr);
  if (!outcome.heard_csv.empty()) {
    write_file_atomically(out_dir / "heard.csv", outcome.heard_csv);
  }
  if (!outcome.worker_times_csv.empty()) {
    write_file_atomically(out_dir / "worker_times.csv", outcome.worker_times_csv);
  }
  if (!outcome.workers_csv.empty()) {
    write_file_atomically(out_dir / "workers.csv", outcome.workers_csv);
  }
  if (!outcome.collective_csv.empty()) {
    write_file_atomically(out_dir / "collective.csv", outcome.collective_csv);
  }
  write_file_atomically(out_dir / "summary.json", outcome.summary.dump(2) + "\n");
  return outcome;
}

}  // namespace stragglersim::experiments

#include "experiments/run_output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <Eigen/Core>
#include <boost/version.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "experiments/build_info.h"
#include "experiments/config/predictions.h"
#include "models/metrics.h"
#include "sim/delay_only.h"
#include "sim/simulated_backend.h"
#include "sim/threaded_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const auto tmp =
      path.parent_path() /
      fmt::format(".{}.tmp-{}", path.filename().string(), static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw std::runtime_error(fmt::format("{}: cannot write file", path.string()));
    }
  }
  std::filesystem::rename(tmp, path);
}

nlohmann::json build_info() {
  return {
      {"git_revision", kGitRevision},
      {"version", kVersion},
      {"compiler", fmt::format("{} {}", kCompilerId, kCompilerVersion)},
      {"boost",
       fmt::format(
           "{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100)},
      {"eigen",
       fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION)},
      {"fmt",
       fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
      {"nlohmann_json",
       fmt::format("{}.{}.{}",
                   NLOHMANN_JSON_VERSION_MAJOR,
                   NLOHMANN_JSON_VERSION_MINOR,
                   NLOHMANN_JSON_VERSION_PATCH)},
  };
}

namespace {

/// Welford mean / variance of iteration times.
struct Moments {
  std::uint64_t n = 0;
  double mean = 0.0;
  double m2 = 0.0;
  void add(double x) {
    ++n;
    const double delta = x - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (x - mean);
  }
  [[nodiscard]] double sd() const {
    return n > 1 ? std::sqrt(m2 / static_cast<double>(n - 1)) : 0.0;
  }
};

nlohmann::json base_summary(const RunPlan& plan) {
  nlohmann::json s;
  s["name"] = plan.name;
  s["seed"] = plan.seed;
  s["config"] = plan.resolved;
  s["build"] = build_info();
  // The iteration-time prediction beside the measured totals (DESIGN.md §2).
  s["theory"] = predictions(plan, /*convergence=*/false);
  return s;
}

RunOutcome run_delay_only(const RunPlan& plan, std::string& trace) {
  trace = "iteration,time,iteration_time,workers_heard,partitions_covered\n0,0,0,0,0\n";
  sim::DelayOnlySimulator simulator(
      plan.make_delays(), plan.scheme.rule, plan.scheme.code, plan.stragglers, plan.seed);
  double time = 0.0;
  fmt::memory_buffer buffer;
  const auto stats = simulator.run(plan.iterations, [&](const sim::DelayOnlyIteration& it) {
    time += it.iteration_time;
    fmt::format_to(std::back_inserter(buffer),
                   "{},{},{},{},{}\n",
                   it.iteration,
                   time,
                   it.iteration_time,
                   it.workers_heard,
                   it.groups_covered);
  });
  trace.append(buffer.data(), buffer.size());
  RunOutcome outcome;
  outcome.summary = base_summary(plan);
  outcome.summary["status"] = "ok";
  outcome.summary["iterations"] = stats.iterations;
  outcome.summary["total_time"] = stats.total_time;
  outcome.summary["total_wall_time"] = stats.total_wall_time;
  outcome.summary["mean_iteration_time"] = stats.mean;
  outcome.summary["iteration_time_sd"] = std::sqrt(stats.variance());
  outcome.summary["iteration_time_standard_error"] = stats.standard_error();
  if (stats.groups > 0) {
    outcome.summary["group_erasure_fraction"] = stats.erasure_fraction();
  }
  outcome.summary["fast_path"] = simulator.uses_selection();
  return outcome;
}

/// The plan's backend; `records` and `mpi` point into it for the real backends.
std::unique_ptr<sim::Backend> make_backend(
    const RunPlan& plan,
    const std::vector<sim::ThreadedIterationRecord>*& records,
    sim::MpiBackend*& mpi) {
  switch (plan.backend) {
    case BackendKind::kThreads: {
      auto t = std::make_unique<sim::ThreadedBackend>(
          plan.objective, plan.scheme, plan.make_delays(), plan.seed, plan.threaded);
      records = &t->records();
      return t;
    }
    case BackendKind::kMpi: {
      auto m = std::make_unique<sim::MpiBackend>(
          plan.scheme, plan.objective->dimension(), plan.make_delays(), plan.seed, plan.mpi);
      records = &m->records();
      mpi = m.get();
      return m;
    }
    case BackendKind::kSimulated:
      break;
  }
  auto cluster = std::make_unique<sim::SimulatedCluster>(
      plan.make_delays(), plan.scheme.rule, plan.stragglers, plan.seed);
  return std::make_unique<sim::SimulatedBackend>(plan.objective, plan.scheme, std::move(cluster));
}

/// worker_times.csv (inject false): one row per iteration 1..iterations and worker 0..n-1 with
/// the worker's measured compute seconds, empty when it never finished (abandoned under cancel
/// or drain, or faulty): a censored observation.
std::string worker_times_csv(const std::vector<sim::WorkerTime>& times,
                             std::uint64_t iterations,
                             int workers) {
  const auto n = static_cast<std::size_t>(workers);
  std::vector<double> grid(static_cast<std::size_t>(iterations) * n,
                           std::numeric_limits<double>::quiet_NaN());
  for (const auto& t : times) {
    if (t.iteration >= 1 && t.iteration <= iterations) {
      grid[static_cast<std::size_t>(t.iteration - 1) * n + static_cast<std::size_t>(t.worker)] =
          t.seconds;
    }
  }
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "iteration,worker,seconds\n");
  for (std::size_t k = 0; k < grid.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{},{},", k / n + 1, k % n);
    if (!std::isnan(grid[k])) {
      fmt::format_to(std::back_inserter(out), "{}", grid[k]);
    }
    out.push_back('\n');
  }
  return {out.data(), out.size()};
}

/// heard.csv of a real backend: per iteration the real and the simulated heard sets (workers in
/// arrival order, separated by spaces), whether they hold the same workers, the near-tie gap
/// (simulated seconds) and the real and simulated stop times.
std::string heard_csv(const std::vector<sim::ThreadedIterationRecord>& records) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "iteration,same_set,near_tie_gap,real_iteration_time,iteration_time,heard,"
                 "simulated_heard\n");
  for (const auto& r : records) {
    fmt::format_to(std::back_inserter(out),
                   "{},{},{},{},{},{},{}\n",
                   r.iteration,
                   r.same_set ? 1 : 0,
                   r.near_tie_gap,
                   r.real_stop_seconds,
                   r.simulated_stop,
                   fmt::join(r.heard, " "),
                   fmt::join(r.simulated_heard, " "));
  }
  return {out.data(), out.size()};
}

RunOutcome run_training(const RunPlan& plan, std::string& trace) {
  const bool has_test = plan.test_objective != nullptr;
  const bool drain = plan.stragglers == sim::StragglerPolicy::kDrain;
  trace =
      "iteration,time,iteration_time,loss,grad_norm,estimate_error,workers_heard,"
      "partitions_covered";
  if (has_test) {
    trace += ",test_loss,test_metric";
  }
  const bool has_auc = has_test && models::reports_auc(plan.objective->loss());
  if (has_auc) {
    trace += ",test_auc";
  }
  if (drain) {
    trace += ",wall_time";
  }
  // The real backends (threads, mpi) record real wall-clock beside the simulated clock of the
  // same delays: real_time = cumulative real seconds of the iterations (broadcast to the
  // master's return, drained waits included), real_iteration_time = real seconds from broadcast
  // to the stop, real_wall_time = real seconds from the first broadcast to this iteration's
  // return, everything the master did in between included.
  const bool threads = plan.backend != BackendKind::kSimulated;
  if (threads) {
    trace += ",real_time,real_iteration_time,real_wall_time";
  }
  trace += '\n';

  sim::MpiBackend* mpi = nullptr;
  const std::vector<sim::ThreadedIterationRecord>* records = nullptr;
  std::unique_ptr<sim::Backend> backend_owner = make_backend(plan, records, mpi);
  sim::Backend& backend = *backend_owner;
  double real_stop_sum = 0.0;
  double real_wall_sum = 0.0;
  std::size_t heard_same = 0;
  auto optimizer = plan.make_optimizer();

  RunOutcome outcome;
  Moments times;
  double best = std::numeric_limits<double>::infinity();
  std::optional<double> time_to_target;
  std::optional<std::uint64_t> iterations_to_target;
  double error_sum = 0.0;
  double heard_sum = 0.0;
  sim::TraceRow last;
  fmt::memory_buffer buffer;
  auto on_row = [&](const sim::TraceRow& row) {
    fmt::format_to(std::back_inserter(buffer),
                   "{},{},{},{},{},{},{},{}",
                   row.iteration,
                   row.time,
                   row.iteration_time,
                   row.loss,
                   row.grad_norm,
                   row.estimate_error,
                   row.workers_heard,
                   row.partitions_covered);
    if (has_test) {
      fmt::format_to(std::back_inserter(buffer), ",{},{}", *row.test_loss, *row.test_metric);
    }
    if (has_auc) {
      fmt::format_to(std::back_inserter(buffer), ",{}", *row.test_auc);
    }
    if (drain) {
      fmt::format_to(std::back_inserter(buffer), ",{}", row.wall_time);
    }
    if (threads) {
      // on_row(t) runs right after iterate(t), so the last record is this row's iteration.
      const bool has_record = row.iteration > 0 && !records->empty();
      const double real_stop = has_record ? records->back().real_stop_seconds : 0.0;
      if (has_record) {
        real_stop_sum += real_stop;
        real_wall_sum += records->back().real_wall_seconds;
        heard_same += records->back().same_set ? 1U : 0U;
      }
      fmt::format_to(
          std::back_inserter(buffer), ",{},{},{}", row.real_seconds, real_stop, real_wall_sum);
    }
    buffer.push_back('\n');
    if (row.iteration > 0) {
      times.add(row.iteration_time);
      error_sum += row.estimate_error;
      heard_sum += row.workers_heard;
    }
    best = std::min(best, row.loss);
    if (plan.target_loss && !time_to_target && row.loss <= *plan.target_loss) {
      time_to_target = row.time;
      iterations_to_target = row.iteration;
    }
    last = row;
  };
  try {
    sim::train(*plan.objective,
               plan.test_objective.get(),
               *optimizer,
               backend,
               sim::TrainingOptions{plan.iterations},
               on_row);
  } catch (const sim::NumericalError& e) {
    outcome.status = "failed";
    outcome.error = e.what();
  }
  trace.append(buffer.data(), buffer.size());
  if (records != nullptr) {
    outcome.heard_csv = heard_csv(*records);
  }
  if (mpi != nullptr && !plan.mpi.inject) {
    mpi->shutdown();  // collects the results still in flight, and their compute times
    outcome.worker_times_csv =
        worker_times_csv(mpi->worker_times(), last.iteration, mpi->workers());
  }

  auto& s = outcome.summary;
  s = base_summary(plan);
  s["status"] = outcome.status;
  if (!outcome.error.empty()) {
    s["error"] = outcome.error;
  }
  s["step"] = plan.step;
  s["smoothness"] = plan.smoothness;
  s["iterations"] = last.iteration;
  s["total_time"] = last.time;
  s["mean_iteration_time"] = times.mean;
  s["iteration_time_sd"] = times.sd();
  s["final_loss"] = last.loss;
  s["best_loss"] = best;
  s["final_grad_norm"] = last.grad_norm;
  if (times.n > 0) {
    s["mean_estimate_error"] = error_sum / static_cast<double>(times.n);
    s["mean_workers_heard"] = heard_sum / static_cast<double>(times.n);
  }
  if (has_test && last.test_metric) {
    s["final_test_loss"] = *last.test_loss;
    s["final_test_metric"] = *last.test_metric;
    s["test_metric"] = std::string(plan.objective->loss().metric_name());
    if (last.test_auc) {
      s["final_test_auc"] = *last.test_auc;
    }
  }
  if (plan.target_loss) {
    s["target_loss"] = *plan.target_loss;
    s["time_to_target"] = time_to_target ? nlohmann::json(*time_to_target) : nlohmann::json();
    s["iterations_to_target"] =
        iterations_to_target ? nlohmann::json(*iterations_to_target) : nlohmann::json();
  }
  if (drain) {
    s["total_wall_time"] = last.wall_time;
  }
  if (threads) {
    s["seconds_per_unit"] =
        mpi != nullptr ? plan.mpi.master.seconds_per_unit : plan.threaded.seconds_per_unit;
    s["total_real_time"] = last.real_seconds;
    s["total_real_wall_time"] = real_wall_sum;
    s["total_real_stop_time"] = real_stop_sum;
    if (last.iteration > 0) {
      const auto t = static_cast<double>(last.iteration);
      s["mean_real_iteration_time"] = real_stop_sum / t;
      s["heard_same_as_simulated"] = static_cast<double>(heard_same) / t;
    }
  }
  return outcome;
}

}  // namespace

RunOutcome execute_run(const RunPlan& plan, const std::filesystem::path& out_dir) {
  std::string trace;
  RunOutcome outcome = plan.delay_only() ? run_delay_only(plan, trace) : run_training(plan, trace);
  std::filesystem::create_directories(out_dir);
  write_file_atomically(out_dir / "trace.csv", trace);
  if (!outcome.heard_csv.empty()) {
    write_file_atomically(out_dir / "heard.csv", outcome.heard_csv);
  }
  if (!outcome.worker_times_csv.empty()) {
    write_file_atomically(out_dir / "worker_times.csv", outcome.worker_times_csv);
  }
  write_file_atomically(out_dir / "summary.json", outcome.summary.dump(2) + "\n");
  return outcome;
}

}  // namespace stragglersim::experiments

// The sweep executor (experiments/sweep.h): validates the runs not yet complete, then runs them on
// `jobs` threads with shared read-only data sets, and writes the index of a finished sweep.

#include "experiments/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "experiments/config/backend_registry.h"
#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_output.h"
#include "experiments/sweep_folder.h"

namespace stragglersim::experiments {

namespace {

namespace fs = std::filesystem;

/// Label naming a run in its config errors: "<sweep file> run 3 (/code/d = 4, repetition 0)".
std::string run_label(const SweepSpec& spec, const SweepRun& run) {
  std::string what = run.scheme.empty() ? std::string() : fmt::format("scheme {}, ", run.scheme);
  for (std::size_t p = 0; p < spec.parameters.size(); ++p) {
    what += fmt::format("{} = {}, ", spec.parameters[p], run.values[p].dump());
  }
  return fmt::format("{} run {} ({}repetition {})", spec.file, run.index, what, run.repetition);
}

/// Objectives shared between runs over the same data, loss, seed and partitions: one read-only
/// copy of each data set in memory, safe to read from many threads. Entries are weak: a data set
/// lives as long as some plan holds it. Validated plans are kept for execution only for the
/// first `max_kept` distinct data sets (a sweep over codes keeps all its plans); the others are
/// planned again when they run, so memory stays bounded when repetitions change the data.
class ObjectiveCache {
 public:
  explicit ObjectiveCache(std::size_t max_kept) : max_kept_(max_kept) {}

  /// Points `plan` at an equal objective already alive, if any. Returns whether the plan may be
  /// kept until it runs.
  bool share(RunPlan& plan, const fs::path& base_dir) {
    if (plan.delay_only()) {
      return true;
    }
    const std::string key = nlohmann::json{plan.resolved.value("data", nlohmann::json()),
                                           plan.resolved.value("loss", nlohmann::json()),
                                           plan.data_seed,
                                           plan.partitions,
                                           base_dir.string()}
                                .dump();
    const std::lock_guard lock(mutex_);
    Entry& entry = entries_[key];
    if (auto train = entry.train.lock()) {
      plan.objective = std::move(train);
      plan.test_objective = entry.test.lock();
    } else {
      entry.train = plan.objective;
      entry.test = plan.test_objective;
    }
    if (kept_.contains(key)) {
      return true;
    }
    if (kept_.size() < max_kept_) {
      kept_.insert(key);
      return true;
    }
    return false;
  }

  /// Data sets and β shared by plan_run itself, so a run over a data set already alive pays
  /// no set-up (docs/sweeps.md).
  SetupCache setup;

 private:
  struct Entry {
    std::weak_ptr<const models::Objective> train;
    std::weak_ptr<const models::Objective> test;
  };
  std::size_t max_kept_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::set<std::string> kept_;
};

/// Runs `body(i)` for i in [0, count) on `jobs` threads, in increasing i per claim.
template <typename Body>
void parallel_for(std::size_t count, int jobs, Body body) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      if (!body(i)) {
        return;
      }
    }
  };
  const auto threads = static_cast<std::size_t>(std::max(1, jobs));
  if (threads == 1 || count <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(std::min(threads, count));
  for (std::size_t t = 0; t < std::min(threads, count); ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // the system starts no more threads: fewer jobs, the same runs
    }
  }
  if (pool.empty()) {
    worker();
  }
  for (auto& t : pool) {
    t.join();
  }
}

/// A backend that cannot run inside this sweep: one of its own mpirun (traits.mpi), or one timed
/// on real cores (shares_cores false) in an MPI sweep, whose ranks may share a node's cores.
void refuse_in_sweep(const SweepSpec& spec,
                     const SweepRun& run,
                     const BackendRow& backend,
                     int ranks) {
  const auto rows = backend_factories();
  const auto names = [&rows](bool shared_cores_only) {
    return quoted_names(rows, [shared_cores_only](const BackendRow& row) {
      return !row.traits.mpi && row.unavailable.empty() &&
             (row.traits.shares_cores || !shared_cores_only);
    });
  };
  if (backend.traits.mpi) {
    throw ConfigError(fmt::format(
        "{}:/backend/kind: the {} backend runs one process per worker under its own mpirun; got "
        "\"{}\" in a sweep; expected {}, or the run on its own (mpirun -np workers+1 stragglersim "
        "run)",
        run_label(spec, run),
        backend.name,
        backend.name,
        names(false)));
  }
  if (ranks > 1 && !backend.traits.shares_cores) {
    throw ConfigError(fmt::format(
        "{}:/backend/kind: {}-backend runs are timed on real cores that other ranks may "
        "share; got \"{}\" in an MPI sweep of {} ranks; expected {}, or the "
        "sweep without mpirun (--jobs runs them one at a time)",
        run_label(spec, run),
        backend.name,
        backend.name,
        ranks,
        names(true)));
  }
}

/// The cores one run may use (docs/sweeps.md): the machine's cores divided among the runs that
/// execute at once, min(jobs, runs), so that runs × threads never exceeds the cores; at least 1.
int threads_per_run(int jobs, std::size_t runs) {
  const auto at_once =
      std::max<std::size_t>(1, std::min(static_cast<std::size_t>(std::max(1, jobs)), runs));
  return std::max(1, hardware_cores() / static_cast<int>(at_once));
}

/// Validates the runs `todo` on `jobs` threads (plans kept in `plans` as the cache allows);
/// throws the error of the first bad run in index order.
void validate_runs(const SweepSpec& spec,
                   const std::vector<std::size_t>& todo,
                   const SweepOptions& options,
                   ObjectiveCache& cache,
                   std::vector<std::unique_ptr<RunPlan>>& plans) {
  const int threads = threads_per_run(options.jobs, todo.size());
  std::vector<std::string> errors(todo.size());
  std::vector<char> config_error(todo.size(), 0);
  std::atomic<std::size_t> first_error{todo.size()};
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (options.stop != nullptr && options.stop->load()) {
      return false;
    }
    if (t > first_error.load()) {
      return true;
    }
    const SweepRun& run = spec.runs[todo[t]];
    try {
      auto plan = std::make_unique<RunPlan>(
          plan_run(run.config, run_label(spec, run), spec.base_dir, {threads, &cache.setup}));
      refuse_in_sweep(spec, run, plan->backend, 1);
      if (cache.share(*plan, spec.base_dir)) {
        plans[run.index] = std::move(plan);
      }
    } catch (const std::exception& e) {
      // A thread must not throw; the error is reported from here, lowest run index first.
      errors[t] = e.what();
      config_error[t] = dynamic_cast<const ConfigError*>(&e) != nullptr ? 1 : 0;
      std::size_t seen = first_error.load();
      while (t < seen && !first_error.compare_exchange_weak(seen, t)) {
      }
    }
    return true;
  });
  if (const std::size_t bad = first_error.load(); bad < todo.size()) {
    if (config_error[bad] != 0) {
      throw ConfigError(errors[bad]);
    }
    throw std::runtime_error(
        fmt::format("{}: {}", run_label(spec, spec.runs[todo[bad]]), errors[bad]));
  }
}

/// What every run of execute_runs shares.
struct RunContext {
  int threads;
  const SweepOptions& options;
  ObjectiveCache& cache;
  /// Held exclusively by a run whose backend does not share the cores, shared by the others.
  std::shared_mutex& cores;
};

/// Writes `run`'s folder `dir` and config, plans it again if its plan was not kept (validated,
/// not kept: the same config gives the same plan), executes it, and lets the plan go.
RunOutcome plan_and_execute(const SweepSpec& spec,
                            const SweepRun& run,
                            const fs::path& dir,
                            const RunContext& context,
                            std::unique_ptr<RunPlan>& plan) {
  fs::create_directories(dir);
  remove_stale_temporaries(dir);
  write_file_atomically(dir / "config.json", config_text(run));
  if (!plan) {
    plan = std::make_unique<RunPlan>(plan_run(
        run.config, run_label(spec, run), spec.base_dir, {context.threads, &context.cache.setup}));
    (void)context.cache.share(*plan, spec.base_dir);
  }
  plan->f_star_cache = context.options.f_star_cache;
  RunOutcome outcome;
  if (!plan->backend.traits.shares_cores) {
    const std::unique_lock alone(context.cores);
    outcome = execute_run(*plan, dir);
  } else {
    const std::shared_lock shared(context.cores);
    outcome = execute_run(*plan, dir);
  }
  plan.reset();
  return outcome;
}

/// Runs `todo` on `jobs` threads; returns how many ran. Threads-backend runs take the lock
/// exclusively: they are timed on real cores and must not share them with other runs.
std::size_t execute_runs(const SweepSpec& spec,
                         const fs::path& out_dir,
                         const std::vector<std::size_t>& todo,
                         const SweepOptions& options,
                         ObjectiveCache& cache,
                         std::vector<std::unique_ptr<RunPlan>>& plans,
                         std::size_t skipped,
                         std::size_t total,
                         std::vector<WarningCount>& warnings) {
  const int threads = threads_per_run(options.jobs, todo.size());
  std::mutex mutex;
  std::shared_mutex cores;
  std::size_t ran = 0;
  std::optional<std::string> failure;
  int failure_status = 1;
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (options.stop != nullptr && options.stop->load()) {
      return false;
    }
    {
      const std::lock_guard lock(mutex);
      if (failure) {
        return false;
      }
    }
    const SweepRun& run = spec.runs[todo[t]];
    const fs::path dir = out_dir / run.folder;
    try {
      const RunOutcome outcome =
          plan_and_execute(spec, run, dir, {threads, options, cache, cores}, plans[run.index]);
      const std::lock_guard lock(mutex);
      count_warnings(outcome.summary, run.folder, warnings);
      ++ran;
      if (options.progress) {
        options.progress(skipped + ran, skipped, total);
      }
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex);
      if (!failure) {
        failure = fmt::format("{}: {}", dir.string(), e.what());
        failure_status = exit_status_of(e);
      }
      return false;
    }
    return true;
  });
  if (failure) {
    // The run's own status (a failed write is 2, docs/reliability.md): only a bug is 1.
    if (failure_status != 1) {
      throw Error(*failure, failure_status);
    }
    throw std::runtime_error(*failure);
  }
  return ran;
}

}  // namespace

RunCheck check_run(const SweepSpec& spec, const SweepRun& run, int ranks) {
  RunCheck check;
  try {
    const RunPlan plan =
        plan_run(run.config, run_label(spec, run), spec.base_dir, {.max_threads = 1});
    refuse_in_sweep(spec, run, plan.backend, ranks);
  } catch (const ConfigError& e) {
    check.error = e.what();
    check.config_error = true;
  } catch (const std::exception& e) {
    check.error = fmt::format("{}: {}", run_label(spec, run), e.what());
  }
  return check;
}

bool execute_sweep_run(const SweepSpec& spec,
                       const SweepRun& run,
                       const std::filesystem::path& out_dir,
                       const std::filesystem::path& f_star_cache) {
  const fs::path dir = out_dir / run.folder;
  fs::create_directories(dir);
  // Only the process running this run writes into its folder: temporaries are a killed one's.
  remove_stale_temporaries(dir);
  write_file_atomically(dir / "config.json", config_text(run));
  // Ranks may share a node's cores: each run computes on one thread, as --jobs N would.
  RunPlan plan = plan_run(run.config, run_label(spec, run), spec.base_dir, {.max_threads = 1});
  plan.f_star_cache = f_star_cache;
  const RunOutcome outcome = execute_run(plan, dir);
  print_warnings(outcome.summary, run.folder + ": ");
  return outcome.status != "ok";
}

SweepResult run_sweep(const SweepSpec& spec,
                      const std::filesystem::path& out_dir,
                      const SweepOptions& options) {
  if (needs_tuning(spec)) {
    return run_tuned_sweep(spec, out_dir, options);
  }
  SweepResult result;
  FolderLock lock = lock_existing_sweep_folder(out_dir, options.shard.count == 1);
  result.stale = check_sweep_folder(spec, out_dir);
  const std::vector<std::size_t> todo = pending_runs(spec, out_dir, options.shard, &result.skipped);
  const std::size_t share = todo.size() + result.skipped;
  result.total = spec.runs.size();

  // Validate every remaining run before anything is written; report the first bad run.
  std::vector<std::unique_ptr<RunPlan>> plans(spec.runs.size());
  ObjectiveCache cache(static_cast<std::size_t>(std::max(2, options.jobs)));
  validate_runs(spec, todo, options, cache, plans);
  if (options.stop != nullptr && options.stop->load()) {
    result.interrupted = true;
    return result;
  }
  // Shards may write into the folder at the same time: only a whole sweep removes temporaries.
  record_sweep_folder(spec, out_dir, options.shard.count == 1, lock);
  if (options.progress) {
    options.progress(result.skipped, result.skipped, share);
  }
  result.ran = execute_runs(
      spec, out_dir, todo, options, cache, plans, result.skipped, share, result.warnings);
  if (result.ran + result.skipped < share) {
    result.interrupted = true;
    return result;
  }
  if (options.shard.count == 1) {
    result.failed = write_sweep_index(spec, out_dir);
  }
  return result;
}

}  // namespace stragglersim::experiments

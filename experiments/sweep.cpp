// The sweep executor (experiments/sweep.h): validates the runs not yet complete, then runs them on
// `jobs` threads with shared read-only data sets, and writes the index of a finished sweep.

#include "experiments/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
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
#include "experiments/config/memory_budget.h"
#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_output.h"
#include "experiments/sweep_folder.h"
#include "experiments/sweep_lockstep.h"

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
    const std::string key = objective_key(plan, base_dir);
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
                   std::vector<std::unique_ptr<RunPlan>>& plans,
                   std::vector<LockstepInfo>& infos) {
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
      infos[run.index] = lockstep_info(*plan, spec.base_dir);
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
  /// Held exclusively by a run whose backend does not share the cores and by a lock-step group
  /// (its passes run on every core), shared by the others.
  std::shared_mutex& cores;
};

/// Writes `run`'s folder `dir` and config, and plans it again on `threads` threads if its plan
/// was not kept (validated, not kept: the same config gives the same plan).
void prepare_run(const SweepSpec& spec,
                 const SweepRun& run,
                 const fs::path& dir,
                 const RunContext& context,
                 int threads,
                 std::unique_ptr<RunPlan>& plan) {
  fs::create_directories(dir);
  remove_stale_temporaries(dir);
  write_file_atomically(dir / "config.json", config_text(run));
  if (!plan) {
    plan = std::make_unique<RunPlan>(
        plan_run(run.config, run_label(spec, run), spec.base_dir, {threads, &context.cache.setup}));
    (void)context.cache.share(*plan, spec.base_dir);
  }
  plan->f_star_cache = context.options.f_star_cache;
}

/// Prepares `run`, executes it alone, and lets the plan go.
RunOutcome plan_and_execute(const SweepSpec& spec,
                            const SweepRun& run,
                            const fs::path& dir,
                            const RunContext& context,
                            std::unique_ptr<RunPlan>& plan) {
  prepare_run(spec, run, dir, context, context.threads, plan);
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

/// The finished runs of execute_runs: counted, reported, and the first failure kept.
class RunTally {
 public:
  RunTally(const SweepOptions& options,
           std::size_t skipped,
           std::size_t total,
           std::vector<WarningCount>& warnings)
      : options_(options), skipped_(skipped), total_(total), warnings_(warnings) {}

  void done(const SweepRun& run, const RunOutcome& outcome) {
    const std::lock_guard lock(mutex_);
    count_warnings(outcome.summary, run.folder, warnings_);
    ++ran_;
    if (options_.progress) {
      options_.progress(skipped_ + ran_, skipped_, total_);
    }
  }
  void fail(const fs::path& dir, const std::exception& e) {
    const std::lock_guard lock(mutex_);
    if (!failure_) {
      failure_ = fmt::format("{}: {}", dir.string(), e.what());
      status_ = exit_status_of(e);
    }
  }
  [[nodiscard]] bool failed() {
    const std::lock_guard lock(mutex_);
    return failure_.has_value();
  }
  void log(const std::string& line) {
    const std::lock_guard lock(mutex_);
    if (options_.log) {
      options_.log(line);
    }
  }
  /// How many ran; throws the first failure.
  [[nodiscard]] std::size_t finish() const {
    if (failure_) {
      // The run's own status (a failed write is 2, docs/reliability.md): only a bug is 1.
      if (status_ != 1) {
        throw Error(*failure_, status_);
      }
      throw std::runtime_error(*failure_);
    }
    return ran_;
  }

 private:
  const SweepOptions& options_;
  std::size_t skipped_;
  std::size_t total_;
  std::vector<WarningCount>& warnings_;
  std::mutex mutex_;
  std::size_t ran_ = 0;
  std::optional<std::string> failure_;
  int status_ = 1;
};

/// Prepares the runs of `unit` with one thread each (a group's passes use its own pool); null
/// after a failure, which `tally` keeps.
std::optional<std::vector<std::unique_ptr<RunPlan>*>> prepare_members(
    const SweepSpec& spec,
    const fs::path& out_dir,
    const SweepUnit& unit,
    const RunContext& context,
    std::vector<std::unique_ptr<RunPlan>>& plans,
    RunTally& tally) {
  std::vector<std::unique_ptr<RunPlan>*> members;
  for (const std::size_t index : unit.runs) {
    const SweepRun& run = spec.runs[index];
    try {
      prepare_run(spec, run, out_dir / run.folder, context, 1, plans[index]);
      members.push_back(&plans[index]);
    } catch (const std::exception& e) {
      tally.fail(out_dir / run.folder, e);
      return std::nullopt;
    }
  }
  return members;
}

/// Runs the members whose `together` is set on threads of their own as members of `group`
/// (joined already), then the others alone; returns how many ran in the group. A member whose
/// thread cannot start runs alone.
std::size_t run_members(const std::vector<std::unique_ptr<RunPlan>*>& members,
                        std::vector<char>& together,
                        sim::LockstepGroup& group,
                        const std::function<void(std::size_t)>& execute) {
  std::vector<std::thread> threads;
  for (std::size_t m = 0; m < members.size(); ++m) {
    if (together[m] == 0) {
      continue;
    }
    try {
      threads.emplace_back([&execute, &group, m] {
        execute(m);
        group.leave();
      });
    } catch (const std::system_error&) {
      // The system starts no more threads: this run runs alone, after the group.
      (**members[m]).lockstep = nullptr;
      together[m] = 0;
      group.leave();
    }
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (std::size_t m = 0; m < members.size(); ++m) {
    if (together[m] == 0) {
      execute(m);
    }
  }
  return threads.size();
}

/// Executes the runs of one lock-step group (docs/sweeps.md "Lock-step groups"), each on a
/// thread of its own, their passes shared. Holds the cores exclusively: the passes run on all
/// of them.
void execute_group(const SweepSpec& spec,
                   const fs::path& out_dir,
                   const SweepUnit& unit,
                   std::size_t number,
                   const RunContext& context,
                   std::vector<std::unique_ptr<RunPlan>>& plans,
                   RunTally& tally) {
  const std::unique_lock alone(context.cores);
  const auto members = prepare_members(spec, out_dir, unit, context, plans, tally);
  if (!members) {
    return;
  }
  const RunPlan& first = **members->front();
  models::WorkerPool pool(hardware_cores());
  sim::LockstepGroup group(first.objective, first.test_objective, &pool);
  std::vector<char> together(members->size(), 0);
  for (std::size_t m = 0; m < members->size(); ++m) {
    RunPlan& plan = **(*members)[m];
    // Planned runs of one key share the objective the cache holds; only those share passes.
    together[m] = plan.objective == first.objective ? 1 : 0;
    if (together[m] != 0) {
      plan.threads = 1;  // results never depend on it; the group's passes use the pool
      plan.lockstep = &group;
      group.join();
    }
  }
  const std::size_t ran = run_members(*members, together, group, [&](std::size_t m) {
    const SweepRun& run = spec.runs[unit.runs[m]];
    try {
      tally.done(run, execute_run(**(*members)[m], out_dir / run.folder));
    } catch (const std::exception& e) {
      tally.fail(out_dir / run.folder, e);
    }
  });
  tally.log(describe_group_passes(
      number,
      ran,
      group.statistics(),
      static_cast<double>(first.objective->data().stored_bytes()),
      first.test_objective ? static_cast<double>(first.test_objective->data().stored_bytes())
                           : 0.0));
  for (auto* member : *members) {
    member->reset();
  }
}

/// Runs the units on `jobs` threads; returns how many runs ran. Threads-backend runs and
/// lock-step groups take the cores exclusively.
std::size_t execute_runs(const SweepSpec& spec,
                         const fs::path& out_dir,
                         const std::vector<SweepUnit>& units,
                         const SweepOptions& options,
                         ObjectiveCache& cache,
                         std::vector<std::unique_ptr<RunPlan>>& plans,
                         std::size_t skipped,
                         std::size_t total,
                         std::vector<WarningCount>& warnings) {
  const int threads = threads_per_run(options.jobs, units.size());
  std::shared_mutex cores;
  const RunContext context{threads, options, cache, cores};
  RunTally tally(options, skipped, total, warnings);
  // Groups are numbered in unit order, as the log's list of them is.
  std::vector<std::size_t> numbers(units.size(), 0);
  std::size_t groups = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    numbers[u] = units[u].group ? ++groups : 0;
  }
  parallel_for(units.size(), options.jobs, [&](std::size_t u) {
    if ((options.stop != nullptr && options.stop->load()) || tally.failed()) {
      return false;
    }
    const SweepUnit& unit = units[u];
    if (unit.group) {
      execute_group(spec, out_dir, unit, numbers[u], context, plans, tally);
      return !tally.failed();
    }
    const SweepRun& run = spec.runs[unit.runs.front()];
    const fs::path dir = out_dir / run.folder;
    try {
      tally.done(run, plan_and_execute(spec, run, dir, context, plans[run.index]));
    } catch (const std::exception& e) {
      tally.fail(dir, e);
      return false;
    }
    return true;
  });
  return tally.finish();
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
  std::vector<LockstepInfo> infos(spec.runs.size());
  validate_runs(spec, todo, options, cache, plans, infos);
  if (options.stop != nullptr && options.stop->load()) {
    result.interrupted = true;
    return result;
  }
  // Shards may write into the folder at the same time: only a whole sweep removes temporaries.
  record_sweep_folder(spec, out_dir, options.shard.count == 1, lock);
  if (options.progress) {
    options.progress(result.skipped, result.skipped, share);
  }
  const std::vector<SweepUnit> units = form_units(todo, infos, options.batch, memory_limit());
  if (options.log) {
    for (const std::string& line : describe_units(units, infos, options.batch, memory_limit())) {
      options.log(line);
    }
  }
  result.ran = execute_runs(
      spec, out_dir, units, options, cache, plans, result.skipped, share, result.warnings);
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

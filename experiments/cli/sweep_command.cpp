// `stragglersim sweep`: a grid of runs from a sweep file, in parallel and resumable.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string_view>
#include <thread>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/sweep.h"
#include "experiments/sweep_mpi.h"
#include "models/base/error.h"
#include "models/base/parse_number.h"
#include "sim/backends/mpi_session.h"

namespace stragglersim::experiments {
namespace {

std::atomic<bool> g_interrupted{false};  // NOLINT: written by the SIGINT handler

std::atomic<int> g_signal{0};  // NOLINT: which signal (SIGINT or SIGTERM)

extern "C" void on_sigint(int signal) {
  g_signal.store(signal);
  g_interrupted.store(true);
}

/// "1h02m", "3m05s", "42s".
std::string duration_text(double seconds) {
  const auto s = static_cast<long>(std::max(0.0, seconds) + 0.5);
  if (s >= 3600) {
    return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  }
  if (s >= 60) {
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  }
  return fmt::format("{}s", s);
}

/// Progress on stderr: a redrawn bar on a terminal, a plain line at most every two seconds
/// otherwise (and always the last one).
class Progress {
 public:
  /// `quiet`: print nothing (--quiet).
  explicit Progress(bool quiet)
      : quiet_(quiet), terminal_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

  void update(std::size_t done, std::size_t skipped, std::size_t total) {
    if (quiet_) {
      return;
    }
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const bool last = done == total;
    const double since = std::chrono::duration<double>(now - last_print_).count();
    if (!last && printed_ && since < (terminal_ ? 0.1 : 2.0)) {
      return;
    }
    printed_ = true;
    last_print_ = now;
    const std::size_t ran = done - skipped;
    std::string eta = "ETA --";
    if (last) {
      eta = fmt::format("in {}", duration_text(elapsed));
    } else if (ran > 0) {
      eta = fmt::format(
          "ETA {}",
          duration_text(elapsed / static_cast<double>(ran) * static_cast<double>(total - done)));
    }
    if (terminal_) {
      constexpr std::size_t kWidth = 30;
      const std::size_t filled = total == 0 ? kWidth : kWidth * done / total;
      std::cerr << fmt::format("\rsweep [{}{}] {}/{} runs ({})\x1b[K",
                               std::string(filled, '#'),
                               std::string(kWidth - filled, '.'),
                               done,
                               total,
                               eta);
      if (last) {
        std::cerr << '\n';
      }
    } else {
      std::cerr << fmt::format("sweep: {}/{} runs done ({})\n", done, total, eta);
    }
    std::cerr.flush();
  }

  void finish_line() const {
    if (terminal_ && printed_) {
      std::cerr << '\n';
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool quiet_;
  bool terminal_;
  bool printed_ = false;
  Clock::time_point start_;
  Clock::time_point last_print_;
};

struct SweepArgs {
  std::string sweep;
  std::string out;
  int jobs = 1;
  std::string shard;
  bool merge = false;
  bool quiet = false;
  bool no_cache = false;
  std::string cache;  ///< --f-star-cache
  int batch = kDefaultBatch;
  bool no_batch = false;
  /// --f-star-cache, else <out>/f_star_cache; empty with --no-cache.
  [[nodiscard]] std::filesystem::path f_star_cache() const {
    if (no_cache) {
      return {};
    }
    return cache.empty() ? std::filesystem::path(out) / "f_star_cache"
                         : std::filesystem::path(cache);
  }
};

/// "i/N" with 0 <= i < N.
SweepShard parse_shard(const std::string& text) {
  SweepShard shard;
  const std::size_t slash = text.find('/');
  std::uint64_t i = 0;
  std::uint64_t n = 0;
  const std::string_view view = text;
  if (slash == std::string::npos || !models::parse_whole_integer(view.substr(0, slash), i) ||
      !models::parse_whole_integer(view.substr(slash + 1), n) || n == 0 || i >= n) {
    throw ConfigError(fmt::format(
        "--shard: not a shard; got \"{}\"; expected i/N with 0 <= i < N, such as 0/3", text));
  }
  shard.shard = i;
  shard.count = n;
  return shard;
}

void report_stale(const SweepResult& result, const std::string& out, bool quiet) {
  if (quiet || result.stale.empty()) {
    return;
  }
  std::string names;
  for (std::size_t i = 0; i < result.stale.size() && i < 10; ++i) {
    names += (i == 0 ? "" : ", ") + result.stale[i];
  }
  if (result.stale.size() > 10) {
    names += ", ...";
  }
  std::cerr << fmt::format(
      "sweep: {} run folders in {} are not part of this sweep (kept on disk, not in index.csv): "
      "{}\n",
      result.stale.size(),
      out,
      names);
}

/// Installs the SIGINT and SIGTERM handler for the life of the object (first signal: stop
/// starting runs, let the running ones finish; a second one kills).
class SigintGuard {
 public:
  SigintGuard() {
    g_interrupted.store(false);
    g_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    action.sa_flags = static_cast<int>(SA_RESETHAND);
    sigaction(SIGINT, &action, &previous_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~SigintGuard() {
    sigaction(SIGINT, &previous_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  struct sigaction previous_ {};
  struct sigaction previous_term_ {};
};

int report(const SweepSpec& spec,
           const SweepArgs& args,
           const SweepResult& result,
           Progress& progress,
           double seconds,
           const std::string& how) {
  report_stale(result, args.out, args.quiet);
  if (!args.quiet) {
    print_warning_counts(result.warnings, result.ran);
  }
  if (result.interrupted) {
    progress.finish_line();
    std::cerr << fmt::format(
        "sweep: interrupted; {} of {} runs are complete in {}; rerun the same command to resume\n",
        result.ran + result.skipped,
        result.total,
        args.out);
    return 128 + (g_signal.load() != 0 ? g_signal.load() : SIGINT);
  }
  const std::string share =
      args.shard.empty()
          ? ""
          : fmt::format(" shard {} ({} of them)", args.shard, result.ran + result.skipped);
  if (args.quiet) {
    return result.failed > 0 ? 3 : 0;
  }
  std::cout << fmt::format(
      "sweep {}{}: {} runs ({} run now, {} already complete, {} failed) in {:.3g} s with {}\n",
      spec.name,
      share,
      result.total,
      result.ran,
      result.skipped,
      result.failed,
      seconds,
      how);
  if (spec.tuning) {
    std::cout << fmt::format(
        "tuned on {} tuning runs ({} run now): wrote {}/tuning.csv and {}/tuning/\n",
        result.tuning_total,
        result.tuning_ran,
        args.out,
        args.out);
  }
  if (args.shard.empty()) {
    std::cout << fmt::format("wrote {0}/index.csv, {0}/summary.csv, {0}/traces.csv and {0}/runs/\n",
                             args.out);
  } else {
    std::cout << fmt::format(
        "wrote {}/runs/; once every shard is done: stragglersim sweep {} --out {} --merge\n",
        args.out,
        args.sweep,
        args.out);
  }
  return result.failed > 0 ? 3 : 0;
}

int command_merge(const SweepArgs& args) {
  const SweepSpec spec = expand_sweep_file(args.sweep);
  const SweepResult result = merge_sweep(spec, args.out);
  report_stale(result, args.out, args.quiet);
  if (args.quiet) {
    return result.failed > 0 ? 3 : 0;
  }
  std::cout << fmt::format("sweep {}: merged {} runs ({} failed) into {}/index.csv\n",
                           spec.name,
                           result.total,
                           result.failed,
                           args.out);
  return result.failed > 0 ? 3 : 0;
}

/// Processes of the MPI launch this process belongs to, from the launcher's environment (1 when
/// not launched by mpirun / srun, or when the launcher does not say).
long launch_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* value = std::getenv(name); value != nullptr && sim::launched_by_mpi()) {
      return std::max(1L, std::strtol(value, nullptr, 10));
    }
  }
  return 1;
}

/// Every rank of `mpirun -np P stragglersim sweep ...`; only rank 0 prints.
int command_sweep_mpi(const SweepArgs& args) {
  sim::MpiSession session;
  const int rank = session.rank();
  int status = 0;
  try {
    const SweepSpec spec = expand_sweep_file(args.sweep);
    if (needs_tuning(spec)) {
      // Every rank read the same file and stops here; rank 0 says why.
      throw ConfigError(fmt::format(
          "{}:/tune: a tuned sweep runs its tuning before its evaluation; got an MPI launch; "
          "expected the sweep without mpirun (--jobs N)",
          spec.file));
    }
    Progress progress(args.quiet);
    SweepOptions options;
    options.stop = &g_interrupted;
    options.f_star_cache = args.f_star_cache();
    if (rank == 0 && !args.quiet) {
      options.progress = [&progress](std::size_t done, std::size_t skipped, std::size_t total) {
        progress.update(done, skipped, total);
      };
      // On a terminal only: elsewhere a bad sweep's stderr starts with its `error:` line.
      if (::isatty(STDERR_FILENO) == 1) {
        std::cerr << fmt::format("sweep {}: {} runs on {} MPI ranks, checking every config first\n",
                                 spec.name,
                                 spec.runs.size(),
                                 session.size());
      }
    }
    const SigintGuard sigint;
    const auto start = std::chrono::steady_clock::now();
    const SweepResult result = run_sweep_mpi(spec, args.out, options, rank, session.size());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return rank == 0 ? report(spec,
                              args,
                              result,
                              progress,
                              seconds,
                              fmt::format("{} MPI ranks", session.size()))
                     : 0;
  } catch (const RankStop& stop) {
    status = stop.status;
  } catch (const std::exception& e) {
    status = exit_status_of(e);
    // Every rank read the same sweep file: rank 0 says what is wrong with it; a bug anywhere.
    if (rank == 0 || status == 1) {
      std::cerr << "error: " << e.what() << '\n';
    }
  }
  // mpirun ends the job at the first non-zero exit: the stopping ranks wait (a bounded time)
  // until rank 0 has printed why.
  session.meet(std::chrono::seconds(10));
  return status;
}

int command_sweep(const SweepArgs& args) {
  // --shard and --merge are for one process per task (a job array's task may still be started
  // by srun, which sets the launcher's variables): they ignore a launch of one process.
  if ((!args.shard.empty() || args.merge) && launch_size() > 1) {
    throw ConfigError(fmt::format(
        "sweep: {} in an MPI launch of {} processes; got {}; expected one process per shard "
        "(each would run the same share), or the sweep under mpirun without {}",
        args.merge ? "--merge" : "--shard",
        launch_size(),
        args.merge ? "--merge" : "--shard " + args.shard,
        args.merge ? "--merge" : "--shard"));
  }
  if (sim::launched_by_mpi() && args.shard.empty() && !args.merge) {
    if (!sim::mpi_compiled_in()) {
      throw ConfigError(
          "sweep: launched by mpirun but this stragglersim was built without MPI; got an MPI "
          "launch; expected a build with Open MPI (libopenmpi-dev, CMake option "
          "STRAGGLERSIM_WITH_MPI=ON), or the sweep without mpirun (--jobs N, or --shard i/N)");
    }
    return command_sweep_mpi(args);
  }
  if (args.merge) {
    if (!args.shard.empty()) {
      throw ConfigError("sweep: --merge with --shard; got both; expected one of them");
    }
    return command_merge(args);
  }
  const SweepSpec spec = expand_sweep_file(args.sweep);
  Progress progress(args.quiet);
  SweepOptions options;
  options.jobs = args.jobs;
  options.f_star_cache = args.f_star_cache();
  options.stop = &g_interrupted;
  if (!args.shard.empty()) {
    options.shard = parse_shard(args.shard);
  }
  options.progress = [&progress](std::size_t done, std::size_t skipped, std::size_t total) {
    progress.update(done, skipped, total);
  };
  options.batch = args.no_batch ? 1 : args.batch;
  if (!args.quiet) {
    options.log = [&progress](const std::string& line) {
      progress.finish_line();
      std::cerr << "sweep: " << line << '\n';
    };
  }
  const SigintGuard sigint;
  const auto start = std::chrono::steady_clock::now();
  // Validation loads every run's data before the first run starts: say so on a terminal, it can
  // take a while (elsewhere a bad sweep's stderr starts with its `error:` line).
  if (!args.quiet && ::isatty(STDERR_FILENO) == 1) {
    std::cerr << fmt::format(
        "sweep {}: {} runs, checking every config first\n", spec.name, spec.runs.size());
  }
  const SweepResult result = run_sweep(spec, args.out, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report(spec, args, result, progress, seconds, fmt::format("{} jobs", args.jobs));
}

}  // namespace

Subcommand add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  args->jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  auto* cmd = app.add_subcommand(
      "sweep", "run a grid of experiments from a sweep file, in parallel and resumably");
  cmd->add_option("sweep", args->sweep, "sweep file (JSON: base or base_file, grid, repetitions)")
      ->required();
  cmd->add_option("-o,--out",
                  args->out,
                  "output folder: index.csv and one runs/<slug>/ per run (slug: the grid values "
                  "and the repetition, e.g. code.d=2_rep0)")
      ->required();
  cmd->add_option("--jobs,-j", args->jobs, "parallel runs (default: hardware threads)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--shard",
                  args->shard,
                  "run only share i of N (0 <= i < N): the runs whose index mod N is i; no "
                  "index.csv (job arrays; see --merge)");
  cmd->add_flag("--merge",
                args->merge,
                "run nothing: write index.csv once every run is complete (after --shard)");
  add_quiet_flag(*cmd, args->quiet);
  cmd->add_flag("--no-cache",
                args->no_cache,
                "solve every data set's f* afresh instead of sharing <out>/f_star_cache");
  cmd->add_option("--f-star-cache",
                  args->cache,
                  "folder of the f* cache, shared with other sweeps (default: <out>/f_star_cache)");
  cmd->add_option("--batch",
                  args->batch,
                  fmt::format("runs per lock-step group: runs sharing a data set, loss and "
                              "partitions advance together, one pass over the data for all "
                              "(default {}; the same bytes as one at a time)",
                              kDefaultBatch))
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--no-batch", args->no_batch, "run one run at a time (no lock-step groups)");
  add_max_memory_option(*cmd);
  return {cmd, [args] { return command_sweep(*args); }};
}

}  // namespace stragglersim::experiments

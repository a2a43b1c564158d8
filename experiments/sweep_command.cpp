// `stragglersim sweep`: a grid of runs from a sweep file, in parallel and resumable.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include "experiments/commands.h"
#include "experiments/sweep.h"

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
  Progress() : terminal_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

  void update(std::size_t done, std::size_t skipped, std::size_t total) {
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
  bool terminal_;
  bool printed_ = false;
  Clock::time_point start_;
  Clock::time_point last_print_;
};

struct SweepArgs {
  std::string sweep;
  std::string out;
  int jobs = 1;
};

int command_sweep(const SweepArgs& args) {
  const SweepSpec spec = expand_sweep_file(args.sweep);
  Progress progress;
  SweepOptions options;
  options.jobs = args.jobs;
  options.stop = &g_interrupted;
  options.progress = [&progress](std::size_t done, std::size_t skipped, std::size_t total) {
    progress.update(done, skipped, total);
  };

  // First Ctrl-C: stop starting runs, let the running ones finish; a second one kills.
  g_interrupted.store(false);
  g_signal.store(0);
  struct sigaction action {};
  struct sigaction previous {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = static_cast<int>(SA_RESETHAND);
  struct sigaction previous_term {};
  sigaction(SIGINT, &action, &previous);
  sigaction(SIGTERM, &action, &previous_term);
  const auto start = std::chrono::steady_clock::now();
  // Validation loads every run's data before the first run starts: say so, it can take a while.
  std::cerr << fmt::format(
      "sweep {}: {} runs, checking every config first\n", spec.name, spec.runs.size());
  SweepResult result;
  try {
    result = run_sweep(spec, args.out, options);
  } catch (...) {
    sigaction(SIGINT, &previous, nullptr);
    sigaction(SIGTERM, &previous_term, nullptr);
    throw;
  }
  sigaction(SIGINT, &previous, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (result.interrupted) {
    progress.finish_line();
    std::cerr << fmt::format(
        "sweep: interrupted; {} of {} runs are complete in {}; rerun the same command to resume\n",
        result.ran + result.skipped,
        result.total,
        args.out);
    return 128 + (g_signal.load() != 0 ? g_signal.load() : SIGINT);
  }
  std::cout << fmt::format(
      "sweep {}: {} runs ({} run now, {} already complete, {} failed) in {:.3g} s with {} jobs\n",
      spec.name,
      result.total,
      result.ran,
      result.skipped,
      result.failed,
      seconds,
      args.jobs);
  std::cout << fmt::format("wrote {}/index.csv and {}/runs/\n", args.out, args.out);
  return result.failed > 0 ? 3 : 0;
}

}  // namespace

Subcommand add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  args->jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  auto* cmd = app.add_subcommand(
      "sweep", "run a grid of experiments from a sweep file, in parallel and resumably");
  cmd->add_option("sweep", args->sweep, "sweep file (JSON: base or base_file, grid, repetitions)")
      ->required();
  cmd->add_option("--out", args->out, "output folder: runs/<index>-<slug>/ and index.csv")
      ->required();
  cmd->add_option("--jobs,-j", args->jobs, "parallel runs (default: hardware threads)")
      ->check(CLI::Range(1, 1024));
  add_max_memory_option(*cmd);
  return {cmd, [args] { return command_sweep(*args); }};
}

}  // namespace stragglersim::experiments

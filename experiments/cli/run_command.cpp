// `stragglersim run`: one experiment from a JSON config.

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/interrupt.h"
#include "experiments/output_file.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_output.h"
#include "experiments/run_timeline.h"
#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "sim/backends/mpi_session.h"

namespace stragglersim::experiments {
namespace {

/// What in `out_dir` belongs to another run than `plan` ("" when nothing does): a summary of
/// another config, a trace without summary, or a sweep. Rerunning the same config is allowed.
std::string other_run_in(const std::filesystem::path& out_dir, const RunPlan& plan) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_dir / "sweep_spec.json", ec)) {
    return "a sweep folder (sweep_spec.json)";
  }
  if (fs::exists(out_dir / "summary.json", ec)) {
    std::ifstream in(out_dir / "summary.json", std::ios::binary);
    const auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (summary.is_object() && summary.contains("config") && summary["config"] == plan.resolved) {
      return "";
    }
    const std::string name = summary.is_object() ? summary.value("name", "?") : "?";
    return fmt::format("run {} (summary.json of another config)", nlohmann::json(name).dump());
  }
  if (fs::exists(out_dir / "trace.csv", ec)) {
    return "trace.csv of an unfinished run";
  }
  return "";
}

/// Creates the output folder before the run starts, so a folder that cannot be made costs no
/// compute.
void make_output_folder(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    throw ConfigError(
        fmt::format("--out: cannot create the folder ({}); got \"{}\"; expected a "
                    "folder this user may create",
                    ec.message(),
                    out_dir));
  }
}

/// "T simulated s", with the real seconds beside it on a wall-clock backend; only the real
/// seconds when no delay was injected (an MPI run with "inject": false measures its workers).
std::string time_phrase(const RunPlan& plan, const nlohmann::json& s) {
  const double simulated = s["total_time"].get<double>();
  if (!s.contains("total_real_time")) {
    return fmt::format("{:.6g} simulated s", simulated);
  }
  const double real = s["total_real_time"].get<double>();
  const auto& backend = plan.resolved.value("backend", nlohmann::json::object());
  if (backend.is_object() && !backend.value("inject", true)) {
    return fmt::format("{:.6g} real s (no injected delays)", real);
  }
  return fmt::format("{:.6g} simulated s ({:.6g} real s)", simulated, real);
}

/// A finished run's warnings, its line (iterations, time, final loss) and the files it wrote.
void print_run_done(const RunPlan& plan, const RunOutcome& outcome, const std::string& out_dir) {
  print_warnings(outcome.summary);
  const auto& s = outcome.summary;
  if (plan.delay_only()) {
    std::cout << fmt::format(
        "{}: {} iterations, mean iteration time {:.6g} ± {:.2g} (s.e.), total {:.6g} s\n",
        plan.name,
        s["iterations"].get<std::uint64_t>(),
        s["mean_iteration_time"].get<double>(),
        s["iteration_time_standard_error"].get<double>(),
        s["total_time"].get<double>());
  } else {
    std::cout << fmt::format("{}: {} iterations in {}, final loss {:.6g}",
                             plan.name,
                             s["iterations"].get<std::uint64_t>(),
                             time_phrase(plan, s),
                             s["final_loss"].get<double>());
    if (s.contains("final_test_metric")) {
      std::cout << fmt::format(", test {} {:.4g}",
                               s["test_metric"].get<std::string>(),
                               s["final_test_metric"].get<double>());
    }
    std::cout << '\n';
  }
  if (outcome.workers_csv.empty()) {
    std::cout << fmt::format("wrote {}/trace.csv and {}/summary.json\n", out_dir, out_dir);
  } else {
    std::cout << fmt::format("wrote {0}/trace.csv, {0}/summary.json and {0}/workers.csv\n",
                             out_dir);
  }
  if (!outcome.worker_times_csv.empty()) {
    std::cout << fmt::format("wrote {}/worker_times.csv\n", out_dir);
  }
  if (!outcome.collective_csv.empty()) {
    std::cout << fmt::format("wrote {}/collective.csv\n", out_dir);
  }
}

int report_run(const RunPlan& plan,
               const RunOutcome& outcome,
               const std::string& config,
               const std::string& out_dir,
               bool quiet) {
  // The outcome's own line first (scripts read the first line of stderr), then the warnings.
  if (outcome.status == "interrupted") {
    const int signal = interrupt_flag().load();
    std::cerr << fmt::format(
        "{}: interrupted by signal {} after iteration {}; trace and summary are in {}\n",
        config,
        signal,
        outcome.summary["iterations"].get<std::uint64_t>(),
        out_dir);
    if (!quiet) {
      print_warnings(outcome.summary);
    }
    return 128 + signal;
  }
  if (outcome.status != "ok") {
    std::cerr << fmt::format("error: {}: {}\n", config, outcome.error);
    std::cerr << fmt::format("the trace up to the last good iteration is in {}\n", out_dir);
    if (!quiet) {
      print_warnings(outcome.summary);
    }
    return 3;
  }
  if (quiet) {
    return 0;
  }
  print_run_done(plan, outcome, out_dir);
  return 0;
}

/// `mpirun -np n+1 stragglersim run`: rank 0 runs the master and writes the outputs, ranks
/// 1..n are the workers. Every rank planned the same run from the same config, so every rank
/// refuses a wrong -np by itself (exit 2); they wait (a bounded time) until rank 0 has said why,
/// since mpirun ends the job at the first non-zero exit.
int command_run_mpi(const RunPlan& plan,
                    const std::string& config,
                    const std::string& out_dir,
                    bool quiet) {
  sim::MpiSession session;
  const int expected = plan.workers + 1;
  if (session.size() != expected) {
    if (session.rank() == 0) {
      std::cerr << fmt::format(
          "error: {}:/backend/kind: the {} backend needs one process per worker and one "
          "master; got mpirun -np {}; expected mpirun -np {} ({} workers + 1)\n",
          config,
          plan.backend.name,
          session.size(),
          expected,
          plan.workers);
    }
    session.meet(std::chrono::seconds(10));
    return 2;
  }
  if (session.rank() != 0) {
    STRAGGLERSIM_ASSERT(plan.backend_setup.run_worker != nullptr,
                        "an mpi backend's setup has a worker loop");
    plan.backend_setup.run_worker(plan, session.rank() - 1);
    return 0;
  }
  make_output_folder(out_dir);
  const RunOutcome outcome = execute_run(plan, out_dir);
  return report_run(plan, outcome, config, out_dir, quiet);
}

/// The run after its plan: the folder checks, then execute_run (or the mpi path).
int run_planned(const RunPlan& plan,
                const std::string& config,
                const std::string& out_dir,
                bool force,
                bool quiet,
                const std::string& timeline) {
  if (const std::string other = other_run_in(out_dir, plan); !force && !other.empty()) {
    throw ConfigError(fmt::format(
        "{}: holds another run; got {}; expected an empty or new --out folder, or --force to "
        "replace its trace.csv and summary.json",
        out_dir,
        other));
  }
  std::optional<OutputFile> timeline_file;  // reserved before the work
  if (!timeline.empty()) {
    check_timeline_run(plan);
    timeline_file.emplace(timeline, "--timeline");
  }
  if (plan.backend.traits.mpi) {
    return command_run_mpi(plan, config, out_dir, quiet);
  }
  make_output_folder(out_dir);
  // A progress line only where someone watches: stderr on a terminal.
  std::optional<ProgressLine> line;
  ProgressHook progress;
  if (!quiet && ::isatty(STDERR_FILENO) != 0) {
    line.emplace(std::cerr);
    progress = [&line](const RunProgress& p) { line->update(p); };
  }
  const RunOutcome outcome = execute_run(
      plan, out_dir, [] { return interrupt_flag().load() != 0; }, progress);
  if (line) {
    line->finish();
  }
  if (timeline_file) {
    timeline_file->commit(
        simulated_timeline(plan, outcome.summary.value("iterations", std::uint64_t{0})));
  }
  return report_run(plan, outcome, config, out_dir, quiet);
}

int command_run(const std::string& config,
                const std::string& out_dir,
                bool force,
                bool quiet,
                const std::string& f_star_cache,
                const std::string& timeline) {
  check_output_folder(out_dir, "--out");
  if (!timeline.empty()) {
    check_output_file(timeline, "--timeline");
  }
  // Under mpirun, rank i + 1 is worker i of an mpi run: it loads only its own partitions.
  std::optional<int> mpi_worker;
  if (const auto rank = sim::launched_by_mpi() ? sim::launcher_rank() : std::nullopt;
      rank && *rank > 0) {
    mpi_worker = *rank - 1;
  }
  // Signals are honoured from here on: in set-up (data, f*, predictions) the first one ends the
  // command with nothing written (models/base/stop_request.h); in the iterations, after the row.
  std::optional<InterruptGuard> guard;
  guard.emplace();
  try {
    const auto planning = std::chrono::steady_clock::now();
    const std::int64_t bytes_before_plan = models::data_bytes_read();
    RunPlan plan = [&] {
      const models::StopScope scope;
      return plan_run_file(config, mpi_worker);
    }();
    plan.plan_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - planning).count();
    plan.data_bytes_before_plan = bytes_before_plan;
    plan.f_star_cache = f_star_cache;
    if (plan.backend.traits.mpi) {
      guard.reset();  // mpirun forwards signals to every rank: the default action ends them
    }
    return run_planned(plan, config, out_dir, force, quiet, timeline);
  } catch (const models::StopRequested& stop) {
    std::cerr << fmt::format(
        "{}: interrupted by signal {} during set-up; nothing written\n", config, stop.signal());
    return 128 + stop.signal();
  }
}

}  // namespace

Subcommand add_run_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto out_dir = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto f_star_cache = std::make_shared<std::string>();
  auto timeline = std::make_shared<std::string>();
  auto* run = app.add_subcommand("run", "run one experiment from a JSON config");
  run->add_option("config", *config, "config file (JSON)")->required();
  run->add_option("-o,--out", *out_dir, "output folder for trace.csv and summary.json")->required();
  run->add_flag("--force", *force, "write into --out even when it holds another run's output");
  run->add_option("--f-star-cache",
                  *f_star_cache,
                  "folder of the f* cache shared with other runs and sweeps (default: none)");
  add_output_option(*run,
                    "--timeline",
                    *timeline,
                    "also write the simulated iterations as Chrome trace JSON (docs/whatif.md)",
                    false);
  add_quiet_flag(*run, *quiet);
  add_max_memory_option(*run);
  return {run, [config, out_dir, force, quiet, f_star_cache, timeline] {
            return command_run(*config, *out_dir, *force, *quiet, *f_star_cache, *timeline);
          }};
}

}  // namespace stragglersim::experiments

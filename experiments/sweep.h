#pragma once
// Parameter sweeps (DESIGN.md §4 "Sweep file"): one base config, a grid of JSON-pointer
// substitutions and a number of repetitions, expanded into independent, seeded runs that are
// executed in parallel, resumably, with results that never depend on the number of jobs.
//
// Sweep file: {"base": {...} | "base_file": "...", "grid": {"/code/d": [2, 3, 5], ...},
//              "repetitions": 1, "name": "..."}
// - Grid keys are JSON pointers into the base config. Each must name an existing value, or a new
//   key of an existing object (so "/target_loss" may be added); array elements must exist.
// - Runs are the cartesian product of the grid in the order of the keys sorted bytewise (the
//   first key varies slowest, the last fastest), times the repetitions (fastest of all):
//   index = combination · repetitions + k.
// - Repetition k ≥ 1 runs with seed derive_seed(s, k) (sim/random_stream.h), where s is the
//   run's seed before repetition (the base seed, or the grid's "/seed" value); repetition 0 keeps
//   s, so a one-repetition sweep point is exactly `stragglersim run` of that config.
// - Relative paths in the base resolve against the base file's folder ("base_file") or the sweep
//   file's folder ("base").
//
// Output: DIR/runs/<index>-<slug>/{config.json,trace.csv,summary.json} and DIR/index.csv, all
// written atomically; a run whose summary.json exists is complete and is skipped on a rerun.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stragglersim::experiments {

/// One expanded run of a sweep.
struct SweepRun {
  std::size_t index = 0;
  int repetition = 0;
  std::uint64_t seed = 0;
  /// The grid values of this run, in the order of SweepSpec::parameters.
  std::vector<nlohmann::json> values;
  /// The complete run config (base + grid values + seed + name).
  nlohmann::json config;
  /// "runs/<index>-<slug>", relative to the sweep's output folder.
  std::string folder;
};

/// A sweep file, read and expanded (not yet validated run by run).
struct SweepSpec {
  std::string name;
  std::string file;
  /// Folder against which relative paths of the base config resolve.
  std::filesystem::path base_dir;
  /// Grid JSON pointers, sorted.
  std::vector<std::string> parameters;
  int repetitions = 1;
  std::vector<SweepRun> runs;
};

/// Reads and expands a sweep; ConfigError for a bad sweep file ("<file>:/grid/<key>: ...").
SweepSpec expand_sweep(const nlohmann::json& sweep,
                       const std::string& file,
                       const std::filesystem::path& base_dir);
SweepSpec expand_sweep_file(const std::filesystem::path& path);

struct SweepOptions {
  int jobs = 1;
  /// Called after each finished run (done counts runs skipped as already complete too); called
  /// from worker threads, one call at a time.
  std::function<void(std::size_t done, std::size_t skipped, std::size_t total)> progress;
  /// When set becomes true, no new run is started (SIGINT).
  const std::atomic<bool>* stop = nullptr;
};

struct SweepResult {
  std::size_t total = 0;
  std::size_t ran = 0;
  std::size_t skipped = 0;
  /// Runs of the whole sweep (earlier invocations included) whose summary says "failed".
  std::size_t failed = 0;
  /// Stopped before every run was done; index.csv was not written.
  bool interrupted = false;
};

/// Validates every run config not yet complete in `out_dir` (plan_run on `jobs` threads;
/// ConfigError naming the first bad run in index order, nothing written), then runs them on
/// `jobs` threads and writes out_dir/index.csv. Runs over the same data, loss, seed and
/// partitions share one read-only Objective (one copy of the data set in memory); validated
/// plans are kept for the first max(2, jobs) distinct data sets and planned again at run time
/// beyond that, so memory stays bounded. Throws ConfigError when a run folder holds another
/// config (the wrong --out folder).
SweepResult run_sweep(const SweepSpec& spec,
                      const std::filesystem::path& out_dir,
                      const SweepOptions& options);

/// The index.csv text of a finished sweep, built from the runs' summary.json files.
std::string index_csv(const SweepSpec& spec, const std::filesystem::path& out_dir);

}  // namespace stragglersim::experiments

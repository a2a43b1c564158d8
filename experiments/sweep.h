#pragma once
// Parameter sweeps (docs/model.md §7 "Sweep file"): one base config, a grid of JSON-pointer
// substitutions and a number of repetitions, expanded into independent, seeded runs that are
// executed in parallel, resumably, with results that never depend on the number of jobs.
//
// Sweep file: {"base": {...} | "base_file": "...", "grid": {"/code/d": [2, 3, 5], ...},
//              "schemes": [{"name": "uncoded", "/code": {...}, ...}, ...],
//              "repetitions": 1, "name": "...", "baseline": {"/code": {"kind": "uncoded"}}
//              | "<scheme name>", "vary_data_seed": false,
//              "tune": {"/optimizer/step": [...]}, "tune_objective": {...},
//              "tuning_repetitions": 2}
// - "tune" (optional; also per scheme): each scheme × grid point is tuned on tuning seeds of its
//   own (DIR/tuning, DIR/tuning.csv) and its runs run at the chosen values (docs/sweeps.md
//   "Tuning"; sweep_tuning.cpp).
// - "schemes" (optional): named tuples of pointer values, zipped (each is one point of a
//   `scheme` axis, the slowest) and crossed with the grid.
// - "baseline" (optional) names grid keys and one of each key's values: the baseline of a run is
//   the run of the same repetition with those keys at those values and every other grid key at
//   the run's own value. index.csv then has a baseline_index column and speedups against it
//   (docs/sweeps.md "index.csv").
// - Grid keys are JSON pointers into the base config. Each must name an existing value, or a new
//   key of an existing object (so "/target_loss" may be added); array elements must exist.
// - Runs are the cartesian product of the grid in the order of the keys sorted bytewise (the
//   first key varies slowest, the last fastest), times the repetitions (fastest of all):
//   index = combination · repetitions + k.
// - Repetition k ≥ 1 runs with seed derive_seed(s, k) (sim/random_stream.h), where s is the
//   run's seed before repetition (the base seed, or the grid's "/seed" value); repetition 0 keeps
//   s, so a one-repetition sweep point is exactly `stragglersim run` of that config. The data
//   seed (data set, train/test split) stays the point's (its "data_seed", else s) unless
//   "vary_data_seed" is true: repetitions then share f*.
// - Relative paths in the base resolve against the base file's folder ("base_file") or the sweep
//   file's folder ("base").
//
// Output: DIR/runs/<slug>/{config.json,trace.csv,summary.json}, DIR/sweep_spec.json (the
// folder's identity: a hash of every expanded config) and DIR/index.csv, all written atomically;
// a run whose summary.json exists is complete and is skipped on a rerun. The slug is derived
// from the grid point and the repetition only ("code.d=2_stopping.r=6_rep0"), so a run keeps its
// folder when the grid or the repetitions are extended; a value whose text the slug cannot keep
// whole (an object, a long or odd string) adds "-h" and 8 hex digits of a hash of the point.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/output_file.h"
#include "experiments/run_diagnostics.h"

namespace stragglersim::experiments {

/// One expanded run of a sweep.
struct SweepRun {
  std::size_t index = 0;
  int repetition = 0;
  /// Index of this run's baseline run (itself when it is one, or when the sweep has none).
  std::size_t baseline = 0;
  std::uint64_t seed = 0;
  /// The run's scheme name ("" when the sweep has no "schemes").
  std::string scheme;
  /// The grid values of this run, in the order of SweepSpec::parameters.
  std::vector<nlohmann::json> values;
  /// The complete run config (base + grid values + seed + name).
  nlohmann::json config;
  /// "runs/<slug>", relative to the sweep's output folder.
  std::string folder;
  /// Expected cost (arbitrary units: iterations × workers × data entries): MPI sweeps hand out
  /// the most expensive runs first.
  double cost = 1.0;
  /// A tuned sweep's evaluation run: the tuned pointers at the ends of their grids (the summary's
  /// `edge` column, pointers separated by spaces; "" when none).
  std::string edge;
};

/// One pointer a sweep tunes and its candidate values (docs/sweeps.md "Tuning").
struct TuneKey {
  std::string pointer;
  std::vector<nlohmann::json> values;
  bool operator==(const TuneKey&) const = default;
};

/// What tuning minimises: the time to the runs' target_loss, the time to a relative
/// suboptimality S·(f(x0) − f*), or the loss at a simulated time budget.
struct TuneObjective {
  enum class Kind { kTargetLoss, kSuboptimality, kTimeBudget };
  Kind kind = Kind::kTargetLoss;
  /// S or the time budget (unused for target_loss).
  double value = 0.0;
  /// Suboptimality only: the time from which the trace stays at or below the level to its end
  /// (a run whose last row is above it does not reach it), not the first time it gets there.
  bool sustained = false;
};

/// The "tune" keys of a sweep file: per scheme its tune grid, the objective and the tuning seeds.
struct SweepTuning {
  /// Per scheme (one entry without schemes): its tune keys, sorted by pointer (a scheme's own
  /// "tune" replaces the sweep's); empty: the scheme is not tuned.
  std::vector<std::vector<TuneKey>> keys;
  TuneObjective objective;
  /// Runs per tune combination, on seeds of their own (never an evaluation seed).
  int repetitions = 2;
  /// Every pointer some scheme tunes, sorted: summary.csv's columns of the chosen values.
  std::vector<std::string> pointers;
  /// unresolved: the sweep file's runs, without chosen values (run_sweep tunes first); tuning:
  /// the tuning runs (DIR/tuning); evaluation: the runs at the chosen values.
  enum class Stage { kUnresolved, kTuning, kEvaluation };
  Stage stage = Stage::kUnresolved;
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
  /// Whether the sweep file names a "baseline": index.csv then has speedup columns.
  bool has_baseline = false;
  /// The "schemes" names in file order (empty without): the slowest axis of the runs.
  std::vector<std::string> schemes;
  /// "vary_data_seed": repetitions derive the data seed too (a new data set and split each).
  bool vary_data_seed = false;
  /// "tune": each scheme is tuned on tuning seeds before its runs (the evaluation) are run at the
  /// chosen values. Until resolve_tuned_sweep, the runs hold no chosen values.
  std::optional<SweepTuning> tuning;
  /// The grid keys among `parameters`: those after them are tuned pointers (a resolved tuned
  /// sweep), whose cells are empty where a scheme does not tune them.
  std::size_t grid_parameters = 0;
  std::vector<SweepRun> runs;
};

/// Whether `spec` is a tuned sweep whose choice is not made yet: its runs cannot run as they are.
[[nodiscard]] inline bool needs_tuning(const SweepSpec& spec) {
  return spec.tuning && spec.tuning->stage == SweepTuning::Stage::kUnresolved;
}

/// Reads and expands a sweep; ConfigError for a bad sweep file ("<file>:/grid/<key>: ...").
SweepSpec expand_sweep(const nlohmann::json& sweep,
                       const std::string& file,
                       const std::filesystem::path& base_dir);
SweepSpec expand_sweep_file(const std::filesystem::path& path);

/// Runs `index` with index mod count == shard of a sweep split into `count` independent shares
/// (job arrays): the share of a run depends on its canonical index only, never on what is done.
struct SweepShard {
  std::size_t shard = 0;
  std::size_t count = 1;
  [[nodiscard]] bool owns(std::size_t index) const { return index % count == shard; }
};

/// Runs per lock-step group unless SweepOptions::batch says otherwise.
inline constexpr int kDefaultBatch = 64;

struct SweepOptions {
  /// Parallel runs. Runs on the threads backend are timed on real cores: they run alone, one
  /// at a time, while no other run of this process runs.
  int jobs = 1;
  /// Only this share of the runs; index.csv is then not written (see merge_sweep).
  SweepShard shard;
  /// Called after each finished run (done counts runs skipped as already complete too); called
  /// from worker threads, one call at a time.
  std::function<void(std::size_t done, std::size_t skipped, std::size_t total)> progress;
  /// When set becomes true, no new run is started (SIGINT).
  const std::atomic<bool>* stop = nullptr;
  /// Folder of the f* cache the runs share (experiments/predict/plan_optimum.h; empty: none).
  /// The CLI uses <out>/f_star_cache unless --no-cache.
  std::filesystem::path f_star_cache;
  /// Runs per lock-step group (docs/sweeps.md "Lock-step groups"): the runs that share a data
  /// set, loss and partitions advance together, one pass over the data for all of them; ≤ 1
  /// (--no-batch) runs one run at a time. The same bytes either way.
  int batch = kDefaultBatch;
  /// Called with each line of the sweep's log (the groups, the runs alone and why, each group's
  /// passes); from worker threads, one call at a time. Null: no log.
  std::function<void(const std::string& line)> log;
};

struct SweepResult {
  std::size_t total = 0;
  std::size_t ran = 0;
  std::size_t skipped = 0;
  /// Runs of the whole sweep (earlier invocations included) whose summary says "failed".
  std::size_t failed = 0;
  /// Stopped before every run was done; index.csv was not written.
  bool interrupted = false;
  /// Run folders of an earlier sweep into the same folder that are not part of this one (kept
  /// on disk, not in index.csv), relative to the output folder.
  std::vector<std::string> stale;
  /// A tuned sweep: the tuning runs (all of them, and those run now).
  std::size_t tuning_total = 0;
  std::size_t tuning_ran = 0;
  /// The warnings of the runs run now, one entry per code (the CLI prints them once each; the
  /// Python module leaves them in the summaries).
  std::vector<WarningCount> warnings;
};

/// Validates every run config not yet complete in `out_dir` (plan_run on `jobs` threads;
/// ConfigError naming the first bad run in index order, nothing written), then runs them on
/// `jobs` threads and writes out_dir/index.csv. Runs over the same data, loss, seed and
/// partitions share one read-only Objective (one copy of the data set in memory); validated
/// plans are kept for the first max(2, jobs) distinct data sets and planned again at run time
/// beyond that, so memory stays bounded. Throws ConfigError when a run folder holds another
/// config (the wrong --out folder), and when the folder holds another sweep (see
/// check_sweep_folder). With a shard, only that share runs and index.csv is not written.
SweepResult run_sweep(const SweepSpec& spec,
                      const std::filesystem::path& out_dir,
                      const SweepOptions& options);

/// Writes out_dir/index.csv of a sweep whose runs are all complete (e.g. by shards) and runs
/// nothing. ConfigError when the folder holds another sweep or runs are missing (nothing
/// written). `result.failed` counts failed runs.
SweepResult merge_sweep(const SweepSpec& spec, const std::filesystem::path& out_dir);

// Building blocks shared by run_sweep and the MPI sweep (experiments/sweep_mpi.h).

/// The folder's identity (out_dir/sweep_spec.json, written by record_sweep_folder). Accepts a
/// missing or empty folder, the same sweep, and an extension (every run both sweeps share has
/// the same config): returns the earlier sweep's run folders that are not part of this one.
/// ConfigError (nothing changed) for another sweep, or a non-empty folder without identity.
std::vector<std::string> check_sweep_folder(const SweepSpec& spec,
                                            const std::filesystem::path& out_dir);
/// Creates out_dir/runs and writes out_dir/sweep_spec.json for `spec` (removing an earlier
/// sweep's index.csv when the identity changes). `sole_writer`: no other process writes into
/// out_dir now (not a shard), so temporary files there are a killed process's and are removed.
/// Takes `lock` on out_dir first when it does not hold it yet (exclusive for a sole writer,
/// shared for a shard): ConfigError when another sweep holds the folder.
void record_sweep_folder(const SweepSpec& spec,
                         const std::filesystem::path& out_dir,
                         bool sole_writer,
                         FolderLock& lock);
/// The lock of an existing out_dir, taken before its contents are read (none when out_dir is
/// not a folder yet: record_sweep_folder takes it once it has created it).
FolderLock lock_existing_sweep_folder(const std::filesystem::path& out_dir, bool sole_writer);
/// Indices of the runs of `shard` not yet complete; counts the complete ones of the share in
/// `skipped`. ConfigError when a run folder holds another config.
std::vector<std::size_t> pending_runs(const SweepSpec& spec,
                                      const std::filesystem::path& out_dir,
                                      const SweepShard& shard,
                                      std::size_t* skipped);
/// Plans a run to validate it; an error message ("" when valid) and whether it is a
/// ConfigError. `ranks` MPI ranks share the sweep: threads-backend runs, timed on real cores,
/// are refused when it is above 1 (ranks may share a machine).
struct RunCheck {
  std::string error;
  bool config_error = false;
};
RunCheck check_run(const SweepSpec& spec, const SweepRun& run, int ranks);
/// Runs one run of the sweep into its folder (config.json, trace.csv, summary.json); returns
/// whether the run failed numerically. Exceptions propagate.
bool execute_sweep_run(const SweepSpec& spec,
                       const SweepRun& run,
                       const std::filesystem::path& out_dir,
                       const std::filesystem::path& f_star_cache = {});

// Tuning (docs/sweeps.md "Tuning"; sweep_tuning.cpp).

/// The tuning runs of a tuned sweep (to run into DIR/tuning): per point (scheme × grid values)
/// of a tuned scheme, every tune combination (the last pointer fastest) on
/// `tuning.repetitions` seeds derive_seed(derive_seed(s₀, kSweepTuningStream), k) & (2⁶³ − 1), the
/// data seed kept at the point's.
SweepSpec tuning_sweep(const SweepSpec& spec);
/// The stream of the tuning seeds ("tune" in ASCII).
inline constexpr std::uint64_t kSweepTuningStream = 0x74756e65U;

/// One tuning run's result under the objective.
struct TuneRunResult {
  /// The run reached the target (ok, not diverged; for a time budget: ok and a finite loss).
  bool reached = false;
  /// The time to the target, or the loss at the time budget (when reached).
  double value = 0.0;
  /// The final loss of an ok run, +inf otherwise.
  double final_loss = 0.0;
};
/// A run's result from its summary.json and trace.csv text.
TuneRunResult tune_run_result(const nlohmann::json& summary,
                              const std::string& trace_csv,
                              const TuneObjective& objective);

/// One tune combination's tuning runs.
struct TuneCombination {
  std::size_t runs = 0;
  std::size_t reached = 0;
  /// Mean value over the runs that reached the target (NaN when none did).
  double mean_value = 0.0;
  /// Mean final loss over all its runs (+inf when one failed).
  double mean_final_loss = 0.0;
};
TuneCombination combine_tuning_runs(const std::vector<TuneRunResult>& runs);
/// The choice rule: among the combinations whose every run reached the target, the least mean
/// value; when none, the most runs reaching it, then the least mean final loss; ties to the
/// first combination.
std::size_t choose_combination(const std::vector<TuneCombination>& combinations);
/// The pointers (space-separated, "" when none) whose chosen value is at an end of its grid
/// (the least or greatest of numbers; else the first or last value), for grids of two values
/// or more.
std::string edge_pointers(const std::vector<TuneKey>& keys, const std::vector<std::size_t>& digits);

/// Tunes a sweep (spec.tuning unresolved): runs tuning_sweep(spec) into out_dir/tuning, chooses
/// each point's values from those runs alone, writes out_dir/tuning.csv, then runs the
/// evaluation (the sweep's runs at the chosen values) into out_dir. ConfigError with a shard.
SweepResult run_tuned_sweep(const SweepSpec& spec,
                            const std::filesystem::path& out_dir,
                            const SweepOptions& options);

/// "/stopping/r" → "stopping.r": a grid key as a plain column name (summary.csv, traces.csv).
std::string plain_name(const std::string& pointer);
/// A value as a CSV cell's text: a string's characters, otherwise its JSON.
std::string value_text(const nlohmann::json& v);
/// A point's value as a CSV cell of `spec`: value_text, but empty for a tuned pointer that the
/// run's scheme does not tune (null in a tuned sweep).
std::string point_text(const SweepSpec& spec, const nlohmann::json& v);
/// `text` as one CSV field (quoted when it holds a comma, quote or line break).
std::string csv_field(const std::string& text);

/// Every run's summary.json, in index order (the runs must be complete).
std::vector<nlohmann::json> read_sweep_summaries(const SweepSpec& spec,
                                                 const std::filesystem::path& out_dir);
/// summary.csv: one row per grid point (scheme × grid values) with the mean, standard error
/// and 95 % t interval over its repetitions of each metric, and speedups against the baseline
/// (docs/sweeps.md "summary.csv"). Defined in sweep_aggregates.cpp.
std::string sweep_summary_csv(const SweepSpec& spec, const std::vector<nlohmann::json>& summaries);
/// traces.csv: every run's trace rows in long format with its scheme, grid values, repetition
/// and f* (docs/sweeps.md "traces.csv").
std::string sweep_traces_csv(const SweepSpec& spec,
                             const std::filesystem::path& out_dir,
                             const std::vector<nlohmann::json>& summaries);

/// The index.csv text of a finished sweep, built from the runs' summary.json files.
std::string index_csv(const SweepSpec& spec, const std::filesystem::path& out_dir);
/// Writes out_dir/index.csv, summary.csv and traces.csv of a finished sweep (each atomically);
/// returns how many runs failed.
std::size_t write_sweep_index(const SweepSpec& spec, const std::filesystem::path& out_dir);

}  // namespace stragglersim::experiments

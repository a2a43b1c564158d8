#pragma once
// A config turned into everything one run needs (docs/model.md §7 "Config"). `plan_run` validates
// the whole config, loads the data and builds the code, rule and objective before anything is
// written, so a bad config never leaves output behind.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "experiments/config/backend_registry.h"
#include "models/objective.h"
#include "sim/delays/delay_model.h"
#include "sim/fastpath/order_statistics.h"
#include "sim/lockstep_group.h"
#include "sim/network.h"
#include "sim/optimizer.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::experiments {

enum class OptimizerKind { kGd, kNesterov, kErasureHeadAgd };

struct RunPlan {
  std::string name;
  std::uint64_t seed = 1;
  /// Seeds data generation and the train/test split (top-level "data_seed", default `seed`):
  /// runs that differ in `seed` only share their data set and its f*.
  std::uint64_t data_seed = 1;
  int workers = 0;
  int partitions = 0;
  /// Threads of one simulated training run's gradient passes (top-level "threads"; default
  /// every core, capped by plan_run's max_threads). Not in `resolved`: results never depend
  /// on it.
  int threads = 1;
  /// The config with every default filled in: what the summary records.
  nlohmann::json resolved;

  /// Null for a delay-only run ("data": null).
  std::shared_ptr<const models::Objective> objective;
  std::shared_ptr<const models::Objective> test_objective;

  sim::Scheme scheme;
  /// Builds a fresh delay model for the code's loads (one per run: models may keep state).
  std::function<std::unique_ptr<sim::DelayModel>()> make_delays;
  sim::StragglerPolicy stragglers = sim::StragglerPolicy::kCancel;
  /// How a delay-only run draws iterations ("sampler": auto picks order statistics where exact).
  sim::Sampler sampler = sim::Sampler::kWorkers;

  OptimizerKind optimizer = OptimizerKind::kGd;
  /// The step γ (resolved: "auto" becomes 1/β).
  double step = 0.0;
  /// optimizer.schedule: γ_t from γ (constant when absent; docs/model.md §2 "Step schedules").
  sim::StepSchedule schedule;
  /// optimizer.momentum (gd only): heavy-ball momentum m in [0, 1) (0 when absent).
  double momentum = 0.0;
  /// optimizer.start: x₀ drawn N(0, σ²) per coordinate (σ = start.scale) instead of the model's
  /// own x₀ (zero for the linear models); nullopt when absent.
  std::optional<double> gaussian_start;
  /// β of the objective (0 for a delay-only run).
  double smoothness = 0.0;
  /// The update rule of an asynchronous run (stopping.rule k_batch_sync, k_async,
  /// k_batch_async); nullopt for a synchronous one.
  std::optional<sim::UpdateShape> update;
  /// optimizer.batch: rows per partition of each stochastic gradient (nullopt: full batch).
  std::optional<Eigen::Index> batch;
  std::uint64_t iterations = 0;
  /// optimizer.time_budget: stop after the first iteration whose cumulative simulated time
  /// reaches it (+∞ when absent).
  double time_budget = std::numeric_limits<double>::infinity();
  std::optional<double> target_loss;
  /// "divergence_bound" B > 1: a training run whose loss rises above B·f(x₀) ends there as
  /// failed (diverged); nullopt: only a non-finite loss ends it.
  std::optional<double> divergence_bound;
  /// The "network" block (free when absent): latency, bandwidth, message size, serial link.
  sim::NetworkOptions network;
  /// The "aggregation" block's row ("parameter_server" when the config has none).
  std::string aggregation = "parameter_server";
  /// A collective in place of the parameter server (docs/model.md §3 "Aggregation"): its options
  /// and schedule over the workers (elements: the model's dimension with data, a timing size for
  /// a delay-only run); nullopt for the parameter server.
  std::optional<sim::CollectiveAggregation> collective;
  /// The backend's row of the backend table (name and traits; "simulated" when the config has
  /// no "backend" block) and what its config object set up.
  BackendRow backend;
  BackendSetup backend_setup;

  /// Folder of the f* cache (experiments/predict/plan_optimum.h); empty: no cache. Not in
  /// `resolved`: f* is the same either way.
  std::filesystem::path f_star_cache;
  /// Real seconds plan_run_file took (config, data, test set, delay trace, β), measured by the
  /// `run` command; empty where the plan came otherwise (sweeps, the Python module). Not in
  /// `resolved`: summary.json's measured `plan_seconds`.
  std::optional<double> plan_seconds;
  /// models::data_bytes_read() when the `run` command began planning (the same runs as
  /// plan_seconds): summary.json's `data_bytes_read` is the difference at the run's end. Not in
  /// `resolved`: it counts the process's passes, which a cached f* skips.
  std::optional<std::int64_t> data_bytes_before_plan;

  /// The memory plan_run estimated for the whole run, and for its data sets alone (bytes;
  /// experiments/config/memory_budget.h): what a lock-step group shares and what each run adds.
  double memory = 0.0;
  double data_memory = 0.0;
  /// The lock-step group this run's passes are shared with (a sweep's, docs/sweeps.md
  /// "Lock-step groups"); null: the run makes its own. Not in `resolved`: the same bytes either
  /// way.
  sim::LockstepGroup* lockstep = nullptr;

  [[nodiscard]] bool delay_only() const { return objective == nullptr; }
  /// x₀ of the loss (LossModel::initial_point, from the run's init stream); empty: zero.
  Eigen::VectorXd initial_point;
  /// A fresh optimiser at x₀ (initial_point).
  [[nodiscard]] std::unique_ptr<sim::Optimizer> make_optimizer() const;
  /// A fresh simulated clock of the run with delay seed `delay_seed`: its delays, rule, straggler
  /// policy, network, its code's regrouping (dynamic_frc) and its collective.
  [[nodiscard]] std::unique_ptr<sim::SimulatedCluster> make_cluster(std::uint64_t delay_seed) const;
  /// A fresh backend of the run (`pool`: the training loop's, for the partition gradients).
  [[nodiscard]] std::unique_ptr<sim::Backend> make_backend(models::WorkerPool* pool) const {
    return backend_setup.make(*this, pool);
  }
};

/// The set-up runs of one process share (a sweep): each data set is loaded once while some plan
/// still holds it, and each smoothness constant β is computed once. Keyed by the config's data
/// object, seed, base folder and loss, so an equal key means equal bytes. Thread-safe.
class SetupCache {
 public:
  struct Data {
    std::shared_ptr<models::Dataset> train;
    std::shared_ptr<models::Dataset> test;
    nlohmann::json resolved;  ///< the resolved data object
    double memory = 0.0;      ///< the plan's estimate of the data sets (bytes)
  };
  /// Held by a plan from its look-up of `key` to its store on a miss: plans of one data set
  /// started at once (a sweep's validation on `--jobs` threads) load it once, the others wait and
  /// take the stored copy; other keys load in parallel.
  [[nodiscard]] std::unique_lock<std::mutex> loading(const std::string& key);
  /// The data stored under `key` if a plan still holds it.
  [[nodiscard]] std::optional<Data> data(const std::string& key);
  void store_data(const std::string& key, const Data& data);
  [[nodiscard]] std::optional<double> smoothness(const std::string& key);
  void store_smoothness(const std::string& key, double beta);

 private:
  struct Entry {
    std::weak_ptr<models::Dataset> train;
    std::weak_ptr<models::Dataset> test;
    bool has_test = false;
    nlohmann::json resolved;
    double memory = 0.0;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> data_;
  std::map<std::string, std::unique_ptr<std::mutex>> loading_;
  std::map<std::string, double> smoothness_;
};

struct PlanOptions {
  /// > 0: caps plan.threads (a sweep's share of the cores per run).
  int max_threads = 0;
  /// Shared set-up of earlier plans (null: everything is computed).
  SetupCache* setup = nullptr;
  /// This process is worker i of an mpi run (rank i + 1): see plan_run.
  std::optional<int> mpi_worker = std::nullopt;
  /// plan.f_star_cache (empty: none).
  std::filesystem::path f_star_cache = {};
};

/// Validates `config` (read from `file`; relative data paths resolve against `base_dir`) and
/// builds the run. Throws ConfigError with file, JSON pointer, value and accepted values.
/// `options.mpi_worker`: this process is worker i of an mpi run (rank i + 1): with an mpi backend
/// it loads only the training rows of its own partitions (objective->partial()), no test set, and
/// takes no step (docs/mpi_backend.md "Data").
RunPlan plan_run(const nlohmann::json& config,
                 const std::string& file,
                 const std::filesystem::path& base_dir,
                 const PlanOptions& options = {});

/// The cores of this machine (std::thread::hardware_concurrency, at least 1).
int hardware_cores();

/// The largest "threads" a config may ask for on this machine: kThreadsPerCore threads per core,
/// at least kMinThreadCap (more only oversubscribes the cores: the results are the same).
inline constexpr int kThreadsPerCore = 4;
inline constexpr int kMinThreadCap = 8;
int thread_cap();

/// Largest config or sweep file read_json_file accepts (16 MiB): configs are a few hundred bytes;
/// data sets belong in data files.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;

/// Reads and parses a JSON file; ConfigError on a missing file, a folder, anything but a regular
/// file (a device, a FIFO), a file over kMaxConfigBytes, or a syntax error.
nlohmann::json read_json_file(const std::filesystem::path& path);

/// Reads `path` and plans the run it describes.
RunPlan plan_run_file(const std::filesystem::path& path,
                      std::optional<int> mpi_worker = std::nullopt);

}  // namespace stragglersim::experiments

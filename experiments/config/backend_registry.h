#pragma once
// The backend table (docs/plugins.md "Backends"): one row per backend, with its name, a one-line
// description, the config keys it reads, what planning and the run need to know about it
// (`BackendTraits`) and the factory that reads its keys. Every caller asks the row or the built
// sim::Backend, never the backend's name: a new backend is one file in sim/backends/ plus one
// row here (or one register_backend call).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config/factories.h"
#include "experiments/config/json_reader.h"
#include "sim/backend.h"

namespace stragglersim::models {
class WorkerPool;
}  // namespace stragglersim::models

namespace stragglersim::experiments {

struct RunPlan;

/// What planning, the run and sweeps ask of a backend before it is built.
struct BackendTraits {
  /// Runs on the wall clock: computes every gradient for real (so it needs data), its messages
  /// take their real time (no "network" block), its master computes on one thread, and the
  /// trace gains the real_* columns and the run heard.csv (from sim::Backend::real_records()).
  bool real_time = false;
  /// May run beside other runs of a sweep (--jobs > 1, MPI sweeps); false: a local sweep runs
  /// it alone and an MPI sweep refuses it.
  bool shares_cores = true;
  /// One process per worker plus the master under `mpirun -np workers+1`
  /// (BackendSetup::run_worker is a worker's loop); never inside a sweep.
  bool mpi = false;
  /// Takes delay-only configs ("data": null), which run on the simulated clock's fast path.
  bool runs_delay_only = false;
};

/// A backend as its config object describes it: what plan_run keeps in the RunPlan.
struct BackendSetup {
  /// The run's backend (`pool`: the training loop's, for the partition gradients; may be null).
  std::function<std::unique_ptr<sim::Backend>(const RunPlan& plan, models::WorkerPool* pool)> make;
  /// Worker `worker` (0-based) of a traits.mpi backend, in its own process; null otherwise.
  std::function<void(const RunPlan& plan, int worker)> run_worker;
};

/// What a backend factory may need beyond its own keys.
struct BackendContext {
  int workers = 0;
};

/// Reads and validates the row's keys (errors at their JSON pointers), returns the setup.
using BackendFactory = std::function<BackendSetup(JsonReader& backend, const BackendContext&)>;

struct BackendRow {
  std::string name;
  std::string description;
  /// The keys besides "kind", with their defaults ("" when none).
  std::vector<KeyDoc> keys;
  BackendTraits traits;
  /// Why this build cannot run it ("" when it can), e.g. "not compiled in (...)": the row is
  /// listed, and a config naming it is refused at /backend/kind with this reason.
  std::string unavailable;
  BackendFactory make;
  /// What the backend requires of the rest of the run (requirements.h), checked with the
  /// rule's and the code's once the config is read; the built-in rows need none beyond their
  /// traits.
  Requirements requirements = {};
};

/// The row a config without a "backend" object (or without its "kind") runs on.
inline const std::string kDefaultBackend = "simulated";

/// The keys every backend object accepts besides its row's.
inline const std::vector<std::string> kBackendKeys = {"kind"};

/// The rows in registration order: simulated (the default), threads, mpi, then any registered
/// later. A copy: registration never invalidates it.
std::vector<BackendRow> backend_factories();

/// The row named `name`, or nullptr.
std::optional<BackendRow> find_backend(std::string_view name);

/// Adds a row to the table (the built-in rows are added the same way). Illegal: an empty name,
/// a name already in the table, a null factory. Thread-safe; a plan keeps its own copy of its
/// row.
void register_backend(BackendRow row);

/// Removes a row added by register_backend after the built-in ones (a test's own backend).
/// Illegal: a built-in row or a name not in the table.
void unregister_backend(std::string_view name);

/// "\"a\"", "\"a\" or \"b\"", "\"a\", \"b\" or \"c\"": the rows of `rows` that satisfy `keep`,
/// for the "expected" part of a backend error.
std::string quoted_names(const std::vector<BackendRow>& rows,
                         const std::function<bool(const BackendRow&)>& keep);

/// The rows as documentation (`stragglersim list`): an unavailable row's reason follows its
/// description.
std::vector<ChoiceDoc> backend_docs();

}  // namespace stragglersim::experiments

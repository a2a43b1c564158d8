#pragma once
// The explicit name -> factory tables of the run-time plug-in points (docs/plugins.md): gradient
// codes (code_factories.cpp), delay models (delay_factories.cpp), stopping rules
// (stopping_factories.cpp), loss models and the documented choices (factories.cpp); backends:
// backend_registry.h. A new implementation is one new file in its library plus one row in its
// table. Each factory reads (and validates) its own keys from the config; each row declares what
// it requires of the rest of the run (requirements.h).

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codes/gradient_code.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/requirements.h"
#include "models/base/options_check.h"
#include "models/loss_model.h"
#include "sim/delays/delay_model.h"
#include "sim/stopping_rule.h"

namespace stragglersim::experiments {

/// What a factory may need beyond its own keys.
struct ClusterShape {
  std::string file;  ///< config file, for messages about top-level keys
  int workers = 0;
  int partitions = 0;
  bool partitions_given = false;  ///< whether the config set "partitions" (else k = n)
  std::uint64_t seed = 1;         ///< the code's own stream seed, derived from the run seed
  /// Build group codes (uncoded, frc) compact, without per-worker arrays: delay-only runs,
  /// which never decode (GradientCode::Compact).
  bool compact = false;
  /// The config's delay block and the folder its relative paths resolve against: where a
  /// `proportional` code with "factors": "delay" estimates its workers' speeds.
  nlohmann::json delay = {};
  std::filesystem::path base_dir = {};
};

using CodePtr = std::shared_ptr<const codes::GradientCode>;
using RulePtr = std::shared_ptr<const sim::StoppingRule>;
using DelayMaker = std::function<std::unique_ptr<sim::DelayModel>()>;

/// Factories read their keys into the class's Options and let the Options validate; the caller
/// then rejects unknown keys against the row's key list.
using CodeFactory = std::function<CodePtr(JsonReader& code, const ClusterShape& shape)>;
/// `base_dir`: the config file's folder, against which a delay's relative file path resolves.
using DelayFactory = std::function<DelayMaker(
    JsonReader& delay, const sim::WorkerLoads& loads, const std::filesystem::path& base_dir)>;
/// `data_classes`: the data's class count (largest label + 1, at least 0), the default of a
/// multiclass model's "classes".
using LossFactory =
    std::function<std::shared_ptr<const models::LossModel>(JsonReader& loss, int data_classes)>;
using StoppingFactory = std::function<RulePtr(JsonReader& stopping, const CodePtr& code)>;

/// One config key a row accepts, with its default as the config would write it ("" when the
/// key is required or has no default).
struct KeyDoc {
  std::string name;
  std::string default_value;
};

/// A row of a plug-in table: its name, a one-line description, the keys it reads besides the
/// selector ("kind" or "rule"), the factory, and what the row requires of the rest of the run
/// (requirements.h; checked once the whole config is read). `stragglersim list` prints the rows,
/// and the "unknown key" error lists the row's keys, so neither can drift from what the factory
/// reads.
template <typename Factory>
struct FactoryRow {
  std::string name;
  std::string description;
  std::vector<KeyDoc> keys;
  Factory make;
  Requirements requirements = {};
};

/// What a code will need before it is built: bytes (with its decoders and the simulation's
/// per-worker vectors) and the partitions it will have, so that the config layer refuses an
/// oversized code or one with more partitions than rows before spending time on it.
struct CodeFootprint {
  double bytes = 0.0;
  double partitions = 0.0;
  /// How the partitions follow from the keys when the code fixes them (e.g. "2·workers/d").
  std::string partitions_formula;
};

/// The footprint of the code row named `kind` for n workers, k partitions and its "d" (0 when it
/// has none): support-built codes (uncoded, frc) need O(n·d + k), nothing when built `compact`;
/// the others a dense B and two n × k work matrices; expander codes have k = 2n/d.
[[nodiscard]] CodeFootprint code_footprint(
    std::string_view kind, double workers, double partitions, double d, bool compact = false);

/// A documented choice that is not a factory table (optimizers, data generators), or a row's
/// documentation (`stragglersim list`).
struct ChoiceDoc {
  std::string name;
  std::string description;
  std::vector<KeyDoc> keys;
  Requirements requirements = {};
};

const std::vector<FactoryRow<CodeFactory>>& code_factories();
const std::vector<FactoryRow<DelayFactory>>& delay_factories();
const std::vector<FactoryRow<LossFactory>>& loss_factories();
/// The stopping rules: the built-in rows, then any registered. A copy: registration never
/// invalidates it.
std::vector<FactoryRow<StoppingFactory>> stopping_factories();

/// Adds a stopping rule defined elsewhere (a test's) to the table, the way the built-in rows
/// enter it. Illegal: an empty name, a name already in the table, a null factory. Thread-safe.
void register_stopping_rule(FactoryRow<StoppingFactory> row);

/// Removes a rule added by register_stopping_rule. Illegal: a built-in rule or an unknown name.
void unregister_stopping_rule(std::string_view name);

/// Names of a table's rows, sorted, for "valid values are: ..." messages.
template <typename Factory>
std::vector<std::string> names_of(const std::vector<FactoryRow<Factory>>& table);

/// The keys an object of this row accepts: `always` (the selector, shared keys) plus the row's.
template <typename Row>
std::vector<std::string> keys_of(const Row& row, std::vector<std::string> always) {
  for (const auto& key : row.keys) {
    always.push_back(key.name);
  }
  return always;
}

/// The config keys shared by every row of a table (besides the row's own).
inline const std::vector<std::string> kCodeKeys = {"decoder", "kind"};
inline const std::vector<std::string> kDelayKeys = {"kind"};
inline const std::vector<std::string> kLossKeys = {"kind", "l2"};
inline const std::vector<std::string> kStoppingKeys = {"rule"};

const std::vector<ChoiceDoc>& optimizer_docs();
const std::vector<ChoiceDoc>& generator_docs();
/// The file data sources (csv, libsvm, fashion_mnist) with their keys; "synthetic" is
/// generator_docs.
const std::vector<ChoiceDoc>& data_source_docs();

/// Turns a violated options constraint into a ConfigError at the key's JSON pointer (top-level
/// fields, "partitions", at the root of `shape.file`); "got" shows the config's own value.
[[noreturn]] void reject(JsonReader& reader, const ClusterShape* shape, const Violation& v);

}  // namespace stragglersim::experiments

#pragma once
// The aggregation table (docs/model.md §3 "Aggregation", docs/plugins.md "Aggregations"): how the
// workers' messages become the update, one row per kind. `parameter_server` (the default when a
// config has no "aggregation" block) is the master of §1; every other row is a collective
// (sim/collectives/collective.h) on the simulated clock. A row is its name, a one-line
// description, the keys it reads besides "kind", a factory reading them into the collective's
// options, and what it requires of the rest of the run (requirements.h): a new aggregation is one
// row here (or one register_aggregation call).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config/factories.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/requirements.h"
#include "sim/collectives/collective.h"

namespace stragglersim::experiments {

/// What an aggregation factory may need beyond its own keys.
struct AggregationContext {
  int workers = 0;
  /// The model's dimension p (0 for a delay-only run): with data a message is 8·p bytes.
  std::int64_t dimension = 0;
  [[nodiscard]] bool delay_only() const { return dimension == 0; }
};

/// A collective as its config object describes it: the algorithm and its links, and the bytes
/// S of the reduced vector (8·p with data; "message_bytes" for a delay-only run).
struct CollectiveSpec {
  sim::collectives::CollectiveOptions options;
  double message_bytes = 0.0;
};

/// Reads and validates the row's keys (errors at their JSON pointers); nullopt: the parameter
/// server (no collective).
using AggregationFactory = std::function<std::optional<CollectiveSpec>(JsonReader& aggregation,
                                                                       const AggregationContext&)>;

struct AggregationRow {
  std::string name;
  std::string description;
  /// The keys besides "kind", with their defaults ("" when required or none).
  std::vector<KeyDoc> keys;
  AggregationFactory make;
  Requirements requirements = {};
};

/// The row a config without an "aggregation" block runs on.
inline const std::string kDefaultAggregation = "parameter_server";

/// The keys every aggregation object accepts besides its row's.
inline const std::vector<std::string> kAggregationKeys = {"kind"};

/// The rows in registration order: parameter_server, then the collectives in
/// collectives::kind_names() order, then any registered later. A copy.
std::vector<AggregationRow> aggregation_factories();

/// The row named `name`, or nullopt.
std::optional<AggregationRow> find_aggregation(std::string_view name);

/// Adds a row (the built-in rows are added the same way). Illegal: an empty name, a name
/// already in the table, a null factory. Thread-safe.
void register_aggregation(AggregationRow row);

/// Removes a row added by register_aggregation. Illegal: a built-in row or an unknown name.
void unregister_aggregation(std::string_view name);

/// The rows as documentation (`stragglersim list aggregations`).
std::vector<ChoiceDoc> aggregation_docs();

/// Elements of a delay-only run's timing schedule over n ranks: 2·n·(n − 1)·2^⌊log2 n⌋ (at least
/// 1), so that every algorithm's chunks (S/n, S/(n − 1), S/2, halving by powers of two) are equal.
[[nodiscard]] std::int64_t timing_elements(int workers);

}  // namespace stragglersim::experiments

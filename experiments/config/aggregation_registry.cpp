#include "experiments/config/aggregation_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "experiments/config/config_error.h"
#include "experiments/config/factory_support.h"
#include "experiments/config/row_registry.h"
#include "models/base/invariant.h"

namespace stragglersim::experiments {
namespace {

using sim::collectives::CollectiveKind;
using sim::collectives::CollectiveOptions;
using sim::collectives::LinkCost;

/// Type checks only: the ranges are CollectiveOptions::validate's, reported at the key. An absent
/// bandwidth is infinite (no transfer time) and stays out of the resolved config (JSON has no ∞).
LinkCost read_link_cost(JsonReader& reader, const char* latency, const char* bandwidth) {
  LinkCost link;
  link.latency = reader.number(latency, 0.0);
  if (reader.has(bandwidth)) {
    link.bandwidth = reader.number(bandwidth, std::nullopt);
  }
  return link;
}

/// S: 8·p with data (message_bytes refused), message_bytes for a delay-only run (0; required with
/// a bandwidth, as the network block's).
double read_message_bytes(JsonReader& reader, const AggregationContext& context) {
  if (!context.delay_only()) {
    if (reader.has("message_bytes")) {
      reader.fail_value("message_bytes",
                        "with data the reduced vector is the model's p values of 8 bytes (S = 8 * "
                        "p); it has no message size of its own",
                        reader.raw("message_bytes"),
                        "no message_bytes key (a delay-only run, \"data\": null, sets it)");
    }
    return 8.0 * static_cast<double>(context.dimension);
  }
  if (reader.has("bandwidth") && !reader.has("message_bytes")) {
    reader.fail("message_bytes",
                "missing required key: a delay-only run (\"data\": null) with a bandwidth needs "
                "the message size in bytes; expected a number >= 0");
  }
  return reader.number("message_bytes", 0.0, 0.0);
}

/// The keys every collective row reads, then the row's own (`extra`), then validate().
CollectiveSpec read_collective(JsonReader& reader,
                               const AggregationContext& context,
                               CollectiveOptions options) {
  options.link = read_link_cost(reader, "latency", "bandwidth");
  CollectiveSpec spec{options, read_message_bytes(reader, context)};
  if (const Validation v = spec.options.validate(context.workers)) {
    if (v->field == "workers") {  // a size the schedule does not exist for: the top-level count
      throw ConfigError(fmt::format("{}:/workers: {}; got {}; expected {}",
                                    reader.file(),
                                    v->problem,
                                    context.workers,
                                    v->expected));
    }
    reject(reader, nullptr, *v);
  }
  return spec;
}

AggregationFactory collective_factory(CollectiveKind kind) {
  return [kind](JsonReader& reader,
                const AggregationContext& context) -> std::optional<CollectiveSpec> {
    CollectiveOptions options;
    options.kind = kind;
    if (kind == CollectiveKind::kHierarchical) {
      if (!reader.has("node_size")) {
        reader.fail("node_size",
                    fmt::format("missing required key: the hierarchical all-reduce needs the ranks "
                                "per node; expected a divisor of workers = {}",
                                context.workers));
      }
      options.node_size = to_int(reader.integer("node_size", std::nullopt));
      options.intra = read_link_cost(reader, "intra_latency", "intra_bandwidth");
    }
    if (kind == CollectiveKind::kStragglar) {
      if (!reader.has("straggler")) {
        reader.fail("straggler",
                    fmt::format("missing required key: StragglAR needs the persistent straggler's "
                                "rank; expected an integer in [0, {}]",
                                context.workers - 1));
      }
      options.straggler = to_int(reader.integer("straggler", std::nullopt));
    }
    return read_collective(reader, context, options);
  };
}

/// What a collective combines with: the simulated clock (the one requirement the real backends
/// lift once they run the schedules), the cancel policy (every rank joins at the stop), no
/// network block (its links carry the messages) and a synchronous rule.
Requirements collective_requirements() {
  return {
      .needs_simulated_clock = Flag{{.why = "the threads and mpi backends do not run collectives"}},
      .straggler_policy = OneOf{{"cancel"}, {.why = "every rank joins the all-reduce at the stop"}},
      .no_network = Flag{{.why = "its own links carry the messages",
                          .accepted = "no \"network\" block (the aggregation's latency and "
                                      "bandwidth set the links)",
                          .at = ReportAt::kConflict}},
      .synchronous =
          Flag{{.why = "the asynchronous loop has no collectives", .at = ReportAt::kConflict}},
  };
}

std::vector<KeyDoc> collective_link_keys() {
  return {{"latency", "0"}, {"bandwidth", "none"}, {"message_bytes", "0"}};
}

std::vector<KeyDoc> with_keys(std::vector<KeyDoc> keys, const std::vector<KeyDoc>& extra) {
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

std::vector<AggregationRow> builtin_aggregations() {
  const Requirements collective = collective_requirements();
  return {
      {"parameter_server",
       "workers send to the master, which stops by the rule and decodes (default)",
       {},
       [](JsonReader& /*reader*/, const AggregationContext& /*context*/) {
         return std::optional<CollectiveSpec>();
       }},
      {"ring",
       "ring all-reduce: reduce-scatter then all-gather, 2(n-1) rounds of S/n",
       collective_link_keys(),
       collective_factory(CollectiveKind::kRing),
       collective},
      {"tree",
       "double binary tree (NCCL): two trees, each reducing and broadcasting S/2",
       collective_link_keys(),
       collective_factory(CollectiveKind::kTree),
       collective},
      {"halving_doubling",
       "recursive halving then doubling (Rabenseifner)",
       collective_link_keys(),
       collective_factory(CollectiveKind::kHalvingDoubling),
       collective},
      {"direct",
       "each rank sends its shard to its owner, the owners send the sums to all",
       collective_link_keys(),
       collective_factory(CollectiveKind::kDirect),
       collective},
      {"hierarchical",
       "nodes of node_size ranks: intra-node reduce, ring among node leaders, intra-node "
       "broadcast",
       with_keys(collective_link_keys(),
                 {{"node_size", ""}, {"intra_latency", "0"}, {"intra_bandwidth", "none"}}),
       collective_factory(CollectiveKind::kHierarchical),
       collective},
      {"stragglar",
       "StragglAR: ring reduce-scatter among the n-1 ranks other than the persistent straggler, "
       "then rounds of S/(n-1) with it",
       with_keys(collective_link_keys(), {{"straggler", ""}}),
       collective_factory(CollectiveKind::kStragglar),
       collective},
  };
}

RowRegistry<AggregationRow>& aggregation_registry() {
  static RowRegistry<AggregationRow> table(builtin_aggregations(), "aggregation");
  return table;
}

}  // namespace

std::vector<AggregationRow> aggregation_factories() { return aggregation_registry().rows(); }

std::optional<AggregationRow> find_aggregation(std::string_view name) {
  return aggregation_registry().find(name);
}

void register_aggregation(AggregationRow row) { aggregation_registry().add(std::move(row)); }

void unregister_aggregation(std::string_view name) { aggregation_registry().remove(name); }

std::vector<ChoiceDoc> aggregation_docs() {
  std::vector<ChoiceDoc> docs;
  for (const auto& row : aggregation_factories()) {
    docs.push_back({row.name, row.description, row.keys, row.requirements});
  }
  return docs;
}

std::int64_t timing_elements(int workers) {
  STRAGGLERSIM_ASSERT(workers >= 1 && workers <= (1 << 20), "a timing schedule of 1 to 2^20 ranks");
  const auto n = static_cast<std::int64_t>(workers);
  const auto power = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(n)));
  return std::max<std::int64_t>(1, 2 * n * (n - 1) * power);
}

}  // namespace stragglersim::experiments

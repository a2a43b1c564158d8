// The aggregation table (experiments/config/aggregation_registry.cpp): every refusal of a bad
// "aggregation" block, and of a collective beside what it does not combine with, word for word
// at its JSON pointer; what the rows declare and list; the plan a good block gives.
#include "experiments/config/aggregation_registry.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/config_schema.h"
#include "experiments/config/run_plan.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

/// 6 workers, frc d = 2, the first 3 of 6, with data (240 rows of 5 features), and `aggregation`.
nlohmann::json aggregation_run(const nlohmann::json& aggregation) {
  auto c = testing::small_logistic_config("aggregation");
  c["aggregation"] = aggregation;
  return c;
}

/// 4 workers without data, uncoded, waiting for all, and `aggregation`.
nlohmann::json aggregation_delay_only(const nlohmann::json& aggregation) {
  auto c = testing::four_worker_delay_only({{"kind", "shifted_exponential"}});
  c["aggregation"] = aggregation;
  return c;
}

std::string aggregation_error(const nlohmann::json& config) {
  return testing::plan_error(config, testing::process_scratch("aggregation"));
}

}  // namespace

TEST_CASE("aggregation: a bad block is refused at its key with the accepted values",
          "[experiments][config][aggregation]") {
  CHECK(aggregation_error(aggregation_run({{"kind", "rings"}})) ==
        "cfg.json:/aggregation/kind: unknown aggregation 'rings'; did you mean 'ring'? valid "
        "values are: parameter_server, ring, tree, halving_doubling, direct, hierarchical, "
        "stragglar");
  CHECK(aggregation_error(aggregation_run({{"kind", "hierarchical"}, {"node_size", 4}})) ==
        "cfg.json:/aggregation/node_size: does not divide workers; got 4; expected a divisor of 6");
  CHECK(aggregation_error(aggregation_run({{"kind", "hierarchical"}})) ==
        "cfg.json:/aggregation/node_size: missing required key: the hierarchical all-reduce "
        "needs the ranks per node; expected a divisor of workers = 6");
  CHECK(aggregation_error(aggregation_delay_only({{"kind", "stragglar"}})) ==
        "cfg.json:/aggregation/straggler: missing required key: StragglAR needs the persistent "
        "straggler's rank; expected an integer in [0, 3]");
  CHECK(aggregation_error(aggregation_delay_only({{"kind", "stragglar"}, {"straggler", 4}})) ==
        "cfg.json:/aggregation/straggler: out of range; got 4; expected an integer in [0, 3]");
  auto one = aggregation_delay_only({{"kind", "stragglar"}, {"straggler", 0}});
  one["workers"] = 1;
  CHECK(aggregation_error(one) ==
        "cfg.json:/workers: too few for stragglar; got 1; expected at least 2");
  CHECK(aggregation_error(aggregation_run({{"kind", "ring"}, {"latency", -1.0}})) ==
        "cfg.json:/aggregation/latency: out of range; got -1.0; expected a number >= 0");
  CHECK(aggregation_error(aggregation_run({{"kind", "tree"}, {"bandwidth", 0}})) ==
        "cfg.json:/aggregation/bandwidth: out of range; got 0; expected a number > 0");
  CHECK(aggregation_error(aggregation_run(
            {{"kind", "hierarchical"}, {"node_size", 2}, {"intra_bandwidth", -5}})) ==
        "cfg.json:/aggregation/intra_bandwidth: out of range; got -5; expected a number > 0");
  CHECK(aggregation_error(aggregation_run({{"kind", "ring"}, {"message_bytes", 100}})) ==
        "cfg.json:/aggregation/message_bytes: with data the reduced vector is the model's p "
        "values of 8 bytes (S = 8 * p); it has no message size of its own; got 100; expected no "
        "message_bytes key (a delay-only run, \"data\": null, sets it)");
  CHECK(aggregation_error(aggregation_delay_only({{"kind", "ring"}, {"bandwidth", 1e6}})) ==
        "cfg.json:/aggregation/message_bytes: missing required key: a delay-only run (\"data\": "
        "null) with a bandwidth needs the message size in bytes; expected a number >= 0");
  // Keys of another kind are unknown here, with this row's keys listed.
  CHECK(aggregation_error(aggregation_run({{"kind", "ring"}, {"node_size", 2}})) ==
        "cfg.json:/aggregation/node_size: unknown key 'node_size'; valid keys are: bandwidth, "
        "kind, latency, message_bytes");
  CHECK(aggregation_error(aggregation_run({{"kind", "parameter_server"}, {"latency", 1}})) ==
        "cfg.json:/aggregation/latency: unknown key 'latency'; valid keys are: kind");
}

TEST_CASE("aggregation: a collective refuses a network, an asynchronous rule, finish and threads",
          "[experiments][config][aggregation]") {
  auto network = aggregation_run({{"kind", "ring"}});
  network["network"] = {{"latency", 0.5}};
  CHECK(aggregation_error(network) ==
        "cfg.json:/network: the ring aggregation needs no network block (its own links carry "
        "the messages); got {\"latency\":0.5}; expected no \"network\" block (the aggregation's "
        "latency and bandwidth set the links)");
  auto asynchronous = aggregation_run({{"kind", "tree"}});
  asynchronous["code"] = {{"kind", "uncoded"}};
  asynchronous["stopping"] = {{"rule", "k_async"}, {"k", 2}};
  CHECK(aggregation_error(asynchronous) ==
        "cfg.json:/stopping/rule: the tree aggregation needs a synchronous rule (the "
        "asynchronous loop has no collectives); got \"k_async\"; expected a synchronous "
        "stopping rule");
  auto finish = aggregation_run({{"kind", "direct"}});
  finish["stragglers"] = "finish";
  CHECK(aggregation_error(finish) ==
        "cfg.json:/aggregation/kind: the direct aggregation needs no straggler policy (every rank "
        "joins the all-reduce at the stop); got \"finish\"; expected stragglers absent or cancel");
  // The real backends run every collective but StragglAR (docs/backends.md).
  auto threads = aggregation_run({{"kind", "stragglar"}, {"straggler", 1}});
  threads["backend"] = {{"kind", "threads"}};
  CHECK(aggregation_error(threads) ==
        "cfg.json:/aggregation/kind: the stragglar aggregation needs the simulated clock (the "
        "threads and mpi backends do not run StragglAR); got \"threads\"; expected a backend on "
        "the simulated clock");
  // The rule's own checks still come first: a deadline <= 0.
  auto deadline = aggregation_run({{"kind", "ring"}});
  deadline["stopping"] = {{"rule", "deadline"}, {"after", 0}};
  CHECK(aggregation_error(deadline) ==
        "cfg.json:/stopping/after: out of range; got 0; expected a number > 0");
  // The parameter server combines with all of them.
  network["aggregation"] = {{"kind", "parameter_server"}};
  CHECK(aggregation_error(network) == "no error");
}

TEST_CASE("aggregation: drop_compute is the multi-message rule with a threshold",
          "[experiments][config][aggregation]") {
  auto c = aggregation_run({{"kind", "ring"}});
  c["stopping"] = {{"rule", "drop_compute"}, {"threshold", 0}};
  CHECK(aggregation_error(c) ==
        "cfg.json:/stopping/threshold: out of range; got 0; expected a number > 0");
  c["stopping"]["threshold"] = 1.5;
  CHECK(aggregation_error(c) ==
        "cfg.json:/stopping/rule: the drop_compute rule needs the proportional or uncoded code "
        "(its micro-batches are each worker's own partitions); got \"frc\"; expected code kind "
        "proportional or uncoded");
  // Proportional with d = 1 and equal factors: each worker holds k/n = 4 micro-batches.
  c["code"] = {{"kind", "proportional"}, {"d", 1}, {"factors", std::vector<double>(6, 1.0)}};
  c["partitions"] = 24;
  const RunPlan plan = plan_run(c, "cfg.json", testing::process_scratch("aggregation"));
  CHECK(plan.scheme.rule->deadline() == std::optional<double>(1.5));
  REQUIRE(plan.scheme.rule->partition_orders() != nullptr);
  for (const auto& order : *plan.scheme.rule->partition_orders()) {
    CHECK(order.size() == 4);
  }
  // With the parameter server too: the multi-message rule with a deadline.
  c.erase("aggregation");
  CHECK(aggregation_error(c) == "no error");
}

TEST_CASE("aggregation: a good block plans the collective and is recorded only when given",
          "[experiments][config][aggregation]") {
  const auto dir = testing::process_scratch("aggregation");
  const RunPlan none = plan_run(testing::small_logistic_config("a"), "cfg.json", dir);
  CHECK(!none.collective);
  CHECK(none.aggregation == "parameter_server");
  CHECK(!none.resolved.contains("aggregation"));

  const RunPlan ring =
      plan_run(aggregation_run({{"kind", "ring"}, {"latency", 0.01}}), "cfg.json", dir);
  REQUIRE(ring.collective);
  CHECK(ring.collective->options.kind == sim::collectives::CollectiveKind::kRing);
  CHECK(ring.collective->options.link.latency == 0.01);
  CHECK(std::isinf(ring.collective->options.link.bandwidth));
  CHECK(ring.collective->schedule->ranks == 6);
  CHECK(ring.collective->schedule->elements == ring.objective->dimension());
  CHECK(ring.collective->bytes_per_element == 8.0);
  CHECK(ring.resolved["aggregation"] == nlohmann::json({{"kind", "ring"}, {"latency", 0.01}}));

  // Delay-only: S spread over 2·n·(n − 1)·2^⌊log2 n⌋ elements, and every worker drawn.
  const RunPlan timing = plan_run(
      aggregation_delay_only({{"kind", "hierarchical"}, {"node_size", 2}, {"message_bytes", 96}}),
      "cfg.json",
      dir);
  REQUIRE(timing.collective);
  CHECK(timing_elements(4) == 2 * 4 * 3 * 4);
  CHECK(timing_elements(6) == 2 * 6 * 5 * 4);
  CHECK(timing_elements(1) == 1);
  CHECK(timing.collective->schedule->elements == 96);
  CHECK(timing.collective->bytes_per_element == 1.0);
  CHECK(timing.collective->options.node_size == 2);
  CHECK(timing.sampler == sim::Sampler::kWorkers);
  auto forced = aggregation_delay_only({{"kind", "ring"}});
  forced["sampler"] = "order_statistics";
  CHECK(aggregation_error(forced) ==
        "cfg.json:/sampler: the ring all-reduce needs every rank's compute end, so every worker "
        "is drawn; got \"order_statistics\"; expected \"workers\" or \"auto\" (order statistics "
        "need i.i.d. workers)");
}

TEST_CASE("aggregation: the rows list their keys and requirements, the schema shows them",
          "[experiments][config][aggregation]") {
  const auto rows = aggregation_factories();
  std::vector<std::string> names;
  for (const auto& row : rows) {
    names.push_back(row.name);
  }
  CHECK(names == std::vector<std::string>{"parameter_server",
                                          "ring",
                                          "tree",
                                          "halving_doubling",
                                          "direct",
                                          "hierarchical",
                                          "stragglar"});
  CHECK(requirements_json(rows[0].requirements) == nlohmann::json::object());
  // Every collective but StragglAR also runs on the threads and mpi backends, without faults.
  for (std::size_t r = 1; r < rows.size(); ++r) {
    nlohmann::json expected = {{"straggler_policy", {"cancel"}},
                               {"no_faults", true},
                               {"no_network", true},
                               {"synchronous", true}};
    if (rows[r].name == "stragglar") {
      expected["needs_simulated_clock"] = true;
    }
    CHECK(requirements_json(rows[r].requirements) == expected);
  }
  const nlohmann::json schema = config_schema()["properties"]["aggregation"];
  REQUIRE(schema["oneOf"].size() == rows.size());
  const nlohmann::json& stragglar = schema["oneOf"][6];
  CHECK(stragglar["properties"]["kind"]["const"] == "stragglar");
  CHECK(stragglar["properties"].contains("straggler"));
  CHECK(!stragglar["properties"].contains("node_size"));
  CHECK(stragglar["description"].get<std::string>().find(
            "requires: a backend on the simulated clock; stragglers absent or cancel; no faults; "
            "no \"network\" block; a synchronous stopping rule") != std::string::npos);
  // The parameter server is the default: its branch needs no kind.
  CHECK(schema["oneOf"][0]["required"] == nlohmann::json::array());
}

TEST_CASE("aggregation: a registered row joins the table and leaves it",
          "[experiments][config][aggregation]") {
  AggregationRow toy = *find_aggregation("ring");
  toy.name = "toy_ring";
  register_aggregation(toy);
  const auto dir = testing::process_scratch("aggregation");
  const RunPlan plan = plan_run(aggregation_run({{"kind", "toy_ring"}}), "cfg.json", dir);
  CHECK(plan.aggregation == "toy_ring");
  CHECK(plan.collective.has_value());
  unregister_aggregation("toy_ring");
  CHECK(!find_aggregation("toy_ring"));
}

}  // namespace stragglersim::experiments

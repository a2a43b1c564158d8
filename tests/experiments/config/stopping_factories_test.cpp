// The stopping-rule table: a rule registered from outside (one row, in this file) with
// requirements the planner has never heard of is planned like first_r, whose factory it borrows,
// and refused wherever its requirements say, without a line of the planner knowing it; the
// table's registration rules.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "experiments/config/factories.h"
#include "experiments/config/run_plan.h"
#include "sim/asynchronous_cluster.h"
#include "sim/training_loop.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

/// The built-in row named `name`.
FactoryRow<StoppingFactory> builtin_rule(const std::string& name) {
  for (auto& row : stopping_factories()) {
    if (row.name == name) {
      return row;
    }
  }
  throw std::logic_error("no rule " + name);
}

/// first_r under another name, for FRC codes on the simulated clock, without a rescale.
FactoryRow<StoppingFactory> toy_rule() {
  FactoryRow<StoppingFactory> row = builtin_rule("first_r");
  row.name = "toy_first_r";
  row.description = "first_r, for frc codes on the simulated clock without a rescale";
  row.requirements = {.codes = OneOf{{"frc"}, {}},
                      .needs_simulated_clock = Flag{},
                      .rescale = OneOf{{"none"}, {.why = "the toy sums what it hears"}}};
  return row;
}

/// The rule registered for one scope.
class RegisteredRule {
 public:
  explicit RegisteredRule(FactoryRow<StoppingFactory> row) : name_(row.name) {
    register_stopping_rule(std::move(row));
  }
  ~RegisteredRule() { unregister_stopping_rule(name_); }
  RegisteredRule(const RegisteredRule&) = delete;
  RegisteredRule& operator=(const RegisteredRule&) = delete;

 private:
  std::string name_;
};

nlohmann::json toy_config() {
  auto c = testing::small_logistic_config("toy_rule");  // frc d = 2, 6 workers
  c["stopping"] = {{"rule", "toy_first_r"}, {"r", 3}};
  return c;
}

}  // namespace

TEST_CASE("rules: a rule registered from outside declares its requirements as data",
          "[experiments][config][requirements]") {
  const auto dir = testing::process_scratch("stopping_factories");
  {
    const RegisteredRule toy(toy_rule());
    // Planned like first_r: the same rule shape and the same iterations.
    const RunPlan plan = plan_run(toy_config(), "cfg.json", dir);
    auto first_r = toy_config();
    first_r["stopping"]["rule"] = "first_r";
    const RunPlan reference = plan_run(first_r, "cfg.json", dir);
    REQUIRE(plan.scheme.rule->shape());
    CHECK(plan.scheme.rule->shape()->kind == sim::RuleKind::kFirstR);
    CHECK(plan.scheme.rule->shape()->r == 3);
    const auto rows = testing::train_plan(plan);
    const auto reference_rows = testing::train_plan(reference);
    REQUIRE(rows.size() == reference_rows.size());
    CHECK(rows.back().loss == reference_rows.back().loss);

    // Each requirement refused at /stopping/rule, worded from the row.
    const std::string at = "cfg.json:/stopping/rule: the toy_first_r rule needs ";
    auto c = toy_config();
    c["code"] = {{"kind", "uncoded"}};
    CHECK(testing::plan_error(c, dir) ==
          at + "the frc code; got \"uncoded\"; expected code kind frc");
    c = toy_config();
    c["backend"] = {{"kind", "threads"}};
    CHECK(testing::plan_error(c, dir) ==
          at + "the simulated clock; got \"threads\"; expected a backend on the simulated clock");
    c = toy_config();
    c["rescale"] = "empirical";
    CHECK(testing::plan_error(c, dir) ==
          at + "no rescale (the toy sums what it hears); got \"empirical\"; expected rescale "
               "absent or none");
    // Its own keys come from the borrowed row; the table lists it.
    c = toy_config();
    c["stopping"]["fraction"] = 0.5;
    CHECK(testing::plan_error(c, dir) ==
          "cfg.json:/stopping/fraction: give either r or fraction, not both");
    const auto names = names_of(stopping_factories());
    CHECK(std::find(names.begin(), names.end(), "toy_first_r") != names.end());
  }
  // Gone with its registration.
  CHECK(testing::plan_error(toy_config(), dir)
            .starts_with("cfg.json:/stopping/rule: unknown stopping rule 'toy_first_r'"));
}

TEST_CASE("rules: the table refuses a second row of a name and keeps its built-in rows",
          "[experiments][config]") {
  const auto before = names_of(stopping_factories());
  CHECK_THROWS_AS(register_stopping_rule(builtin_rule("first_r")), std::logic_error);
  FactoryRow<StoppingFactory> unnamed = toy_rule();
  unnamed.name.clear();
  CHECK_THROWS_AS(register_stopping_rule(unnamed), std::logic_error);
  FactoryRow<StoppingFactory> no_factory = toy_rule();
  no_factory.make = nullptr;
  CHECK_THROWS_AS(register_stopping_rule(no_factory), std::logic_error);
  CHECK_THROWS_AS(unregister_stopping_rule("first_r"), std::logic_error);
  CHECK_THROWS_AS(unregister_stopping_rule("toy_first_r"), std::logic_error);
  CHECK(names_of(stopping_factories()) == before);
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

/// The asynchronous loop of a plan with an update rule, as `stragglersim run` drives it.
std::vector<sim::TraceRow> train_update_plan(const RunPlan& plan) {
  sim::AsynchronousCluster cluster(plan.make_delays(), *plan.update, plan.seed, plan.network);
  auto optimizer = plan.make_optimizer();
  std::vector<sim::TraceRow> rows;
  sim::train_asynchronous(
      *plan.objective,
      nullptr,
      *plan.scheme.code,
      *optimizer,
      cluster,
      sim::AsynchronousOptions{{plan.iterations}, plan.update->step, {}, plan.seed},
      [&](const sim::TraceRow& r) { rows.push_back(r); });
  return rows;
}

nlohmann::json time_optimal_config(const nlohmann::json& stopping) {
  auto c = testing::small_logistic_config("time_optimal");  // 6 workers
  c["code"] = {{"kind", "uncoded"}};
  c["stopping"] = stopping;
  return c;
}

}  // namespace

TEST_CASE("rules: the time-optimal methods read their keys and refuse bad values at them",
          "[experiments][config][time_optimal]") {
  const auto dir = testing::process_scratch("time_optimal_rules");
  struct Good {
    nlohmann::json stopping;
    sim::UpdateMode mode;
    int k;
  };
  const std::vector<Good> good = {
      {{{"rule", "rennala"}, {"batch", 9}}, sim::UpdateMode::kRennala, 9},
      {{{"rule", "malenia"}, {"batch", 12}, {"stop_stale", true}}, sim::UpdateMode::kMalenia, 12},
      {{{"rule", "ringmaster"}, {"max_delay", 3}}, sim::UpdateMode::kRingmaster, 1},
      {{{"rule", "mindflayer"}, {"batch", 4}, {"cutoffs", 2.5}}, sim::UpdateMode::kMindFlayer, 4},
      {{{"rule", "rescaled_async"}}, sim::UpdateMode::kRescaledAsync, 1},
  };
  for (const Good& g : good) {
    INFO(g.stopping.dump());
    const RunPlan plan = plan_run(time_optimal_config(g.stopping), "cfg.json", dir);
    REQUIRE(plan.update);
    CHECK(plan.update->mode == g.mode);
    CHECK(plan.update->k == g.k);
    const auto rows = train_update_plan(plan);
    CHECK(rows.back().loss < rows.front().loss);
  }
  const RunPlan ring = plan_run(
      time_optimal_config({{"rule", "ringmaster"}, {"max_delay", 3}, {"stop_stale", true}}),
      "cfg.json",
      dir);
  CHECK(ring.update->max_delay == std::optional<std::uint64_t>(3));
  CHECK(ring.update->stop_stale);
  const RunPlan mind = plan_run(
      time_optimal_config({{"rule", "mindflayer"}, {"batch", 4}, {"cutoffs", {1, 2, 3, 4, 5, 6}}}),
      "cfg.json",
      dir);
  CHECK(mind.update->cutoffs == std::vector<double>{1, 2, 3, 4, 5, 6});

  struct Bad {
    nlohmann::json stopping;
    std::string error;
  };
  const std::vector<Bad> bad = {
      {{{"rule", "rennala"}, {"batch", 0}},
       "cfg.json:/stopping/batch: out of range; got 0; expected an integer >= 1"},
      {{{"rule", "malenia"}, {"batch", -2}},
       "cfg.json:/stopping/batch: out of range; got -2; expected an integer >= 1"},
      {{{"rule", "ringmaster"}, {"max_delay", 0}},
       "cfg.json:/stopping/max_delay: out of range; got 0; expected an integer >= 1 (R; absent: "
       "no limit)"},
      {{{"rule", "ringmaster"}, {"stop_stale", true}},
       "cfg.json:/stopping/stop_stale: has nothing to stop without a delay threshold; got true; "
       "expected false, or a max_delay R"},
      {{{"rule", "mindflayer"}, {"batch", 2}, {"cutoffs", 0}},
       "cfg.json:/stopping/cutoffs: out of range; got 0; expected a number > 0, or an array of 6 "
       "numbers > 0 (seconds, one per worker)"},
      {{{"rule", "mindflayer"}, {"batch", 2}, {"cutoffs", {1, 2, -1, 4, 5, 6}}},
       "cfg.json:/stopping/cutoffs: out of range; got -1; expected 6 cut-offs > 0 (seconds, one "
       "per worker)"},
      {{{"rule", "mindflayer"}, {"batch", 2}, {"cutoffs", {1, 2}}},
       "cfg.json:/stopping/cutoffs: wrong length; got 2; expected 6 cut-offs > 0 (seconds, one per "
       "worker)"},
      {{{"rule", "rennala"}, {"batch", 2}, {"sampling", "shard"}},
       "cfg.json:/stopping/sampling: unknown sampling 'shard'; did you mean 'shared'? valid values "
       "are: own, shared"},
  };
  for (const Bad& b : bad) {
    INFO(b.stopping.dump());
    CHECK(testing::plan_error(time_optimal_config(b.stopping), dir) == b.error);
  }
  // Cut-offs below every worker's shortest delay (the shift, 1 s): no update would ever come.
  CHECK(testing::plan_error(
            time_optimal_config({{"rule", "mindflayer"}, {"batch", 2}, {"cutoffs", 0.5}}), dir) ==
        "cfg.json:/stopping/cutoffs: no worker can finish a computation within its cut-off "
        "(every cut-off is below the worker's shortest delay, 1 s for worker 0); expected "
        "cut-offs above the delays' lower bounds");
  // The asynchronous loop's requirements: uncoded, with data, on the simulated clock.
  auto coded = time_optimal_config({{"rule", "rennala"}, {"batch", 3}});
  coded["code"] = {{"kind", "frc"}, {"d", 2}};
  CHECK(testing::plan_error(coded, dir)
            .starts_with("cfg.json:/stopping/rule: the asynchronous rule 'rennala' needs the "
                         "uncoded code"));
  auto threads = time_optimal_config({{"rule", "ringmaster"}});
  threads["backend"] = {{"kind", "threads"}};
  CHECK(testing::plan_error(threads, dir)
            .starts_with("cfg.json:/stopping/rule: the asynchronous rule 'ringmaster' needs the "
                         "simulated clock"));
}

}  // namespace stragglersim::experiments

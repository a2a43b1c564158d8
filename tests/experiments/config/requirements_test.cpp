// The requirements vocabulary and its one checker: every requirement met and unmet on a planned
// run, with the message written from the declaration (default wording, each override, each place
// of report), the order of the checks, and what the built-in rows declare and list. The built-in
// rows' refusals through plan_run are pinned beside their rules (tests/sim/*, run_plan_test.cpp)
// and here for the ones no other test reaches.
#include "experiments/config/requirements.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/run_plan.h"
#include "sim/backends/mpi_session.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

/// A run no built-in row objects to: 6 workers, frc d = 2, the first 3 of 6, 240 rows.
nlohmann::json plain_run() { return testing::small_logistic_config("requirements"); }

/// The same without data.
nlohmann::json delay_only_run() {
  auto c = plain_run();
  c["data"] = nullptr;
  c.erase("loss");
  c["optimizer"] = {{"iterations", 3}};
  return c;
}

/// A declaration made up for the test, as a rule's would be.
Declaration toy(const Requirements& requirements) {
  return {"/stopping/rule", "the toy rule", "toy", requirements};
}

/// check_requirements' message for `rows` on the run `config` plans, or "no error".
std::string refusal(const std::vector<Declaration>& rows, const nlohmann::json& config) {
  const RunPlan plan = plan_run(config, "cfg.json", testing::process_scratch("requirements"));
  try {
    check_requirements(rows, plan, config, "cfg.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string refusal(const Requirements& requirements, const nlohmann::json& config) {
  return refusal({toy(requirements)}, config);
}

/// The built-in stopping rule named `name`.
Requirements rule_requirements(const std::string& name) {
  for (const auto& row : stopping_factories()) {
    if (row.name == name) {
      return row.requirements;
    }
  }
  FAIL("no rule " << name);
  return {};
}

}  // namespace

TEST_CASE("requirements: or_list joins accepted values", "[experiments][config][requirements]") {
  CHECK(or_list({}).empty());
  CHECK(or_list({"a"}) == "a");
  CHECK(or_list({"a", "b"}) == "a or b");
  CHECK(or_list({"a", "b", "c"}) == "a, b or c");
}

TEST_CASE("requirements: each requirement is met or refused with its default wording",
          "[experiments][config][requirements]") {
  const std::string at = "cfg.json:/stopping/rule: the toy rule ";
  CHECK(refusal(Requirements{}, plain_run()) == "no error");

  const Requirements data{.needs_data = Flag{}};
  CHECK(refusal(data, plain_run()) == "no error");
  CHECK(refusal(data, delay_only_run()) ==
        at + "needs data; got \"\\\"data\\\": null\"; expected a data object");

  const Requirements codes{.codes = OneOf{{"uncoded", "crc"}, {}}};
  CHECK(refusal(codes, plain_run()) ==
        at + "needs the uncoded or crc code; got \"frc\"; expected code kind uncoded or crc");
  auto uncoded = plain_run();
  uncoded["code"] = {{"kind", "uncoded"}};
  CHECK(refusal(codes, uncoded) == "no error");

  // 6 workers: k = 6 by default; 12 given to a code that takes any k (bgc).
  auto twelve = plain_run();
  twelve["code"] = {{"kind", "bgc"}, {"d", 2}};
  twelve["partitions"] = 12;
  const Requirements one{.partitions_per_worker = Count{1, {}}};
  const Requirements two{.partitions_per_worker = Count{2, {}}};
  CHECK(refusal(one, plain_run()) == "no error");
  CHECK(refusal(one, twelve) ==
        at + "needs one partition per worker; got 12; expected partitions = workers");
  CHECK(refusal(two, twelve) == "no error");
  CHECK(refusal(two, plain_run()) ==
        at + "needs 2 partitions per worker; got 6; expected partitions = 2 * workers");

  const Requirements clock{.needs_simulated_clock = Flag{}};
  auto threads = plain_run();
  threads["backend"] = {{"kind", "threads"}};
  CHECK(refusal(clock, plain_run()) == "no error");
  CHECK(refusal(clock, threads) ==
        at + "needs the simulated clock; got \"threads\"; expected a backend on the simulated "
             "clock");

  const Requirements gd{.optimizer = OneOf{{"gd"}, {}}};
  auto nesterov = plain_run();
  nesterov["optimizer"]["kind"] = "nesterov";
  CHECK(refusal(gd, plain_run()) == "no error");  // gd by default
  CHECK(refusal(gd, nesterov) ==
        at + "needs optimizer gd; got \"nesterov\"; expected optimizer kind gd");

  const Requirements full{.no_minibatch = Flag{}};
  auto batch = plain_run();
  batch["optimizer"]["batch"] = 5;
  CHECK(refusal(full, plain_run()) == "no error");
  CHECK(refusal(full, batch) == at + "needs no optimizer.batch; got 5; expected no batch key");

  const Requirements cancel{.straggler_policy = OneOf{{"cancel"}, {}}};
  const Requirements not_finish{.straggler_policy = OneOf{{"cancel", "drain"}, {}}};
  auto drain = plain_run();
  drain["stragglers"] = "drain";
  auto finish = plain_run();
  finish["stragglers"] = "finish";
  CHECK(refusal(cancel, plain_run()) == "no error");  // cancel by default
  CHECK(refusal(cancel, drain) ==
        at + "needs no straggler policy; got \"drain\"; expected stragglers absent or cancel");
  CHECK(refusal(not_finish, drain) == "no error");
  CHECK(refusal(not_finish, finish) ==
        at + "needs stragglers cancel or drain; got \"finish\"; expected stragglers absent, "
             "cancel or drain");

  const Requirements none{.rescale = OneOf{{"none"}, {}}};
  const Requirements counted{.rescale = OneOf{{"none", "empirical"}, {}}};
  auto empirical = plain_run();
  empirical["rescale"] = "empirical";
  auto expected = plain_run();
  expected["rescale"] = "expected";
  CHECK(refusal(none, plain_run()) == "no error");  // none by default
  CHECK(refusal(none, empirical) ==
        at + "needs no rescale; got \"empirical\"; expected rescale absent or none");
  CHECK(refusal(counted, empirical) == "no error");
  CHECK(refusal(counted, expected) ==
        at + "needs rescale none or empirical; got \"expected\"; expected rescale absent, none "
             "or empirical");

  const Requirements no_faults{.no_faults = Flag{}};
  auto faults = threads;
  faults["backend"]["faults"] = {{{"worker", 1}, {"kind", "crash"}}};
  CHECK(refusal(no_faults, threads) == "no error");
  CHECK(refusal(no_faults, faults) ==
        at + "needs no faults; got [{\"kind\":\"crash\",\"worker\":1}]; expected no faults");

  const Requirements injected{.injected_delays = Flag{}};
  CHECK(refusal(injected, threads) == "no error");  // threads inject their delays
  if (sim::mpi_compiled_in()) {
    auto mpi = plain_run();
    mpi["backend"] = {{"kind", "mpi"}, {"inject", false}};
    CHECK(refusal(injected, mpi) ==
          at + "needs the injected delays; got false; expected \"inject\": true");
    mpi["backend"]["inject"] = true;
    CHECK(refusal(injected, mpi) == "no error");
  }

  const Requirements no_network{.no_network = Flag{}};
  auto network = plain_run();
  network["network"] = {{"latency", 1}};
  CHECK(refusal(no_network, plain_run()) == "no error");
  CHECK(refusal(no_network, network) ==
        at + "needs no network block; got {\"latency\":1}; expected no \"network\" block");

  const Requirements synchronous{.synchronous = Flag{}};
  auto asynchronous = plain_run();
  asynchronous["code"] = {{"kind", "uncoded"}};
  asynchronous["stopping"] = {{"rule", "k_async"}, {"k", 2}};
  CHECK(refusal(synchronous, plain_run()) == "no error");
  CHECK(refusal(synchronous, asynchronous) ==
        at + "needs a synchronous rule; got \"k_async\"; expected a synchronous stopping rule");
}

TEST_CASE("requirements: a row words its refusal and says where it is reported",
          "[experiments][config][requirements]") {
  auto threads = plain_run();
  threads["backend"] = {{"kind", "threads"}};
  const auto clock = [&](const Wording& w) {
    return refusal(Requirements{.needs_simulated_clock = Flag{w}}, threads);
  };
  CHECK(clock({.what = "a clock of its own"}) ==
        "cfg.json:/stopping/rule: the toy rule needs a clock of its own; got \"threads\"; "
        "expected a backend on the simulated clock");
  CHECK(clock({.why = "it reads the event queue"}) ==
        "cfg.json:/stopping/rule: the toy rule needs the simulated clock (it reads the event "
        "queue); got \"threads\"; expected a backend on the simulated clock");
  CHECK(clock({.problem = "cannot run on a wall clock", .accepted = "\"simulated\""}) ==
        "cfg.json:/stopping/rule: the toy rule cannot run on a wall clock; got \"threads\"; "
        "expected \"simulated\"");
  // At the conflicting key, with its value; at the selector, with the row's own name.
  CHECK(clock({.at = ReportAt::kConflict}) ==
        "cfg.json:/backend/kind: the toy rule needs the simulated clock; got \"threads\"; "
        "expected a backend on the simulated clock");
  CHECK(clock({.at = ReportAt::kSelectorName}) ==
        "cfg.json:/stopping/rule: the toy rule needs the simulated clock; got \"toy\"; expected "
        "a backend on the simulated clock");
  // Each requirement's own key when reported there.
  auto all = delay_only_run();
  all["code"] = {{"kind", "bgc"}, {"d", 2}};
  all["partitions"] = 12;
  all["stragglers"] = "finish";
  const Wording there{.at = ReportAt::kConflict};
  CHECK(refusal(Requirements{.needs_data = Flag{there}}, all) ==
        "cfg.json:/data: the toy rule needs data; got \"\\\"data\\\": null\"; expected a data "
        "object");
  CHECK(refusal(Requirements{.codes = OneOf{{"uncoded"}, there}}, all) ==
        "cfg.json:/code/kind: the toy rule needs the uncoded code; got \"bgc\"; expected code "
        "kind uncoded");
  CHECK(refusal(Requirements{.partitions_per_worker = Count{1, there}}, all) ==
        "cfg.json:/partitions: the toy rule needs one partition per worker; got 12; expected "
        "partitions = workers");
  CHECK(refusal(Requirements{.straggler_policy = OneOf{{"cancel"}, there}}, all) ==
        "cfg.json:/stragglers: the toy rule needs no straggler policy; got \"finish\"; expected "
        "stragglers absent or cancel");
  // A table's subject names the row when the row gives none.
  FactoryRow<StoppingFactory> row{"toy", "", {}, {}, {.codes = OneOf{{"uncoded"}, {}}}};
  CHECK(declaration_of(row, "/stopping/rule", "the {} rule").subject == "the toy rule");
  row.requirements.subject = "the toy's own name";
  CHECK(declaration_of(row, "/stopping/rule", "the {} rule").subject == "the toy's own name");
}

TEST_CASE("requirements: the first unmet requirement of the first row is reported",
          "[experiments][config][requirements]") {
  auto c = delay_only_run();
  c["rescale"] = "empirical";
  const Requirements both{.needs_data = Flag{}, .rescale = OneOf{{"none"}, {}}};
  CHECK(refusal(both, c) ==
        "cfg.json:/stopping/rule: the toy rule needs data; got \"\\\"data\\\": null\"; expected "
        "a data object");
  const Declaration code{"/code/kind", "code 'frc'", "frc", {.rescale = OneOf{{"none"}, {}}}};
  CHECK(refusal({code, toy(both)}, c) ==
        "cfg.json:/code/kind: code 'frc' needs no rescale; got \"empirical\"; expected rescale "
        "absent or none");
  CHECK(refusal({toy(both), code}, c)
            .starts_with("cfg.json:/stopping/rule: the toy rule needs "
                         "data"));
}

TEST_CASE("requirements: the built-in rows list what they require",
          "[experiments][config][requirements]") {
  CHECK(requirements_json(rule_requirements("anytime")) ==
        nlohmann::json::parse(R"({"needs_data": true, "codes": ["uncoded"],
          "partitions_per_worker": 1, "needs_simulated_clock": true, "no_minibatch": true,
          "straggler_policy": ["cancel"], "rescale": ["none"]})"));
  CHECK(requirements_json(rule_requirements("k_async")) ==
        nlohmann::json::parse(R"({"needs_data": true, "codes": ["uncoded"],
          "needs_simulated_clock": true, "optimizer": ["gd"], "straggler_policy": ["cancel"],
          "rescale": ["none"]})"));
  CHECK(requirements_json(rule_requirements("multi_message")) ==
        nlohmann::json::parse(R"({"needs_simulated_clock": true,
          "rescale": ["none", "empirical"]})"));
  CHECK(requirements_json(rule_requirements("adaptive_r")) ==
        nlohmann::json::parse(R"({"injected_delays": true})"));
  CHECK(requirements_json(rule_requirements("first_r")) == nlohmann::json::object());
  CHECK(requirements_text(rule_requirements("anytime")) ==
        "a data object; code kind uncoded; partitions = workers; a backend on the simulated "
        "clock; no batch key; stragglers absent or cancel; rescale absent or none");
  CHECK(requirements_text(rule_requirements("first_r")).empty());
  for (const auto& row : code_factories()) {
    INFO(row.name);
    CHECK(requirements_json(row.requirements) ==
          (row.name == "dynamic_frc"
               ? nlohmann::json::parse(R"({"injected_delays": true, "no_faults": true})")
               : nlohmann::json::object()));
  }
}

TEST_CASE("requirements: the built-in rules' refusals keep their texts",
          "[experiments][config][requirements]") {
  // The ones no rule's own test reaches (those: tests/sim/, run_plan_test.cpp).
  auto async = plain_run();
  async["code"] = {{"kind", "uncoded"}};
  async["stopping"] = {{"rule", "k_batch_sync"}, {"k", 2}};
  const std::string needs = "cfg.json:/stopping/rule: the asynchronous rule 'k_batch_sync' needs ";
  auto threads = async;
  threads["backend"] = {{"kind", "threads"}};
  CHECK(testing::plan_error(threads, ".") ==
        needs + "the simulated clock; got \"threads\"; expected a backend on the simulated clock");
  auto finish = async;
  finish["stragglers"] = "finish";
  CHECK(testing::plan_error(finish, ".") ==
        needs + "no straggler policy; got \"finish\"; expected stragglers absent or cancel");
  auto empirical = async;
  empirical["rescale"] = "empirical";
  CHECK(testing::plan_error(empirical, ".") ==
        needs +
            "no rescale (it scales by n/K itself); got \"empirical\"; expected rescale "
            "absent or none");
  auto delay_only = delay_only_run();
  delay_only["code"] = {{"kind", "uncoded"}};
  delay_only["stopping"] = async["stopping"];
  CHECK(testing::plan_error(delay_only, ".") ==
        needs +
            "data; got \"\\\"data\\\": null\"; expected a data object (delay-only runs are "
            "synchronous only)");

  auto multi = plain_run();
  multi["stopping"] = {{"rule", "multi_message"}};
  CHECK(testing::plan_error(multi, ".") == "no error");
  multi["backend"] = {{"kind", "threads"}};
  CHECK(testing::plan_error(multi, ".") ==
        "cfg.json:/stopping/rule: the multi_message rule needs the simulated clock; got "
        "\"threads\"; expected a backend on the simulated clock");
  // Rescale expected stops earlier in plan_run (no erasure probability for the scheme); the
  // row's own refusal, on a run whose config asks it.
  multi.erase("backend");
  const RunPlan plan = plan_run(multi, "cfg.json", ".");
  multi["rescale"] = "expected";
  FactoryRow<StoppingFactory> row{"multi_message", "", {}, {}, rule_requirements("multi_message")};
  try {
    check_requirements({declaration_of(row, "/stopping/rule", "the {} rule")}, plan, multi, "c");
    FAIL("no refusal");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "c:/stopping/rule: the multi_message rule has no erasure probability to rescale by; "
          "got \"expected\"; expected rescale absent, none or empirical");
  }
}

}  // namespace stragglersim::experiments

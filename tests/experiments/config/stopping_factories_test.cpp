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

// experiments/predict/simulation_budget.h: the decode cost of a delay-only simulation and the
// draws it affords, against the formulas of its header comment.

#include "experiments/predict/simulation_budget.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "experiments/predict/convergence_predictions.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

RunPlan budget_test_plan(int workers, const nlohmann::json& code, const nlohmann::json& stopping) {
  const auto dir = testing::process_scratch("simulation_budget_test");
  nlohmann::json c = {{"name", "budget"},
                      {"seed", 3},
                      {"workers", workers},
                      {"data", nullptr},
                      {"code", code},
                      {"stopping", stopping},
                      {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
                      {"optimizer", {{"iterations", 1}}}};
  return plan_run(c, "cfg.json", dir);
}

}  // namespace

TEST_CASE("simulation budget: linear-algebra decodes cut the draws, others never",
          "[experiments][predict][simulation_budget]") {
  const nlohmann::json decodable = {{"rule", "decodable"}};
  SECTION("crc s = 1 at n = 256: n + 1 sets of k m^2 + m^3, past the limit") {
    const SimulationCost c =
        simulation_cost(budget_test_plan(256, {{"kind", "crc"}, {"s", 1}}, decodable), 20000);
    const double m = 255.0;
    CHECK(c.operations_per_decode == 256.0 * m * m + m * m * m);
    CHECK(c.distinct_sets == 257.0);
    CHECK(c.decodes_per_draw == 1.0);
    CHECK(c.operations(20000) == 257.0 * c.operations_per_decode);
    CHECK(c.operations(10) == 10.0 * c.operations_per_decode);
    CHECK(c.cut());
    CHECK(c.draws == static_cast<std::uint64_t>(
                         std::floor(kSimulationOperationLimit / c.operations_per_decode)));
  }
  SECTION("crc s = 2 at n = 24: 1 + 24 + 276 sets, within the limit") {
    const SimulationCost c =
        simulation_cost(budget_test_plan(24, {{"kind", "crc"}, {"s", 2}}, decodable), 20000);
    CHECK(c.distinct_sets == 301.0);
    CHECK(c.draws == 20000);
    CHECK_FALSE(c.cut());
  }
  SECTION("a cut never goes below the minimum") {
    const SimulationCost c =
        simulation_cost(budget_test_plan(512, {{"kind", "crc"}, {"s", 3}}, decodable), 20000);
    CHECK(c.draws == kMinimumSimulationDraws);
  }
  SECTION("combinatorial decoders, count-only stops and rules without decodes cost nothing") {
    for (const auto& [code, stopping] :
         {std::pair<nlohmann::json, nlohmann::json>{{{"kind", "frc"}, {"d", 2}}, decodable},
          {{{"kind", "uncoded"}}, {{"rule", "all"}}},
          {{{"kind", "crc"}, {"s", 1}}, {{"rule", "first_r_or_decodable"}, {"r", 100}}},
          {{{"kind", "bgc"}, {"d", 2}}, {{"rule", "first_r"}, {"r", 128}}}}) {
      INFO(code.dump() << " " << stopping.dump());
      const SimulationCost c = simulation_cost(budget_test_plan(256, code, stopping), 20000);
      CHECK(c.operations_per_decode == 0.0);
      CHECK(c.draws == 20000);
    }
  }
}

TEST_CASE("simulation budget: simulated_iteration_time runs the affordable draws",
          "[experiments][predict][simulation_budget][heavy]") {
  const RunPlan plan = budget_test_plan(256, {{"kind", "crc"}, {"s", 1}}, {{"rule", "decodable"}});
  const nlohmann::json s = simulated_iteration_time(plan, 20000);
  CHECK(s["draws"] == simulation_cost(plan, 20000).draws);
  CHECK(s["draws"].get<std::uint64_t>() < 20000);
  CHECK(s["draws_asked"] == 20000);
  CHECK(s["iteration_time_se"].get<double>() > 0.0);
}

}  // namespace stragglersim::experiments

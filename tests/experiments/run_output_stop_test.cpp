// execute_run's stop hook (SIGINT/SIGTERM in the CLI, Ctrl-C in the Python module): asked once
// per trace row, it ends the run after that row with status "interrupted" and every finished
// row kept; never true, it changes nothing.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json config(bool with_data) {
  nlohmann::json c = {{"workers", 4},
                      {"data", nullptr},
                      {"code", {{"kind", "uncoded"}}},
                      {"stopping", {{"rule", "all"}}},
                      {"delay", {{"kind", "shifted_exponential"}}},
                      {"optimizer", {{"iterations", 20}}}};
  if (with_data) {
    c["data"] = {
        {"source", "synthetic"}, {"generator", "linear_regression"}, {"rows", 40}, {"features", 3}};
    c["loss"] = {{"kind", "least_squares"}};
    c["optimizer"]["step"] = "auto";
  }
  return c;
}

}  // namespace

TEST_CASE("experiments: a stop hook ends a run after the asked row and keeps the rows",
          "[experiments][run_output]") {
  for (const bool with_data : {false, true}) {
    const auto dir = testing::scratch_dir("run_output_stop", with_data ? "data" : "delay");
    const RunPlan plan = plan_run(config(with_data), "c.json", dir);
    int asked = 0;
    const StopHook stop_at_five = [&asked] { return ++asked == 5; };
    const RunOutcome stopped = execute_run(plan, dir / "stopped", stop_at_five);
    CHECK(asked == 5);
    CHECK(stopped.status == "interrupted");
    CHECK(stopped.summary["status"] == "interrupted");
    const std::string trace = testing::slurp(dir / "stopped" / "trace.csv");
    // Header, row 0 and the rows up to the fifth question (training asks at row 0 too).
    const auto lines = std::count(trace.begin(), trace.end(), '\n');
    CHECK(lines == (with_data ? 6 : 7));

    asked = 0;
    const StopHook never = [&asked] { return ++asked < 0; };
    execute_run(plan, dir / "hooked", never);
    execute_run(plan, dir / "plain");
    // Asked once per trace row (20 iterations; training also asks at row 0).
    CHECK(asked == (with_data ? 21 : 20));
    CHECK(testing::slurp(dir / "hooked" / "trace.csv") ==
          testing::slurp(dir / "plain" / "trace.csv"));
  }
}

}  // namespace stragglersim::experiments

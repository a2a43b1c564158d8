// The summary's `theory` block for rules the synchronous forms describe indirectly: Anytime
// minibatch's iteration time is the deadline rule's at τ = T (docs/model.md §4).

#include "experiments/predict/predictions.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "sim/theory/iteration_time_theory.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {

TEST_CASE("predictions: anytime takes the deadline rule's time at the window, without q",
          "[experiments][predict][anytime]") {
  const auto dir = testing::process_scratch("predictions_test");
  for (const double window : {0.8, 1.5, 3.0}) {
    auto c = testing::small_logistic_config("anytime");
    c["code"] = {{"kind", "uncoded"}};
    c["stopping"] = {{"rule", "anytime"}, {"window", window}};
    const RunPlan plan = plan_run(c, "cfg.json", dir);
    const nlohmann::json theory = predictions(plan, false);
    const auto delays = plan.make_delays();
    const auto deadline = sim::predict_iteration_time(
        {plan.workers, sim::CodeFamily::kUncoded, 1, sim::RuleKind::kDeadline, 1, window}, *delays);
    INFO("window " << window);
    CHECK(theory["expected_iteration_time"] == deadline.mean);
    CHECK(theory["iteration_time_sd"] == deadline.sd);
    // Shifted exponential delays with shift 1: the window caps every iteration, and below the
    // shift every worker is cut at it.
    CHECK(deadline.mean <= window);
    CHECK(deadline.mean > std::min(window, 1.0) - 1e-12);
    CHECK(theory["group_erasure_probability"].is_null());
    CHECK(theory["q2"].is_null());
    CHECK(theory.contains("anytime_note"));
  }
  // A network with parallel links moves every message by the same c = latency.
  auto c = testing::small_logistic_config("anytime");
  c["code"] = {{"kind", "uncoded"}};
  c["stopping"] = {{"rule", "anytime"}, {"window", 1.5}};
  const nlohmann::json free = predictions(plan_run(c, "cfg.json", dir), false);
  c["network"] = {{"latency", 0.25}};
  const nlohmann::json linked = predictions(plan_run(c, "cfg.json", dir), false);
  CHECK(linked["expected_iteration_time"].get<double>() ==
        Approx(free["expected_iteration_time"].get<double>() + 0.25).epsilon(1e-12));
}

}  // namespace stragglersim::experiments

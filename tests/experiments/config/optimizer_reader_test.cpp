#include "experiments/config/optimizer_reader.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json optimizer_config() { return testing::small_logistic_config("t"); }

std::filesystem::path optimizer_dir() {
  static const auto dir = stragglersim::testing::scratch_dir("optimizer_reader_test", "plans");
  return dir;
}

std::string optimizer_error(const nlohmann::json& config) {
  return testing::plan_error(config, optimizer_dir());
}

}  // namespace

TEST_CASE("experiments: step auto is 1/beta and expected rescale uses q", "[experiments][config]") {
  auto c = optimizer_config();
  c["optimizer"]["step"] = "auto";
  c["rescale"] = "expected";
  const RunPlan plan = plan_run(c, "cfg.json", optimizer_dir());
  CHECK(plan.step == Approx(1.0 / plan.objective->smoothness()));
  // q = C(4, 3)/C(6, 3) = 4/20.
  CHECK(plan.scheme.erasure_probability == Approx(0.2));
}

TEST_CASE("experiments: step schedules and momentum are planned or refused at their pointer",
          "[experiments][config]") {
  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    auto c = optimizer_config();
    edit(c);
    return optimizer_error(c);
  };
  CHECK(with([](auto& c) {
          c["optimizer"]["schedule"] = {{"kind", "linear"}};
        }) ==
        "cfg.json:/optimizer/schedule/kind: unknown step schedule 'linear'; valid values are: "
        "constant, inverse_t, cosine");
  CHECK(with([](auto& c) {
          c["optimizer"]["schedule"] = {{"kind", "inverse_t"}};
        }) == "cfg.json:/optimizer/schedule/half_life: missing required key; expected a number");
  CHECK(with([](auto& c) {
          c["optimizer"]["schedule"] = {{"kind", "inverse_t"}, {"half_life", 0}};
        }) == "cfg.json:/optimizer/schedule/half_life: out of range; got 0; expected a number > 0");
  CHECK(with([](auto& c) {
          c["optimizer"]["schedule"] = {{"kind", "cosine"}, {"floor", 1.5}};
        }) ==
        "cfg.json:/optimizer/schedule/floor: out of range; got 1.5; expected a number in "
        "[0, 1]");
  CHECK(with([](auto& c) {
          c["optimizer"]["schedule"] = {{"kind", "cosine"}, {"half_life", 3}};
        }) ==
        "cfg.json:/optimizer/schedule/half_life: unknown key 'half_life'; valid keys are: "
        "floor, kind");
  CHECK(with([](auto& c) { c["optimizer"]["momentum"] = 1.0; }) ==
        "cfg.json:/optimizer/momentum: out of range; got 1.0; expected a number in [0, 1)");
  CHECK(with([](auto& c) { c["optimizer"]["momentum"] = -0.1; }) ==
        "cfg.json:/optimizer/momentum: out of range; got -0.1; expected a number >= 0");
  CHECK(with([](auto& c) {
          c["optimizer"]["kind"] = "nesterov";
          c["optimizer"]["momentum"] = 0.9;
        }) ==
        "cfg.json:/optimizer/momentum: only gradient descent takes a momentum; got 0.9; "
        "expected no momentum key, or optimizer kind gd");

  // Valid ones plan: the cosine horizon is the run's iterations, absent keys are constant and 0.
  auto c = optimizer_config();
  c["optimizer"]["schedule"] = {{"kind", "cosine"}, {"floor", 0.1}};
  c["optimizer"]["momentum"] = 0.9;
  const RunPlan plan = plan_run(c, "cfg.json", optimizer_dir());
  CHECK(plan.schedule.kind == sim::StepSchedule::Kind::kCosine);
  CHECK(plan.schedule.floor == 0.1);
  CHECK(plan.schedule.horizon == c["optimizer"]["iterations"].get<std::uint64_t>());
  CHECK(plan.momentum == 0.9);
  CHECK(plan.resolved["optimizer"]["schedule"] ==
        nlohmann::json{{"kind", "cosine"}, {"floor", 0.1}});
  const RunPlan plain = plan_run(optimizer_config(), "cfg.json", optimizer_dir());
  CHECK(plain.schedule.constant());
  CHECK(plain.momentum == 0.0);
  CHECK_FALSE(plain.gaussian_start.has_value());
  CHECK(plain.make_optimizer()->iterate() == Eigen::VectorXd::Zero(5));
}

TEST_CASE("experiments: a gaussian start and the reference accelerated gradient plan",
          "[experiments][config]") {
  auto c = optimizer_config();
  c["optimizer"]["kind"] = "erasurehead_agd";
  c["optimizer"]["start"] = {{"kind", "gaussian"}, {"scale", 2.0}};
  const RunPlan plan = plan_run(c, "cfg.json", optimizer_dir());
  CHECK(plan.optimizer == OptimizerKind::kErasureHeadAgd);
  REQUIRE(plan.gaussian_start == 2.0);
  const auto optimizer = plan.make_optimizer();
  CHECK(optimizer->name() == "erasurehead_agd");
  // Drawn from the run's init stream: the same x0 again, another for another seed, and
  // N(0, 4) coordinates (5 features: |x| < 4 sigma each, not all zero).
  const Eigen::VectorXd x0 = optimizer->iterate();
  REQUIRE(x0.size() == 5);
  CHECK(plan_run(c, "cfg.json", optimizer_dir()).make_optimizer()->iterate() == x0);
  c["seed"] = 11;
  CHECK(plan_run(c, "cfg.json", optimizer_dir()).make_optimizer()->iterate() != x0);
  CHECK(x0.cwiseAbs().maxCoeff() < 8.0);
  CHECK(x0.cwiseAbs().minCoeff() > 0.0);
  CHECK(plan.resolved["optimizer"]["start"] ==
        nlohmann::json{{"kind", "gaussian"}, {"scale", 2.0}});

  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    auto bad = optimizer_config();
    edit(bad);
    return optimizer_error(bad);
  };
  CHECK(with([](auto& b) {
          b["optimizer"]["start"] = {{"kind", "uniform"}};
        }) ==
        "cfg.json:/optimizer/start/kind: unknown start 'uniform'; valid values are: zero, "
        "gaussian");
  CHECK(with([](auto& b) {
          b["optimizer"]["start"] = {{"kind", "gaussian"}, {"scale", 0}};
        }) == "cfg.json:/optimizer/start/scale: out of range; got 0; expected a number > 0");
  CHECK(with([](auto& b) { b["optimizer"]["kind"] = "agd"; }) ==
        "cfg.json:/optimizer/kind: unknown optimizer 'agd'; did you mean 'gd'? valid values are: "
        "gd, nesterov, erasurehead_agd");
  CHECK(with([](auto& b) {
          b["optimizer"]["kind"] = "erasurehead_agd";
          b["optimizer"]["momentum"] = 0.5;
        }) ==
        "cfg.json:/optimizer/momentum: only gradient descent takes a momentum; got 0.5; "
        "expected no momentum key, or optimizer kind gd");
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("optimizer_reader: a delay-only run reads the iterations and budget, nothing else",
          "[experiments][config]") {
  auto c = testing::four_worker_delay_only(
      {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}});
  c["optimizer"] = {{"iterations", 7}, {"time_budget", 2.5}};
  const RunPlan plan = plan_run(c, "cfg.json", optimizer_dir());
  CHECK(plan.iterations == 7);
  CHECK(plan.time_budget == 2.5);
  // A delay-only run takes no step: the key is refused, naming what it accepts.
  c["optimizer"]["step"] = 0.1;
  CHECK(optimizer_error(c) ==
        "cfg.json:/optimizer/step: unknown key 'step'; valid keys are: iterations, time_budget");
  c["optimizer"].erase("step");
  c["optimizer"]["time_budget"] = 0;
  CHECK(optimizer_error(c) ==
        "cfg.json:/optimizer/time_budget: out of range; got 0; expected a number > 0");
}

TEST_CASE("optimizer_reader: the target loss and the divergence bound beside the optimizer",
          "[experiments][config]") {
  auto c = optimizer_config();
  c["target_loss"] = 0.25;
  c["divergence_bound"] = 10.0;
  const RunPlan plan = plan_run(c, "cfg.json", optimizer_dir());
  CHECK(plan.target_loss == 0.25);
  CHECK(plan.divergence_bound == 10.0);
  CHECK(plan.step == 0.5);
  // Each bound refused at its own pointer.
  for (const double bound : {1.0, 0.5, -2.0}) {
    c["divergence_bound"] = bound;
    CHECK(optimizer_error(c) == fmt::format("cfg.json:/divergence_bound: out of range; got {}; "
                                            "expected a number > 1 (the loss may rise to that "
                                            "multiple of f(x0))",
                                            nlohmann::json(bound).dump()));
  }
  c.erase("divergence_bound");
  c["optimizer"]["step"] = -0.5;
  CHECK(optimizer_error(c) ==
        "cfg.json:/optimizer/step: out of range; got -0.5; expected a number > 0");
  c["optimizer"]["step"] = 0.5;
  c["optimizer"]["iterations"] = -1;
  CHECK(optimizer_error(c) ==
        "cfg.json:/optimizer/iterations: out of range; got -1; expected an integer >= 0");
}

}  // namespace stragglersim::experiments

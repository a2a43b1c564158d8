// Run output of plans with test sets: trace columns and summary keys (needs the application
// layer's execute_run, hence here and not in tests/experiments/config/).
#include "experiments/run_output.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/config/run_plan.h"
#include "sim/simulated_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json config_with(const nlohmann::json& data, const std::string& loss = "logistic") {
  auto c = nlohmann::json::parse(R"({
    "name": "data", "seed": 5, "workers": 6,
    "loss": {"kind": "logistic", "l2": 0.001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 3},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
    "optimizer": {"kind": "gd", "step": 0.5, "iterations": 5}
  })");
  c["data"] = data;
  c["loss"]["kind"] = loss;
  return c;
}

std::filesystem::path scratch() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stragglersim_run_output_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<sim::TraceRow> train_with_test(const RunPlan& plan) {
  auto cluster = std::make_unique<sim::SimulatedCluster>(
      plan.make_delays(), plan.scheme.rule, plan.stragglers, plan.seed);
  sim::SimulatedBackend backend(plan.objective, plan.scheme, std::move(cluster));
  auto optimizer = plan.make_optimizer();
  std::vector<sim::TraceRow> rows;
  sim::train(*plan.objective,
             plan.test_objective.get(),
             *optimizer,
             backend,
             sim::TrainingOptions{plan.iterations},
             [&](const sim::TraceRow& r) { rows.push_back(r); });
  return rows;
}

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST_CASE("experiments: logistic traces carry test auc and least-squares traces do not",
          "[experiments][data]") {
  const auto dir = scratch();
  const auto logistic_config = config_with(
      {{"source", "synthetic"}, {"generator", "amazon_like"}, {"rows", 600}, {"features", 2000}});
  const RunPlan logistic = plan_run(logistic_config, "cfg.json", dir);
  const RunOutcome outcome = execute_run(logistic, dir / "logistic");
  CHECK(first_line(dir / "logistic" / "trace.csv") ==
        "iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
        "gradient_error_relative,workers_heard,"
        "partitions_covered,test_loss,test_metric,test_auc");
  CHECK(outcome.summary["final_test_auc"].get<double>() > 0.5);
  const auto rows = train_with_test(logistic);
  // x₀ = 0 scores every row alike: AUC ½ exactly.
  CHECK(*rows.front().test_auc == 0.5);
  CHECK(*rows.back().test_auc > 0.5);

  const RunPlan squares = plan_run(config_with({{"source", "synthetic"},
                                                {"generator", "kc_housing_like"},
                                                {"rows", 300},
                                                {"features", 100}},
                                               "least_squares"),
                                   "cfg.json",
                                   dir);
  const RunOutcome squares_outcome = execute_run(squares, dir / "squares");
  CHECK(first_line(dir / "squares" / "trace.csv") ==
        "iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
        "gradient_error_relative,workers_heard,"
        "partitions_covered,test_loss,test_metric");
  CHECK_FALSE(squares_outcome.summary.contains("final_test_auc"));
  CHECK(squares_outcome.summary["test_metric"] == "mse");
}

}  // namespace stragglersim::experiments

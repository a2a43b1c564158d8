// Run output of plans with test sets: trace columns and summary keys (needs the application
// layer's execute_run, hence here and not in tests/experiments/config/).
#include "experiments/run_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/config/run_plan.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::config_with_data;

std::filesystem::path scratch() { return testing::process_scratch("run_output_test"); }

std::vector<sim::TraceRow> train_with_test(const RunPlan& plan) {
  return testing::train_plan(plan, /*with_test=*/true);
}

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST_CASE("experiments: logistic traces carry test auc and least-squares traces do not",
          "[experiments][data][heavy]") {
  const auto dir = scratch();
  const auto logistic_config = config_with_data(
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

  const RunPlan squares = plan_run(config_with_data({{"source", "synthetic"},
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

TEST_CASE("experiments: threads 1, 2 and 3 write the same trace and summary bytes",
          "[experiments][threads][heavy]") {
  const auto dir = scratch();
  // Dense and sparse data, GD (every partition from the recorded pass) and Nesterov (the
  // backend computes the partitions it needs at the query point), step "auto" (β from the
  // chunked power iteration), a test set, and partitions not divisible by the thread counts.
  const std::vector<nlohmann::json> datasets = {
      {{"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 700}, {"features", 9}},
      // 300 sparse features: f*'s Newton Hessians (m·p² flops each) stay cheap under TSan,
      // where 2 000 features took most of the thread-sanitizer stage.
      {{"source", "synthetic"}, {"generator", "amazon_like"}, {"rows", 600}, {"features", 300}}};
  for (const auto& data : datasets) {
    for (const std::string kind : {"gd", "nesterov"}) {
      auto config = config_with_data(data);
      config["workers"] = 10;
      config["stopping"]["r"] = 4;
      config["optimizer"] = {{"kind", kind}, {"step", "auto"}, {"iterations", 12}};
      std::string trace;
      std::string summary;
      for (const int threads : {1, 2, 3}) {
        config["threads"] = threads;
        const RunPlan plan = plan_run(config, "cfg.json", dir);
        REQUIRE(plan.threads == threads);
        const auto out =
            dir /
            fmt::format("threads_{}_{}_{}", kind, data["generator"].get<std::string>(), threads);
        REQUIRE(execute_run(plan, out).status == "ok");
        const std::string this_trace = testing::slurp(out / "trace.csv");
        // Same bytes but for the measured wall clock (docs/model.md §8).
        const std::string this_summary =
            testing::mask_wall_clock(testing::slurp(out / "summary.json"));
        if (threads == 1) {
          trace = this_trace;
          summary = this_summary;
          // The summary records no thread count: it never changes a result.
          CHECK_FALSE(nlohmann::json::parse(summary)["config"].contains("threads"));
          continue;
        }
        CHECK(this_trace == trace);
        CHECK(this_summary == summary);
      }
    }
  }
}

TEST_CASE("experiments: plan_run caps threads at max_threads", "[experiments][threads]") {
  auto config = config_with_data(
      {{"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 60}, {"features", 3}});
  config["threads"] = 8;
  CHECK(plan_run(config, "cfg.json", scratch(), {.max_threads = 3}).threads == 3);
  CHECK(plan_run(config, "cfg.json", scratch(), {.max_threads = 0}).threads == 8);
  config.erase("threads");
  CHECK(plan_run(config, "cfg.json", scratch()).threads == hardware_cores());
}

}  // namespace stragglersim::experiments

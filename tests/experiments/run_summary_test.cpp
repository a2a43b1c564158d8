// summary.json of a run (experiments/run_summary.cpp): the fields every summary starts with, and
// the totals of a delay-only and of a training run against the same quantities computed here
// from the run's own trace.csv.

#include "experiments/run_summary.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

/// Column `column` of every row t >= 1 of a trace.csv (row 0, the start, too when `with_start`).
std::vector<double> summary_trace_column(const fs::path& trace,
                                         std::size_t column,
                                         bool with_start = false) {
  std::istringstream in(stragglersim::testing::slurp(trace));
  std::string line;
  std::getline(in, line);  // header
  if (!with_start) {
    std::getline(in, line);  // row 0
  }
  std::vector<double> values;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::string cell;
    for (std::size_t c = 0; c <= column; ++c) {
      std::getline(cells, cell, ',');
    }
    values.push_back(std::stod(cell));
  }
  return values;
}

/// Two-pass mean and sample standard deviation.
std::pair<double, double> summary_mean_sd(const std::vector<double>& x) {
  double sum = 0.0;
  for (const double v : x) {
    sum += v;
  }
  const double mean = sum / static_cast<double>(x.size());
  double squares = 0.0;
  for (const double v : x) {
    squares += (v - mean) * (v - mean);
  }
  return {mean, std::sqrt(squares / static_cast<double>(x.size() - 1))};
}

}  // namespace

TEST_CASE("run summary: Welford moments equal the two-pass mean and standard deviation",
          "[experiments][run_summary]") {
  const std::vector<double> x = {1e6 + 0.5, 1e6 - 1.25, 1e6 + 3.0, 1e6, 1e6 + 0.125};
  Moments m;
  CHECK(m.sd() == 0.0);
  for (const double v : x) {
    m.add(v);
  }
  const auto [mean, sd] = summary_mean_sd(x);
  CHECK(m.n == x.size());
  CHECK(m.mean == Approx(mean).epsilon(1e-15));
  CHECK(m.sd() == Approx(sd).epsilon(1e-9));
}

TEST_CASE("run summary: every summary starts with the plan, the build and the prediction",
          "[experiments][run_summary]") {
  const RunPlan plan =
      plan_run(stragglersim::testing::small_least_squares_config(), "cfg.json", ".");
  RunSetUp setup;
  setup.theory = {{"expected_iteration_time", 1.5}};
  const nlohmann::json s = base_summary(plan, setup);
  CHECK(s["seed"] == 3);
  CHECK(s["name"] == plan.name);
  CHECK(s["config"] == plan.resolved);
  CHECK(s["theory"] == setup.theory);
  CHECK(s["build"] == build_info());
  for (const char* key : {"git_revision", "version", "compiler", "boost", "eigen", "fmt"}) {
    CHECK(s["build"].contains(key));
  }
}

TEST_CASE("run summary: a delay-only run's totals are those of its trace",
          "[experiments][run_summary]") {
  const auto dir = stragglersim::testing::scratch_dir("run_summary_test", "delay_only");
  const nlohmann::json config = nlohmann::json::parse(R"({
    "seed": 17, "workers": 12, "data": null,
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 6},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"iterations": 200}
  })");
  const RunOutcome outcome = execute_run(plan_run(config, "cfg.json", dir), dir);
  const auto times = summary_trace_column(dir / "trace.csv", 2);
  REQUIRE(times.size() == 200);
  const auto [mean, sd] = summary_mean_sd(times);
  const nlohmann::json& s = outcome.summary;
  CHECK(s["status"] == "ok");
  CHECK(s["iterations"] == 200);
  CHECK(s["mean_iteration_time"].get<double>() == Approx(mean).epsilon(1e-12));
  CHECK(s["iteration_time_sd"].get<double>() == Approx(sd).epsilon(1e-9));
  CHECK(s["iteration_time_standard_error"].get<double>() ==
        Approx(sd / std::sqrt(200.0)).epsilon(1e-9));
  CHECK(s["total_time"].get<double>() == Approx(mean * 200.0).epsilon(1e-12));
  // FRC under first_r has a shape the order-statistics sampler draws from.
  CHECK(s["sampler"] == "order_statistics");
}

TEST_CASE("run summary: a training run's totals are those of its trace",
          "[experiments][run_summary]") {
  const auto dir = stragglersim::testing::scratch_dir("run_summary_test", "training");
  const RunOutcome outcome = execute_run(
      plan_run(stragglersim::testing::small_least_squares_config(), "cfg.json", dir), dir);
  const auto times = summary_trace_column(dir / "trace.csv", 2);
  const auto losses = summary_trace_column(dir / "trace.csv", 3, /*with_start=*/true);
  const auto heard = summary_trace_column(dir / "trace.csv", 8);
  REQUIRE(times.size() == 30);
  const auto [mean, sd] = summary_mean_sd(times);
  const auto [mean_heard, sd_heard] = summary_mean_sd(heard);
  (void)sd_heard;
  const nlohmann::json& s = outcome.summary;
  CHECK(s["status"] == "ok");
  CHECK(s["iterations"] == 30);
  CHECK(s["mean_iteration_time"].get<double>() == Approx(mean).epsilon(1e-12));
  CHECK(s["iteration_time_sd"].get<double>() == Approx(sd).epsilon(1e-9));
  CHECK(s["final_loss"].get<double>() == losses.back());
  double best = std::numeric_limits<double>::infinity();
  for (const double l : losses) {
    best = std::min(best, l);
  }
  CHECK(s["best_loss"].get<double>() == best);
  // first_r 4 of 8: every iteration hears exactly 4 workers.
  CHECK(mean_heard == 4.0);
  CHECK(s["mean_workers_heard"].get<double>() == 4.0);
  // FRC d = 2, first 4 of 8: every used message is one worker's, 1/n of them on average.
  CHECK(s["contribution_share_min"].get<double>() <= 1.0 / 8.0);
  CHECK(s["contribution_share_max"].get<double>() >= 1.0 / 8.0);
}

}  // namespace stragglersim::experiments

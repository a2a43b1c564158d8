// `stragglersim run --timeline` (experiments/run_timeline.cpp, docs/whatif.md): a simulated run
// with one persistent slow worker, written as a Chrome trace and read by `stragglersim whatif`,
// is attributed to that worker with the slowdown the config implies; the file is opt-in and the
// run's own outputs do not change with it.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::run_stragglersim;
using testing::slurp;
using testing::TempDir;

TEST_CASE("cli: a simulated run's timeline attributes its slowdown to the slow worker",
          "[whatif][cli][run_timeline]") {
  const TempDir dir("run_timeline");
  // Worker 0 is always twice as slow: T_0 = 2(1 + X/10) ≥ 2, the others 1 + X/10.
  nlohmann::json config = testing::small_least_squares_config();
  config["workers"] = 4;
  config["code"] = {{"kind", "uncoded"}};
  config["stopping"] = {{"rule", "all"}};
  config["delay"] = {
      {"kind", "heterogeneous"}, {"shift", 1.0}, {"rate", 10.0}, {"factors", {2, 1, 1, 1}}};
  config["optimizer"]["iterations"] = 400;
  const std::string cfg = dir.write("cfg.json", config.dump());
  const std::string timeline = (dir.path() / "timeline.json").string();
  const auto run = run_stragglersim(
      "run " + cfg + " --out " + (dir.path() / "with").string() + " --timeline " + timeline + " -q",
      dir.path());
  REQUIRE(run.status == 0);
  const auto plain = run_stragglersim(
      "run " + cfg + " --out " + (dir.path() / "without").string() + " -q", dir.path());
  REQUIRE(plain.status == 0);
  CHECK(slurp(dir.path() / "with" / "trace.csv") == slurp(dir.path() / "without" / "trace.csv"));
  const auto whatif = run_stragglersim("whatif " + timeline + " --json", dir.path());
  REQUIRE(whatif.status == 0);
  const auto j = nlohmann::json::parse(whatif.out);
  // The ideal compute is the mean over all workers, c̄ = (2 + 3) · 1.1 / 4; worker 0's delay is
  // never below 2 > c̄, so with only worker 0 measured each step takes T_0:
  // S_w(0) = E[T_0] / c̄ = 2 · 1.1 / (1.25 · 1.1) = 1.6.
  const double truth = 2.0 / 1.25;
  const double s0 = j["by_dp_rank"]["0"].get<double>();
  CHECK(std::abs(s0 / truth - 1.0) < 0.05);
  for (const auto& [worker, value] : j["by_dp_rank"].items()) {
    if (worker != "0") CHECK(value.get<double>() < s0);
  }
  // The replay of the measured durations is the simulated iteration time: every step the
  // slowest worker's delay (rule all, no network).
  CHECK(j["steps"].size() == 400);
  for (const auto& [step, times] : j["steps"].items()) {
    CHECK(times["replayed"].get<double>() == Approx(times["recorded"].get<double>()).epsilon(1e-9));
    CHECK(times["replayed_with_launch_delays"].get<double>() ==
          Approx(times["recorded"].get<double>()).epsilon(1e-9));
  }
}

TEST_CASE("cli: run --timeline refuses a run off the simulated clock",
          "[whatif][cli][run_timeline]") {
  const TempDir dir("run_timeline");
  nlohmann::json config = testing::small_least_squares_config();
  config["backend"] = {{"kind", "threads"}};
  const std::string cfg = dir.write("cfg.json", config.dump());
  const std::string timeline = (dir.path() / "timeline.json").string();
  const auto r = run_stragglersim(
      "run " + cfg + " --out " + (dir.path() / "o").string() + " --timeline " + timeline,
      dir.path());
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: --timeline: the run's iterations are not on the simulated clock; got backend "
        "'threads'; expected backend simulated\n");
  CHECK_FALSE(std::filesystem::exists(timeline));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "o"));
}

}  // namespace
}  // namespace stragglersim::experiments

// The "backend": {"kind": "threads", ...} section of a config: resolved defaults, the exact text
// of every error, and the command line's exit status 3 when an uncoded run times out.

#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "models/worker_pool.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

nlohmann::json threads_config() {
  auto c = testing::small_logistic_config("t");
  c["backend"] = {{"kind", "threads"}};
  return c;
}

fs::path scratch(const std::string& name) {
  return testing::scratch_dir("threads_config_test", name);
}

std::string error_with(const std::function<void(nlohmann::json&)>& edit) {
  auto c = threads_config();
  edit(c);
  try {
    (void)plan_run(c, "cfg.json", scratch("plans"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

using testing::slurp;

}  // namespace

TEST_CASE("experiments: a threads backend config resolves its defaults",
          "[experiments][config][threads]") {
  auto c = threads_config();
  c["stragglers"] = "finish";
  c["backend"]["faults"] = {{{"worker", 3}, {"kind", "hang"}}};
  const RunPlan plan = plan_run(c, "cfg.json", scratch("resolve"));
  CHECK(plan.backend.name == "threads");
  CHECK(plan.backend.traits.real_time);
  CHECK_FALSE(plan.backend.traits.shares_cores);
  CHECK_FALSE(plan.backend.traits.mpi);
  CHECK(plan.resolved["backend"] ==
        nlohmann::json::parse(R"({"kind": "threads", "seconds_per_unit": 0.01, "timeout": 5.0,
          "faults": [{"worker": 3, "kind": "hang", "from_iteration": 1}]})"));
  // The options reach the backend: the policy is the run's, seconds_per_unit the default.
  models::WorkerPool pool(1);
  const auto backend = plan.make_backend(&pool);
  CHECK(backend->name() == "threads");
  CHECK(backend->seconds_per_unit() == 0.01);
  REQUIRE(backend->real_records() != nullptr);
  CHECK(backend->real_records()->empty());
  c["backend"]["faults"] = {{{"worker", 2}, {"kind", "slow"}}};
  const RunPlan slow = plan_run(c, "cfg.json", scratch("resolve"));
  CHECK(slow.resolved["backend"]["faults"] ==
        nlohmann::json::parse(
            R"([{"worker": 2, "kind": "slow", "from_iteration": 1, "factor": 5.0}])"));
  c.erase("backend");
  const RunPlan simulated = plan_run(c, "cfg.json", scratch("resolve"));
  CHECK(simulated.backend.name == "simulated");
  CHECK_FALSE(simulated.backend.traits.real_time);
  CHECK(simulated.resolved["backend"] == nlohmann::json({{"kind", "simulated"}}));
}

TEST_CASE("experiments: bad threads backend keys name the file and JSON pointer",
          "[experiments][config][errors][threads]") {
  CHECK(error_with([](auto& c) { c["backend"]["kind"] = "thread"; }) ==
        "cfg.json:/backend/kind: unknown backend 'thread'; did you mean 'threads'? valid values "
        "are: simulated, threads, "
        "mpi");
  CHECK(error_with([](auto& c) { c["backend"]["seconds_per_unit"] = -0.5; }) ==
        "cfg.json:/backend/seconds_per_unit: out of range; got -0.5; expected a number > 0");
  CHECK(error_with([](auto& c) { c["backend"]["seconds_per_unit"] = 0; }) ==
        "cfg.json:/backend/seconds_per_unit: out of range; got 0; expected a number > 0");
  CHECK(error_with([](auto& c) { c["backend"]["timeout"] = "long"; }) ==
        "cfg.json:/backend/timeout: wrong type; got \"long\"; expected a number");
  CHECK(error_with([](auto& c) { c["backend"]["timout"] = 1.0; }) ==
        "cfg.json:/backend/timout: unknown key 'timout'; did you mean 'timeout'? valid keys are: "
        "faults, kind, seconds_per_unit, timeout");
  CHECK(error_with([](auto& c) {
          c["backend"] = {{"kind", "simulated"}, {"timeout", 1.0}};
        }) == "cfg.json:/backend/timeout: unknown key 'timeout'; valid keys are: kind");
  CHECK(error_with([](auto& c) { c["backend"]["faults"] = 3; }) ==
        "cfg.json:/backend/faults: wrong type; got 3; expected an array of fault objects");
  CHECK(error_with([](auto& c) { c["backend"]["faults"] = {3}; }) ==
        "cfg.json:/backend/faults/0: wrong type; got 3; expected an object");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 6}, {"kind", "crash"}}};
        }) ==
        "cfg.json:/backend/faults/0/worker: out of range; got 6; expected an integer in [0, 5]");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"kind", "crash"}}};
        }) == "cfg.json:/backend/faults/0/worker: missing required key; expected an integer");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "sluggish"}}};
        }) ==
        "cfg.json:/backend/faults/0/kind: unknown fault 'sluggish'; valid values are: "
        "crash, hang, slow");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}}};
        }) ==
        "cfg.json:/backend/faults/0/kind: missing required key; expected one of: crash, "
        "hang, slow");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "slow"}, {"factor", 0.5}}};
        }) ==
        "cfg.json:/backend/faults/0/factor: out of range; got 0.5; expected a number in "
        "[1, 1000000]");
  // factor belongs to slow faults only.
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "hang"}, {"factor", 2}}};
        }) ==
        "cfg.json:/backend/faults/0/factor: unknown key 'factor'; valid keys are: from_iteration, "
        "kind, worker");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "crash"}, {"from_iteration", 0}}};
        }) ==
        "cfg.json:/backend/faults/0/from_iteration: out of range; got 0; expected an integer >= 1");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "crash"}, {"after", 2}}};
        }) ==
        "cfg.json:/backend/faults/0/after: unknown key 'after'; valid keys are: from_iteration, "
        "kind, "
        "worker");
  CHECK(error_with([](auto& c) {
          c["backend"]["faults"] = {{{"worker", 3}, {"kind", "crash"}},
                                    {{"worker", 3}, {"kind", "hang"}}};
        }) ==
        "cfg.json:/backend/faults/1/worker: a second fault for the same worker; got 3; expected "
        "each worker at most once");
  CHECK(error_with([](auto& c) {
          c["data"] = nullptr;
          c.erase("loss");
          c["optimizer"] = {{"iterations", 10}};
        }) ==
        "cfg.json:/backend/kind: the threads backend computes gradients and needs data; got "
        "\"threads\"; expected \"simulated\" for a delay-only run (\"data\": null)");
}

TEST_CASE("experiments: an uncoded threads run with a crashed worker exits 3 with a valid trace",
          "[experiments][threads][faults]") {
  const auto dir = scratch("timeout");
  auto c = threads_config();
  c["code"] = {{"kind", "uncoded"}};
  c["stopping"] = {{"rule", "all"}};
  c["backend"] = nlohmann::json::parse(
      R"({"kind": "threads", "seconds_per_unit": 0.001, "timeout": 0.3,
          "faults": [{"worker": 2, "kind": "crash", "from_iteration": 4}]})");
  {
    std::ofstream out(dir / "cfg.json");
    out << c.dump(2);
  }
  const std::string cmd = fmt::format("{} run '{}' --out '{}' > '{}' 2> '{}'",
                                      stragglersim::testing::cli_binary(),
                                      (dir / "cfg.json").string(),
                                      (dir / "out").string(),
                                      (dir / "stdout.txt").string(),
                                      (dir / "stderr.txt").string());
  const int raw = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 3);
  const std::string err = slurp(dir / "stderr.txt");
  CHECK_THAT(err,
             Catch::Contains("iteration 4: timeout: the all rule was not satisfied 0.3 s after the "
                             "broadcast; heard 5 of 6 workers; not heard: 2"));
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "failed");
  CHECK(summary["iterations"] == 3);
  // Header plus rows 0..3, every row with as many fields as the header.
  std::istringstream trace(slurp(dir / "out" / "trace.csv"));
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(trace, line)) {
    lines.push_back(line);
  }
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind("iteration,time,iteration_time,loss,", 0) == 0);
  CHECK_THAT(lines[0], Catch::EndsWith(",real_time,real_iteration_time,real_wall_time"));
  const auto fields = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  for (const auto& l : lines) {
    CHECK(fields(l) == fields(lines[0]));
  }
  CHECK(lines[4].rfind("3,", 0) == 0);
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("experiments: the threads backend runs collectives but not StragglAR or faults",
          "[experiments][config][errors][threads][collectives]") {
  const auto ring = [](nlohmann::json& c) { c["aggregation"] = {{"kind", "ring"}}; };
  // Every collective the schedule executor runs is accepted, its schedule over the dimension.
  for (const std::string kind : {"ring", "tree", "halving_doubling", "direct", "hierarchical"}) {
    auto c = threads_config();
    c["aggregation"] = {{"kind", kind}};
    if (kind == "hierarchical") {
      c["aggregation"]["node_size"] = 2;
    }
    const RunPlan plan = plan_run(c, "cfg.json", scratch("plans"));
    REQUIRE(plan.collective);
    CHECK(plan.collective->schedule->elements == plan.objective->dimension());
  }
  CHECK(error_with([](auto& c) {
          c["aggregation"] = {{"kind", "stragglar"}, {"straggler", 1}};
          c["workers"] = 4;
          c["partitions"] = 4;
        }) ==
        "cfg.json:/aggregation/kind: the stragglar aggregation needs the simulated clock (the "
        "threads and mpi backends do not run StragglAR); got \"threads\"; expected a backend on "
        "the simulated clock");
  CHECK(error_with([&](auto& c) {
          ring(c);
          c["backend"]["faults"] = {{{"worker", 1}, {"kind", "hang"}}};
        }) ==
        "cfg.json:/backend/faults: the ring aggregation needs no faults (every rank takes part in "
        "the all-reduce); got [{\"kind\":\"hang\",\"worker\":1}]; expected no faults");
  CHECK(error_with([&](auto& c) {
          ring(c);
          c["stragglers"] = "finish";
        }) ==
        "cfg.json:/aggregation/kind: the ring aggregation needs no straggler policy (every rank "
        "joins the all-reduce at the stop); got \"finish\"; expected stragglers absent or cancel");
}

}  // namespace stragglersim::experiments

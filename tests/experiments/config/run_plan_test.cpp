#include "experiments/config/run_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "experiments/config/config_error.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json base_config() {
  auto c = testing::small_logistic_config("t");
  return c;
}

std::filesystem::path temp_dir() {
  // This process's own folder: the test cases run as parallel processes.
  static const auto dir = stragglersim::testing::scratch_dir("run_plan_test", "plans");
  return dir;
}

std::string run_plan_error(const nlohmann::json& config) {
  return testing::plan_error(config, temp_dir());
}

}  // namespace

TEST_CASE("experiments: a valid config plans a run with defaults resolved",
          "[experiments][config]") {
  const RunPlan plan = plan_run(base_config(), "cfg.json", temp_dir());
  CHECK(plan.workers == 6);
  CHECK(plan.partitions == 6);
  CHECK(plan.objective->rows() == 180);
  CHECK(plan.test_objective->rows() == 60);
  CHECK(plan.scheme.decoder == sim::DecoderKind::kOptimal);
  CHECK(plan.resolved["rescale"] == "none");
  CHECK(plan.resolved["stragglers"] == "cancel");
  CHECK(plan.resolved["backend"]["kind"] == "simulated");
  CHECK(plan.resolved["data"]["separation"] == 1.5);
}

TEST_CASE("experiments: expected rescale under first_r_or_decodable uses the first_r q",
          "[experiments][config]") {
  auto c = base_config();
  c["stopping"] = {{"rule", "first_r_or_decodable"}, {"r", 3}};
  c["rescale"] = "expected";
  const RunPlan plan = plan_run(c, "cfg.json", temp_dir());
  // The rule stops early only once every group is covered, so q = C(4, 3)/C(6, 3) as first_r.
  CHECK(plan.scheme.erasure_probability == Approx(0.2));
}

TEST_CASE("experiments: bad configs name the file and JSON pointer and the accepted values",
          "[experiments][config][errors]") {
  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    auto c = base_config();
    edit(c);
    return run_plan_error(c);
  };
  CHECK(with([](auto& c) { c["code"]["kind"] = "frcc"; }) ==
        "cfg.json:/code/kind: unknown code 'frcc'; did you mean 'frc'? valid values are: bgc, crc, "
        "cyclic_mds, dynamic_frc, expander, frc, proportional, proportional_crc, sgc, uncoded");
  CHECK(with([](auto& c) { c["delay"]["rte"] = 2; }) ==
        "cfg.json:/delay/rte: unknown key 'rte'; did you mean 'rate'? valid keys are: kind, rate, "
        "shift, tail");
  CHECK(with([](auto& c) { c["code"]["d"] = 4; }) ==
        "cfg.json:/code/d: replication must divide the workers; got 4; expected a divisor of "
        "workers = 6");
  CHECK(with([](auto& c) { c["stopping"]["r"] = 40; }) ==
        "cfg.json:/stopping/r: out of range; got 40; expected an integer in [1, 6]");
  CHECK(with([](auto& c) { c["divergence_bound"] = 1; }) ==
        "cfg.json:/divergence_bound: out of range; got 1.0; expected a number > 1 (the loss may "
        "rise to that multiple of f(x0))");
  CHECK(with([](auto& c) { c["delay"]["rate"] = -1.0; }) ==
        "cfg.json:/delay/rate: out of range; got -1.0; expected a number > 0");
  CHECK(with([](auto& c) { c["workers"] = "30"; }) ==
        "cfg.json:/workers: wrong type; got \"30\"; expected an integer");
  CHECK(with([](auto& c) { c.erase("workers"); }) ==
        "cfg.json:/workers: missing required key; expected an integer");
  // A required key missing because it was misspelt names the near key it found.
  CHECK(with([](auto& c) {
          c["worker"] = c["workers"];
          c.erase("workers");
        }) ==
        "cfg.json:/workers: missing required key; got 'worker' (did you mean 'workers'?); "
        "expected an integer");
  CHECK(with([](auto& c) {
          c["stopping"]["rul"] = c["stopping"]["rule"];
          c["stopping"].erase("rule");
        })
            .starts_with("cfg.json:/stopping/rule: missing required key; got 'rul' (did you mean "
                         "'rule'?); expected one of: adaptive_deadline, "));
  CHECK(with([](auto& c) {
          c["delay_model"] = c["delay"];
          c.erase("delay");
        }) == "cfg.json:/delay: missing required key; expected an object");
  CHECK(with([](auto& c) { c["stopping"]["rule"] = "fist_r"; }) ==
        "cfg.json:/stopping/rule: unknown stopping rule 'fist_r'; did you mean 'first_r'? valid "
        "values are: adaptive_deadline, adaptive_r, all, anytime, deadline, "
        "decodable, drop_compute, first_r, first_r_or_decodable, k_async, k_batch_async, "
        "k_batch_sync, "
        "malenia, mindflayer, multi_message, rennala, rescaled_async, ringmaster");
  CHECK(with([](auto& c) { c["data"]["test_fraction"] = 1.5; }) ==
        "cfg.json:/data/test_fraction: out of range; got 1.5; expected a number in [0, 0.95]");
  CHECK(with([](auto& c) { c["optimizer"]["step"] = "fast"; }) ==
        "cfg.json:/optimizer/step: unknown step; got \"fast\"; expected a number > 0 or \"auto\" "
        "(1/beta)");
  CHECK(with([](auto& c) { c["stragglers"] = "kill"; }) ==
        "cfg.json:/stragglers: unknown straggler policy 'kill'; valid values are: cancel, drain, "
        "finish");
  CHECK(with([](auto& c) { c["delay"]["tail"] = "heavy"; }) ==
        "cfg.json:/delay/tail: unknown tail scaling 'heavy'; valid values are: load, none");
  CHECK(with([](auto& c) { c["stopping"]["fraction"] = 0.5; }) ==
        "cfg.json:/stopping/fraction: give either r or fraction, not both");
  CHECK(with([](auto& c) { c["partitions"] = 12; }) ==
        "cfg.json:/partitions: code 'frc' needs one partition per worker; got 12; expected "
        "workers = 6");
  CHECK(with([](auto& c) { c["data"] = 5; }) ==
        "cfg.json:/data: wrong type; got 5; expected an object");
  CHECK(with([](auto& c) { c["seed"] = -3; }) ==
        "cfg.json:/seed: out of range; got -3; expected an integer >= 0");
  // At most 4 threads per core of this machine, at least 8.
  const int cap =
      std::max(8, 4 * static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  CHECK(with([](auto& c) { c["threads"] = 0; }) ==
        fmt::format("cfg.json:/threads: out of range; got 0; expected an integer in [1, {}]", cap));
  CHECK(with([cap](auto& c) { c["threads"] = cap + 1; }) ==
        fmt::format("cfg.json:/threads: out of range; got {}; expected an integer in [1, {}]",
                    cap + 1,
                    cap));
  CHECK(with([](auto& c) { c["threads"] = "all"; }) ==
        "cfg.json:/threads: wrong type; got \"all\"; expected an integer");
  CHECK(with([](auto& c) {
          c["code"] = {{"kind", "crc"}, {"s", 2}};
          c["rescale"] = "expected";
        }) ==
        "cfg.json:/rescale: no group-erasure probability for this code and rule; got \"expected\"; "
        "expected a frc or uncoded code, or rescale 'none' or 'empirical'");
  CHECK(with([](auto& c) { c["data"] = nullptr; }) ==
        "cfg.json:/loss: unknown key; a delay-only run (\"data\": null) has no loss");
  CHECK(with([](auto& c) { c["optimizer"]["iterations"] = 2.5; }) ==
        "cfg.json:/optimizer/iterations: wrong type; got 2.5; expected an integer");
  CHECK(with([](auto& c) { c["data"]["source"] = "hdf5"; }) ==
        "cfg.json:/data/source: unknown data source 'hdf5'; valid values are: csv, fashion_mnist, "
        "libsvm, synthetic");
  CHECK(with([](auto& c) { c["data"]["rows"] = 4; }) ==
        "cfg.json:/partitions: more partitions than training rows; got 6; expected at most the 3 "
        "training rows");
}

TEST_CASE("experiments: data-file errors name the file and line", "[experiments][config][errors]") {
  const auto dir = temp_dir();
  {
    std::ofstream bad(dir / "bad.svm");
    bad << "+1 1:0.5 2:1\n-1 x:1\n";
    std::ofstream three(dir / "three.svm");
    three << "1 1:0.5\n2 1:1\n3 2:1\n";
  }
  auto c = base_config();
  c["data"] = {{"source", "libsvm"}, {"path", "missing.svm"}};
  CHECK(run_plan_error(c) ==
        "cfg.json:/data/path: cannot open data file; got \"missing.svm\"; expected an existing "
        "LIBSVM file");
  c["data"]["path"] = "bad.svm";
  CHECK(run_plan_error(c) == "cfg.json:/data/path: " + (dir / "bad.svm").string() +
                                 ":2: malformed feature; got 'x:1'; expected index:value");
  c["data"]["path"] = "three.svm";
  c["data"]["test_fraction"] = 0.0;
  CHECK(run_plan_error(c) ==
        "cfg.json:/loss: logistic regression needs two label values; got 3 distinct labels; "
        "expected -1/+1 or two values mapped to -1 (smaller) and +1 (larger)");
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

/// Runs a planned config to the end and returns its trace rows.
std::vector<sim::TraceRow> train_plan(const RunPlan& plan) { return testing::train_plan(plan); }

nlohmann::json coded_config(const nlohmann::json& code, const nlohmann::json& stopping) {
  auto c = base_config();
  c["workers"] = 12;
  c["data"]["rows"] = 600;
  c["optimizer"]["iterations"] = 40;
  c["code"] = code;
  c["stopping"] = stopping;
  return c;
}

}  // namespace

TEST_CASE("experiments: exact-coded traces equal the uncoded trace to 1e-8",
          "[experiments][codes]") {
  const auto uncoded = train_plan(
      plan_run(coded_config({{"kind", "uncoded"}}, {{"rule", "all"}}), "cfg.json", temp_dir()));
  // (code, n − s): first_r at n − s arrivals always decodes exactly.
  const std::vector<std::pair<nlohmann::json, int>> cases = {
      {{{"kind", "crc"}, {"s", 3}}, 9},
      {{{"kind", "cyclic_mds"}, {"s", 3}}, 9},
      {{{"kind", "frc"}, {"d", 3}}, 10},
      {{{"kind", "proportional"},
        {"d", 3},
        {"factors", {1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0}}},
       10}};
  for (const auto& [code, r] : cases) {
    INFO(code.dump());
    const std::vector<nlohmann::json> stoppings = {{{"rule", "decodable"}},
                                                   {{"rule", "first_r"}, {"r", r}}};
    for (const auto& stopping : stoppings) {
      const RunPlan plan = plan_run(coded_config(code, stopping), "cfg.json", temp_dir());
      CHECK(plan.scheme.decoder == sim::DecoderKind::kExact);
      const auto rows = train_plan(plan);
      REQUIRE(rows.size() == uncoded.size());
      bool times_differ = false;
      for (std::size_t t = 0; t < rows.size(); ++t) {
        CHECK(std::abs(rows[t].loss - uncoded[t].loss) <= 1e-8 * std::abs(uncoded[t].loss));
        CHECK(rows[t].decoding_error < 1e-9);
        times_differ = times_differ || rows[t].iteration_time != uncoded[t].iteration_time;
      }
      CHECK(times_differ);
    }
  }
}

TEST_CASE("experiments: approximate codes converge and carry their decoding error",
          "[experiments][codes]") {
  for (const auto& [code, stopping] : std::vector<std::pair<nlohmann::json, nlohmann::json>>{
           {{{"kind", "bgc"}, {"d", 3.0}}, {{"rule", "first_r"}, {"r", 8}}},
           {{{"kind", "bgc"}, {"d", 3.0}, {"decoder", "one_step"}},
            {{"rule", "first_r"}, {"r", 8}}},
           {{{"kind", "expander"}, {"d", 3}}, {{"rule", "first_r"}, {"r", 8}}},
           {{{"kind", "sgc"}, {"d", 2}, {"decoder", "one_step"}},
            {{"rule", "deadline"}, {"after", 3.0}}},
       }) {
    INFO(code.dump());
    auto c = coded_config(code, stopping);
    c.erase("partitions");
    const RunPlan plan = plan_run(c, "cfg.json", temp_dir());
    const auto rows = train_plan(plan);
    double error = 0.0;
    for (std::size_t t = 1; t < rows.size(); ++t) {
      error += rows[t].decoding_error;
    }
    CHECK(error > 0.0);
    CHECK(rows.back().loss < 0.7 * rows.front().loss);
  }
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("run_plan: a setup cache shares the data set and beta of equal configs",
          "[experiments][config][setup_cache]") {
  SetupCache cache;
  auto config = base_config();
  config["optimizer"]["step"] = "auto";
  const RunPlan fresh = plan_run(config, "cfg.json", temp_dir());
  const RunPlan first = plan_run(config, "cfg.json", temp_dir(), {.setup = &cache});
  // Another code and stopping rule over the same data: the same data set, the same β.
  auto other = config;
  other["code"] = {{"kind", "uncoded"}};
  other["stopping"] = {{"rule", "all"}};
  const RunPlan second = plan_run(other, "cfg.json", temp_dir(), {.setup = &cache});
  CHECK(&second.objective->data() == &first.objective->data());
  CHECK(&second.test_objective->data() == &first.test_objective->data());
  CHECK(second.smoothness == fresh.smoothness);
  CHECK(second.step == fresh.step);
  CHECK(second.resolved["data"] == fresh.resolved["data"]);
  CHECK(first.resolved == fresh.resolved);
  // Another seed, or another loss kind (labels may be mapped in place), is another data set.
  auto reseeded = config;
  reseeded["seed"] = 8;
  CHECK(&plan_run(reseeded, "cfg.json", temp_dir(), {.setup = &cache}).objective->data() !=
        &first.objective->data());
  auto squares = config;
  squares["loss"]["kind"] = "least_squares";
  CHECK(&plan_run(squares, "cfg.json", temp_dir(), {.setup = &cache}).objective->data() !=
        &first.objective->data());
}

TEST_CASE("run_plan: plans of one data set started at once load it once",
          "[experiments][config][setup_cache]") {
  // A sweep validates its runs on --jobs threads: the first plan of a data set loads it while
  // the others wait for it, so every plan holds the same copy (no second load, no second copy
  // in memory). Four threads, each planning two configs over the same data.
  SetupCache cache;
  auto config = base_config();
  config["optimizer"]["step"] = "auto";
  auto other = config;
  other["code"] = {{"kind", "uncoded"}};
  other["stopping"] = {{"rule", "all"}};
  std::vector<std::optional<RunPlan>> plans(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      plans[2 * t] = plan_run(config, "cfg.json", temp_dir(), {.setup = &cache});
      plans[2 * t + 1] = plan_run(other, "cfg.json", temp_dir(), {.setup = &cache});
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const RunPlan fresh = plan_run(config, "cfg.json", temp_dir());
  int shared = 0;
  for (const auto& plan : plans) {
    REQUIRE(plan.has_value());
    shared += static_cast<int>(&plan->objective->data() == &plans[0]->objective->data() &&
                               &plan->test_objective->data() == &plans[0]->test_objective->data() &&
                               plan->smoothness == fresh.smoothness);
  }
  CHECK(shared == 8);
  CHECK(plans[0]->objective->data().labels == fresh.objective->data().labels);
}

TEST_CASE("run_plan: a setup cache loads a data set again once no plan holds it",
          "[experiments][config][setup_cache]") {
  SetupCache cache;
  const auto config = base_config();
  const RunPlan fresh = plan_run(config, "cfg.json", temp_dir());
  {
    const RunPlan dropped = plan_run(config, "cfg.json", temp_dir(), {.setup = &cache});
    REQUIRE(cache.data(
        nlohmann::json{config["data"], config["seed"], temp_dir().string(), config["loss"]["kind"]}
            .dump()));
  }
  CHECK_FALSE(cache.data(
      nlohmann::json{config["data"], config["seed"], temp_dir().string(), config["loss"]["kind"]}
          .dump()));
  const RunPlan again = plan_run(config, "cfg.json", temp_dir(), {.setup = &cache});
  CHECK(again.objective->data().labels == fresh.objective->data().labels);
  CHECK(again.resolved == fresh.resolved);
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("run_plan: asynchronous rules and minibatches refuse bad options at their pointer",
          "[experiments][config][errors][async]") {
  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    auto c = base_config();
    c["code"] = {{"kind", "uncoded"}};
    c["stopping"] = {{"rule", "k_async"}, {"k", 2}};
    edit(c);
    return run_plan_error(c);
  };
  CHECK(with([](auto& c) { c["stopping"]["k"] = 9; }) ==
        "cfg.json:/stopping/k: out of range; got 9; expected an integer in [1, 6]");
  CHECK(with([](auto& c) { c["stopping"]["k"] = 0; }) ==
        "cfg.json:/stopping/k: out of range; got 0; expected an integer in [1, 6]");
  CHECK(with([](auto& c) { c["stopping"]["staleness_step"] = "inverted"; }) ==
        "cfg.json:/stopping/staleness_step: unknown staleness step 'inverted'; did you mean "
        "'inverse'? valid values are: constant, inverse");
  // 240 rows, a quarter held out: 180 training rows in 6 partitions of 30.
  CHECK(with([](auto& c) { c["optimizer"]["batch"] = 31; }) ==
        "cfg.json:/optimizer/batch: out of range; got 31; expected an integer in [1, 30] (the rows "
        "of the smallest of the 6 partitions)");
  CHECK(with([](auto& c) { c["optimizer"]["batch"] = 0; }) ==
        "cfg.json:/optimizer/batch: out of range; got 0; expected an integer in [1, 30] (the rows "
        "of the smallest of the 6 partitions)");
  CHECK(with([](auto& c) {
          c["code"] = {{"kind", "frc"}, {"d", 2}};
        }) ==
        "cfg.json:/stopping/rule: the asynchronous rule 'k_async' needs the uncoded code; got "
        "\"frc\"; expected code kind uncoded");
  CHECK(with([](auto& c) { c["optimizer"]["kind"] = "nesterov"; }) ==
        "cfg.json:/stopping/rule: the asynchronous rule 'k_async' needs gradient descent; got "
        "\"nesterov\"; expected optimizer kind gd");
  // A synchronous run refuses a bad batch the same way; a good one plans.
  auto sync = base_config();
  sync["optimizer"]["batch"] = 31;
  CHECK(run_plan_error(sync) ==
        "cfg.json:/optimizer/batch: out of range; got 31; expected an integer in [1, 30] (the rows "
        "of the smallest of the 6 partitions)");
  sync["optimizer"]["batch"] = 30;
  const RunPlan plan = plan_run(sync, "cfg.json", temp_dir());
  CHECK(plan.batch == 30);
  CHECK_FALSE(plan.update.has_value());
  auto async = base_config();
  async["code"] = {{"kind", "uncoded"}};
  async["stopping"] = {{"rule", "k_batch_async"}, {"k", 6}, {"staleness_step", "inverse"}};
  const RunPlan a = plan_run(async, "cfg.json", temp_dir());
  REQUIRE(a.update.has_value());
  CHECK(a.update->mode == sim::UpdateMode::kKBatchAsync);
  CHECK(a.update->k == 6);
  CHECK(a.update->step == sim::StalenessStep::kInverse);
  // A network block applies to the pushes (sim/asynchronous_cluster.h).
  async["network"] = {{"latency", 0.001}, {"bandwidth", 1e6}, {"serial", true}};
  const RunPlan networked = plan_run(async, "cfg.json", temp_dir());
  CHECK(networked.network.serial);
  CHECK(networked.network.message_bytes ==
        8.0 * static_cast<double>(networked.objective->dimension()));
}

}  // namespace stragglersim::experiments

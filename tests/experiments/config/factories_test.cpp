#include "experiments/config/factories.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

/// A delay-only config around `delay`, n = 4 workers, uncoded.
nlohmann::json delay_only_config(const nlohmann::json& delay) {
  return testing::four_worker_delay_only(delay);
}

/// A 4-worker trace file for the rows that need one ("trace": "path" has no default).
std::string four_worker_trace(const testing::TempDir& dir) {
  return dir.write("times.csv", "worker,seconds\n0,1\n1,2\n2,3\n3,4\n");
}

/// A 4-worker power file for the universal row (its "powers" has no default).
std::string four_worker_powers(const testing::TempDir& dir) {
  return dir.write("powers.csv", "time,worker,power\n0,0,1\n0,1,1\n0,2,2\n0,3,1\n1,3,0\n2,0,1\n");
}

std::string factory_error(const nlohmann::json& config) { return testing::plan_error(config, "."); }

}  // namespace

TEST_CASE("config: a violated options constraint is reported at its key", "[experiments][config]") {
  CHECK(factory_error(delay_only_config({{"kind", "bimodal"}, {"slow_probability", 1.5}})) ==
        "cfg.json:/delay/slow_probability: out of range; got 1.5; expected a number in [0, 1]");
  CHECK(factory_error(delay_only_config({{"kind", "bimodal"}, {"slowdown", 0.5}})) ==
        "cfg.json:/delay/slowdown: out of range; got 0.5; expected a number >= 1");
  CHECK(factory_error(delay_only_config({{"kind", "pareto"}, {"shape", 0}})) ==
        "cfg.json:/delay/shape: out of range; got 0; expected a number > 0");
  CHECK(factory_error(delay_only_config({{"kind", "shifted_exponential"}, {"shift", -1}})) ==
        "cfg.json:/delay/shift: out of range; got -1; expected a number >= 0");
  CHECK(factory_error(
            delay_only_config({{"kind", "heterogeneous"}, {"factors", {1.0, 2.0, 0, 1.0}}})) ==
        "cfg.json:/delay/factors: bad factor; got 0; expected an array of 4 numbers > 0 (one "
        "slowdown factor per worker)");
  CHECK(factory_error(delay_only_config({{"kind", "heterogeneous"}, {"factors", {1.0, 2.0}}})) ==
        "cfg.json:/delay/factors: wrong shape; got 2; expected an array of 4 numbers > 0 (one "
        "slowdown factor per worker)");
  auto c = delay_only_config({{"kind", "shifted_exponential"}});
  c["stopping"] = {{"rule", "first_r"}, {"r", 5}};
  CHECK(factory_error(c) ==
        "cfg.json:/stopping/r: out of range; got 5; expected an integer in [1, 4]");
  c["stopping"] = {{"rule", "deadline"}, {"after", -2.0}};
  CHECK(factory_error(c) ==
        "cfg.json:/stopping/after: out of range; got -2.0; expected a number > 0");
  c["stopping"] = {{"rule", "all"}};
  c["code"] = {{"kind", "frc"}, {"d", 3}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/d: replication must divide the workers; got 3; expected a divisor of "
        "workers = 4");
  c["code"] = {{"kind", "frc"}, {"d", 5000000000LL}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/d: out of range; got 5000000000; expected an integer in [1, 4]");
  c["code"] = {{"kind", "proportional"}, {"d", 2}, {"factors", {1.0, 2.0, -1.0, 1.0}}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/factors: bad factor; got -1.0; expected an array of 4 numbers > 0 (one "
        "slowdown factor per worker)");
  c["code"] = {{"kind", "proportional"}, {"d", 2}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/factors: missing required key; expected an array of one speed factor per "
        "worker");
  c["code"] = {{"kind", "proportional"}, {"d", 2}, {"factors", {1.0, 2.0, 1.0, 1.0}}};
  c["partitions"] = 1;
  CHECK(factory_error(c) ==
        "cfg.json:/partitions: too few partitions for the groups; got 1; expected at least "
        "workers/d = 2 (one per group), or 0 for k = n");
  c["code"] = {{"kind", "crc"}, {"s", 1}};
  c["partitions"] = 8;
  CHECK(factory_error(c) ==
        "cfg.json:/partitions: code 'crc' needs one partition per worker; got 8; expected "
        "workers = 4");
  c["code"] = {{"kind", "proportional_crc"}, {"s", 1}, {"factors", {1.0, 2.0, 1.0, 1.0}}};
  c["partitions"] = 1;
  CHECK(factory_error(c) ==
        "cfg.json:/partitions: too few partitions for the workers; got 1; expected at least "
        "workers/(s + 1) = 2 (one partition per worker), or 0 for k = n");
  c.erase("partitions");
  c["code"] = {{"kind", "proportional_crc"}, {"s", 4}, {"factors", {1.0, 2.0, 1.0, 1.0}}};
  CHECK(factory_error(c) == "cfg.json:/code/s: out of range; got 4; expected an integer in [0, 3]");
  c["code"] = {{"kind", "proportional_crc"}, {"s", 1}, {"factors", {1.0, 2.0, 1.0}}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/factors: wrong shape; got 3; expected an array of 4 numbers > 0 (one "
        "slowdown factor per worker)");
  c["code"] = {{"kind", "proportional_crc"}, {"s", 1}, {"factors", "fit"}};
  CHECK(factory_error(c) ==
        "cfg.json:/code/factors: unknown value; got \"fit\"; expected \"delay\", or an array "
        "of 4 numbers > 0");
}

TEST_CASE("config: code and rule keys reach their fields", "[experiments][config]") {
  auto c = delay_only_config({{"kind", "shifted_exponential"}});
  c["workers"] = 12;
  c["code"] = {{"kind", "frc"}, {"d", 3}};
  c["stopping"] = {{"rule", "first_r_or_decodable"}, {"r", 7}};
  RunPlan plan = plan_run(c, "cfg.json", ".");
  const codes::CodeStructure s = plan.scheme.code->structure();
  CHECK(s.group_size == 3);
  CHECK(s.groups == 4);
  CHECK(s.stragglers_tolerated == 2);
  REQUIRE(plan.scheme.rule->shape());
  CHECK(plan.scheme.rule->shape().value().kind == sim::RuleKind::kFirstROrDecodable);
  CHECK(plan.scheme.rule->shape().value().r == 7);
  c["stopping"] = {{"rule", "deadline"}, {"after", 2.5}};
  plan = plan_run(c, "cfg.json", ".");
  CHECK(plan.scheme.rule->shape().value().deadline == 2.5);
  c["code"] = {{"kind", "cyclic_mds"}, {"s", 3}};
  plan = plan_run(c, "cfg.json", ".");
  CHECK(plan.scheme.code->structure().layout == codes::CodeLayout::kCyclic);
  CHECK(plan.scheme.code->stragglers_tolerated() >= 3);
}

TEST_CASE("config: the unknown-key list is the factory row's keys", "[experiments][config]") {
  const testing::TempDir dir("factories");
  for (const auto& row : delay_factories()) {
    auto keys = keys_of(row, kDelayKeys);
    std::sort(keys.begin(), keys.end());
    nlohmann::json delay = {{"kind", row.name}, {"bogus", 1}};
    if (row.name.starts_with("heterogeneous")) {
      delay["factors"] = {1.0, 1.0, 1.0, 1.0};
    } else if (row.name == "trace") {
      delay["path"] = four_worker_trace(dir);
    } else if (row.name == "fixed") {
      delay["times"] = "sqrt";
    } else if (row.name == "universal") {
      delay["markov"] = {{"powers", {1.0}}};
    }
    CHECK(factory_error(delay_only_config(delay)) ==
          "cfg.json:/delay/bogus: unknown key 'bogus'; valid keys are: " + join(keys));
  }
  for (const auto& row : stopping_factories()) {
    auto keys = keys_of(row, kStoppingKeys);
    std::sort(keys.begin(), keys.end());
    auto c = delay_only_config({{"kind", "shifted_exponential"}});
    c["stopping"] = {{"rule", row.name}, {"bogus", 1}};
    if (row.name.starts_with("first_r")) {
      c["stopping"]["r"] = 2;
    } else if (row.name == "deadline") {
      c["stopping"]["after"] = 2.0;
    } else if (row.name.starts_with("k_")) {
      c["stopping"]["k"] = 2;  // the asynchronous rules' K
    } else if (row.name == "anytime") {
      c["stopping"]["window"] = 1.0;
    } else if (row.name == "drop_compute") {
      c["stopping"]["threshold"] = 1.0;
    } else if (row.name == "adaptive_deadline") {
      c["stopping"]["window"] = 3;
      c["stopping"]["mads"] = 1.0;
    } else if (row.name == "rennala" || row.name == "malenia" || row.name == "mindflayer") {
      c["stopping"]["batch"] = 2;
      if (row.name == "mindflayer") {
        c["stopping"]["cutoffs"] = 3.0;
      }
    }
    CHECK(factory_error(c) ==
          "cfg.json:/stopping/bogus: unknown key 'bogus'; valid keys are: " + join(keys));
  }
}

TEST_CASE("config: every row has a description and its keys are accepted",
          "[experiments][config]") {
  // Every key a delay row lists, given at its default (or a valid value), is accepted.
  const testing::TempDir dir("factories");
  for (const auto& row : delay_factories()) {
    CHECK_FALSE(row.description.empty());
    nlohmann::json delay = {{"kind", row.name}};
    for (const auto& key : row.keys) {
      if (key.name == "block" || key.name == "start") {
        // Read only in block mode, and in cycle mode on an iteration-form trace (this one is a
        // pool): tests/experiments/trace_config_test.cpp.
        continue;
      }
      if (key.name == "markov") {
        continue;  // the other source of compute powers than "powers" (one only): below
      }
      if (key.name == "factors") {
        delay[key.name] = {1.0, 1.0, 1.0, 1.0};
      } else if (key.name == "times" || key.name == "speeds") {
        delay[key.name] = "sqrt";
      } else if (key.name == "powers") {
        delay[key.name] = {{"file", four_worker_powers(dir)}};
      } else if (key.name == "path") {
        delay[key.name] = four_worker_trace(dir);
      } else if (key.name == "tail" || key.name == "mode") {
        delay[key.name] = key.default_value;
      } else {
        delay[key.name] = std::stod(key.default_value);
      }
    }
    CHECK(factory_error(delay_only_config(delay)) == "no error");
  }
  CHECK(factory_error(delay_only_config(
            {{"kind", "universal"},
             {"markov", {{"powers", {1.0, 0.0}}, {"rates", {{0.0, 1.0}, {2.0, 0.0}}}}}})) ==
        "no error");
  for (const auto& row : code_factories()) {
    CHECK_FALSE(row.description.empty());
  }
  for (const auto& row : stopping_factories()) {
    CHECK_FALSE(row.description.empty());
  }
}

TEST_CASE("config: fixed times are checked at their own pointer", "[experiments][config]") {
  const std::string list =
      R"(expected an array of 4 numbers > 0 (one time per worker), "sqrt" or "linear")";
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}, {"times", {1.0, 2.0, 3.0, 0.0}}})) ==
        "cfg.json:/delay/times/3: time not > 0; got 0.0; " + list);
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}, {"times", {1.0, 2.0}}})) ==
        "cfg.json:/delay/times: wrong length; got 2; " + list);
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}, {"times", {1.0, "x", 1.0, 1.0}}})) ==
        "cfg.json:/delay/times/1: not a number; got \"x\"; " + list);
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}, {"times", "cube"}})) ==
        "cfg.json:/delay/times: unknown times formula 'cube'; valid values are: linear, sqrt");
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}})) ==
        "cfg.json:/delay/times: missing required key; " + list);
  CHECK(factory_error(delay_only_config({{"kind", "fixed"}, {"times", "sqrt"}, {"scale", 0}})) ==
        "cfg.json:/delay/scale: out of range; got 0; expected a number > 0");
}

TEST_CASE("config: universal powers are checked at their pointer or file line",
          "[experiments][config]") {
  const testing::TempDir dir("factories");
  const std::string negative =
      dir.write("negative.csv", "time,worker,power\n0,0,1\n0,1,1\n0,2,-0.5\n0,3,1\n");
  CHECK(
      factory_error(delay_only_config({{"kind", "universal"}, {"powers", {{"file", negative}}}})) ==
      "cfg.json:/delay/powers/file: " + negative +
          ":4: negative power; got -0.5 (expected a number >= 0)");
  const std::string outside = dir.write("outside.csv", "time,worker,power\n0,0,1\n0,4,1\n");
  CHECK(
      factory_error(delay_only_config({{"kind", "universal"}, {"powers", {{"file", outside}}}})) ==
      "cfg.json:/delay/powers/file: " + outside +
          ":3: worker '4' out of range (expected an integer in [0, 3]: the run's workers)");
  auto markov = [](const nlohmann::json& chain) {
    return factory_error(delay_only_config({{"kind", "universal"}, {"markov", chain}}));
  };
  CHECK(markov({{"powers", {0, 0}}}) ==
        "cfg.json:/delay/markov/powers: every power is 0; got [0,0]; expected some state with "
        "power > 0 (or computations never end)");
  CHECK(markov({{"powers", {1, 0}}, {"switch_rate", -1}}) ==
        "cfg.json:/delay/markov/switch_rate: out of range; got -1; expected a number > 0");
  CHECK(markov({{"powers", {1, 0}}, {"rates", {{0, -2}, {1, 0}}}}) ==
        "cfg.json:/delay/markov/rates/0/1: out of range; got -2; expected a rate >= 0");
  CHECK(markov({{"powers", {1, 0}}, {"rates", {{0, 1}, {0, 0}}}}) ==
        "cfg.json:/delay/markov/rates/1: a state that is never left; got [0,0]; expected some "
        "rate > 0 out of every state");
  CHECK(factory_error(delay_only_config(
            {{"kind", "universal"}, {"markov", {{"powers", {1}}}}, {"speeds", {1, 1, 0, 1}}})) ==
        "cfg.json:/delay/speeds/2: speed not > 0; got 0; expected an array of 4 numbers > 0 (one "
        "speed per worker) or \"sqrt\"");
  CHECK(factory_error(delay_only_config({{"kind", "universal"}})) ==
        "cfg.json:/delay/powers: missing required key; expected \"powers\": {\"file\": ...} or "
        "\"markov\": {\"powers\": [...], ...}");
  // The real-time backends have no simulated clock to follow.
  auto c = delay_only_config({{"kind", "universal"}, {"markov", {{"powers", {1}}}}});
  c["data"] = {{"source", "synthetic"},
               {"generator", "linear_regression"},
               {"rows", 40},
               {"features", 4},
               {"test_fraction", 0}};
  c["loss"] = {{"kind", "least_squares"}};
  c["optimizer"]["step"] = 0.1;
  c["backend"] = {{"kind", "threads"}};
  CHECK(factory_error(c) ==
        "cfg.json:/delay/kind: delay model 'universal' needs the simulated clock (its durations "
        "follow the simulated clock); got \"threads\"; expected a backend on the simulated clock");
}

}  // namespace stragglersim::experiments

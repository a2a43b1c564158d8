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

/// The delay model the config layer builds from `delay` (the JSON of "delay") for `loads`.
std::unique_ptr<sim::DelayModel> delay_from(const std::string& delay,
                                            const std::vector<double>& loads) {
  const nlohmann::json j = nlohmann::json::parse(delay);
  JsonReader reader(j, "cfg.json", "/delay");
  for (const auto& row : delay_factories()) {
    if (row.name == j.at("kind").get<std::string>()) {
      (void)reader.raw("kind");
      const auto make = row.make(reader, sim::WorkerLoads::of(loads), ".");
      reader.finish(keys_of(row, kDelayKeys));
      return make();
    }
  }
  return nullptr;
}

/// A delay-only config around `delay`, n = 4 workers, uncoded.
nlohmann::json delay_only_config(const nlohmann::json& delay) {
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "t", "workers": 4, "data": null, "code": {"kind": "uncoded"},
    "stopping": {"rule": "all"}, "optimizer": {"iterations": 1}})");
  c["delay"] = delay;
  return c;
}

/// A 4-worker trace file for the rows that need one ("trace": "path" has no default).
std::string four_worker_trace(const testing::TempDir& dir) {
  return dir.write("times.csv", "worker,seconds\n0,1\n1,2\n2,3\n3,4\n");
}

std::string factory_error(const nlohmann::json& config) { return testing::plan_error(config, "."); }

}  // namespace

// Each parameter gets a distinct value, so swapping any two fields in the JSON wiring changes
// the moments compared with the formulas of the class comments.
TEST_CASE("config: shifted exponential keys reach shift and rate", "[experiments][config]") {
  const auto d = delay_from(R"({"kind": "shifted_exponential", "shift": 0.7, "rate": 2.5,
                                "tail": "none"})",
                            {2.0, 2.0});
  // T = ℓ·a + X/λ under Model B.
  CHECK(d->lower_bound(0) == Approx(2.0 * 0.7));
  CHECK(d->mean(0) == Approx(2.0 * 0.7 + 1.0 / 2.5));
  CHECK(d->variance(0) == Approx(1.0 / (2.5 * 2.5)));
  const auto load =
      delay_from(R"({"kind": "shifted_exponential", "shift": 0.7, "rate": 2.5})", {2.0, 2.0});
  CHECK(load->variance(0) == Approx(4.0 / (2.5 * 2.5)));  // tail scales with the load
}

TEST_CASE("config: pareto keys reach shift scale and shape", "[experiments][config]") {
  const double a = 0.3;
  const double xm = 0.8;
  const double alpha = 4.5;
  const auto d = delay_from(
      R"({"kind": "pareto", "shift": 0.3, "scale": 0.8, "shape": 4.5, "tail": "load"})", {2.0});
  const double s = 2.0;
  CHECK(d->lower_bound(0) == Approx(s * a + s * xm));
  CHECK(d->mean(0) == Approx(s * a + s * alpha * xm / (alpha - 1.0)));
  CHECK(d->variance(0) ==
        Approx(s * s * xm * xm * alpha / ((alpha - 1.0) * (alpha - 1.0) * (alpha - 2.0))));
}

TEST_CASE("config: bimodal keys reach probability and slowdown", "[experiments][config]") {
  const double pi = 0.2;
  const double kappa = 3.0;
  const auto d = delay_from(R"({"kind": "bimodal", "shift": 0.5, "rate": 2.0, "tail": "none",
                                "slow_probability": 0.2, "slowdown": 3.0})",
                            {1.0});
  // T₀ = 0.5 + Exp(1)/2: E[T₀] = 1, E[T₀²] = 0.25 + 1.
  const double m1 = 1.0;
  const double m2 = 1.25;
  CHECK(d->lower_bound(0) == Approx(0.5));
  CHECK(d->mean(0) == Approx((1.0 - pi + pi * kappa) * m1));
  const double second = (1.0 - pi + pi * kappa * kappa) * m2;
  CHECK(d->variance(0) == Approx(second - d->mean(0) * d->mean(0)));
}

TEST_CASE("config: heterogeneous keys reach factors shift and rate", "[experiments][config]") {
  const auto d = delay_from(R"({"kind": "heterogeneous", "shift": 0.5, "rate": 4.0,
                                "factors": [1.0, 3.0]})",
                            {2.0, 2.0});
  CHECK(d->mean(0) == Approx(2.0 * 0.5 + 2.0 / 4.0));
  CHECK(d->mean(1) == Approx(3.0 * (2.0 * 0.5 + 2.0 / 4.0)));
  CHECK(d->variance(1) == Approx(9.0 * (2.0 / 4.0) * (2.0 / 4.0)));
}

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

TEST_CASE("config: proportional estimates its factors from the run's delay",
          "[experiments][config]") {
  // "factors": "delay" takes a heterogeneous delay's own factors, and a trace's mean time per
  // worker over the fastest worker's: the same code as those factors written out.
  const testing::TempDir dir("proportional_delay_factors");
  const auto loads_of = [&](const nlohmann::json& code, const nlohmann::json& delay) {
    auto c = delay_only_config(delay);
    c["code"] = code;
    c["partitions"] = 8;
    return experiments::plan_run(c, "cfg.json", dir.path()).scheme.code->loads();
  };
  const nlohmann::json estimated = {{"kind", "proportional"}, {"d", 2}, {"factors", "delay"}};
  const auto written = [](const std::vector<double>& factors) {
    return nlohmann::json{{"kind", "proportional"}, {"d", 2}, {"factors", factors}};
  };
  const nlohmann::json heterogeneous = {{"kind", "heterogeneous"},
                                        {"factors", {1.6, 1.0, 1.0, 1.6}}};
  CHECK(loads_of(estimated, heterogeneous) ==
        loads_of(written({1.6, 1.0, 1.0, 1.6}), heterogeneous));
  CHECK(loads_of(estimated, heterogeneous) != std::vector<double>(4, 2.0));
  // Means 2, 1, 1.5, 3 (workers 0..3 over three iterations): factors 2, 1, 1.5, 3.
  (void)dir.write("times.csv",
                  "iteration,worker,seconds\n1,0,1\n1,1,1\n1,2,1\n1,3,3\n2,0,3\n2,1,0.5\n2,2,2\n"
                  "2,3,3\n3,0,2\n3,1,1.5\n3,2,1.5\n3,3,3\n");
  const nlohmann::json trace = {{"kind", "trace"}, {"path", "times.csv"}};
  CHECK(loads_of(estimated, trace) == loads_of(written({2.0, 1.0, 1.5, 3.0}), trace));
  CHECK(loads_of(estimated, trace) != loads_of(written({1.0, 1.0, 1.0, 1.0}), trace));

  auto c = delay_only_config({{"kind", "shifted_exponential"}});
  c["code"] = estimated;
  CHECK(testing::plan_error(c, dir.path()) ==
        "cfg.json:/code/factors: the delay 'shifted_exponential' has no per-worker factors; got "
        "\"delay\"; expected \"delay\" with a heterogeneous, heterogeneous_markov or trace delay, "
        "or an array of one slowdown factor per worker");
  c["code"]["factors"] = "fast";
  CHECK(testing::plan_error(c, dir.path()) ==
        "cfg.json:/code/factors: unknown value; got \"fast\"; expected \"delay\", or an array of "
        "4 numbers > 0");
  c = delay_only_config({{"kind", "trace"}, {"path", "missing.csv"}});
  c["code"] = estimated;
  CHECK(testing::plan_error(c, dir.path())
            .starts_with("cfg.json:/code/factors: the delay's trace cannot be read ("));
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
    } else if (row.name == "adaptive_deadline") {
      c["stopping"]["window"] = 3;
      c["stopping"]["mads"] = 1.0;
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
      if (key.name == "factors") {
        delay[key.name] = {1.0, 1.0, 1.0, 1.0};
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
  for (const auto& row : code_factories()) {
    CHECK_FALSE(row.description.empty());
  }
  for (const auto& row : stopping_factories()) {
    CHECK_FALSE(row.description.empty());
  }
}

}  // namespace stragglersim::experiments

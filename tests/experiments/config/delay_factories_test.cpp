// The delay table's factories: each model's keys reach the fields of its Options, checked
// against the moments of the class comments' formulas (the errors: factories_test.cpp).
#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/factories.h"
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

TEST_CASE("config: fixed keys reach times and scale", "[experiments][config]") {
  const auto list = delay_from(R"({"kind": "fixed", "times": [0.5, 4.0], "scale": 3})", {1.0, 2.0});
  CHECK(list->mean(0) == 1.5);
  CHECK(list->mean(1) == 24.0);
  CHECK(list->variance(1) == 0.0);
  const auto root = delay_from(R"({"kind": "fixed", "times": "sqrt"})", {1.0, 1.0, 1.0, 1.0});
  CHECK(root->mean(3) == 2.0);
  const auto linear =
      delay_from(R"({"kind": "fixed", "times": "linear", "scale": 0.5})", {1.0, 1.0});
  CHECK(linear->mean(1) == 1.0);
}

TEST_CASE("config: universal keys reach the chain and the speeds", "[experiments][config]") {
  // One state of power 2, speeds 1/sqrt(i): worker i takes load·sqrt(i)/2 at any start.
  auto d = delay_from(R"({"kind": "universal", "markov": {"powers": [2]}, "speeds": "sqrt"})",
                      {1.0, 1.0, 1.0, 1.0});
  REQUIRE(d->time_varying());
  RandomEngine rng = make_engine(1, Stream::kDelays);
  CHECK(d->duration_at(3, 7.0, rng) == Approx(1.0));
  d = delay_from(R"({"kind": "universal", "markov": {"powers": [1], "switch_rate": 3},
                     "speeds": [4, 0.5]})",
                 {1.0, 1.0});
  CHECK(d->duration_at(0, 0.0, rng) == Approx(0.25));
  CHECK(d->duration_at(1, 0.0, rng) == Approx(2.0));
}

namespace {

/// A small synchronous run with data: 4 workers, uncoded, the first 2, 5 GD steps.
nlohmann::json delay_factories_run_config(const nlohmann::json& delay) {
  auto c = nlohmann::json::parse(R"({
    "name": "delays", "seed": 5, "workers": 4,
    "data": {"source": "synthetic", "generator": "linear_regression", "rows": 80,
             "features": 10, "test_fraction": 0, "condition": 1},
    "loss": {"kind": "least_squares", "l2": 0.01},
    "code": {"kind": "uncoded"},
    "stopping": {"rule": "first_r", "r": 2},
    "optimizer": {"kind": "gd", "step": 0.1, "iterations": 5}})");
  c["delay"] = delay;
  return c;
}

/// The summary of `stragglersim run` on `delay`'s config, or its stderr when it fails.
nlohmann::json delay_factories_run(const testing::TempDir& dir, const nlohmann::json& delay) {
  const auto config = dir.write("run.json", delay_factories_run_config(delay).dump());
  const auto out = dir.path() / "out";
  const auto result = testing::run_stragglersim(
      fmt::format("run -q --force '{}' -o '{}'", config, out.string()), dir.path());
  INFO(result.err);
  REQUIRE(result.status == 0);
  return nlohmann::json::parse(testing::slurp(out / "summary.json"));
}

}  // namespace

TEST_CASE("config: synchronous runs with fixed and universal delays", "[experiments][config]") {
  const testing::TempDir dir("delay_factories");
  // Fixed: the second fastest of sqrt(i) (i = 1..4) each iteration, 5 times.
  nlohmann::json s = delay_factories_run(dir, {{"kind", "fixed"}, {"times", "sqrt"}});
  CHECK(s.at("total_time").get<double>() == Approx(5.0 * std::sqrt(2.0)));
  // Universal on a power file (period 5): worker 0 at power 1, worker 1 at 1 on [0, 2), 0 on
  // [2, 3), 2 on [3, 5), workers 2 and 3 at 1/4 (4 s each). Starts 0, 1, 2, 3.5, 4.5: worker 1
  // takes 1, 1, 1.5 (the outage), 0.5, 0.5 (wrapping at 5 costs worker 0 nothing), worker 0
  // always 1, so the second arrival comes after 1, 1, 1.5, 1, 1.
  (void)dir.write("powers.csv",
                  "time,worker,power\n0,0,1\n0,1,1\n2,1,0\n3,1,2\n0,2,0.25\n0,3,0.25\n5,0,1\n");
  s = delay_factories_run(dir, {{"kind", "universal"}, {"powers", {{"file", "powers.csv"}}}});
  CHECK(s.at("total_time").get<double>() == Approx(5.5));
  // Universal on a Markov chain: same seed, same bytes.
  const nlohmann::json chain = {{"kind", "universal"},
                                {"markov", {{"powers", {1.0, 0.2, 0.0}}, {"switch_rate", 0.5}}}};
  const double first = delay_factories_run(dir, chain).at("total_time").get<double>();
  CHECK(first > 0.0);
  CHECK(delay_factories_run(dir, chain).at("total_time").get<double>() == first);
}

}  // namespace stragglersim::experiments

// The delay table's factories: each model's keys reach the fields of its Options, checked
// against the moments of the class comments' formulas (the errors: factories_test.cpp).
#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/factories.h"

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

}  // namespace stragglersim::experiments

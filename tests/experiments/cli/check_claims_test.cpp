// What the `check` rows share (experiments/cli/check_claims.cpp): the Welford mean and its
// standard error against two-pass formulas, the two-sided 4-s.e. test at its edge, the codes and
// the fast-path time of one worker against its closed form, and the least-squares config.

#include "experiments/cli/check_claims.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "experiments/config/run_plan.h"

namespace stragglersim::experiments::check {

TEST_CASE("check claims: the running mean and standard error equal the two-pass ones",
          "[experiments][check]") {
  const std::vector<double> x = {3.5, -1.0, 2.25, 8.0, 0.5, 4.0};
  Mean m;
  CHECK(m.se() == 0.0);
  for (const double v : x) {
    m.add(v);
  }
  double sum = 0.0;
  for (const double v : x) {
    sum += v;
  }
  const double mean = sum / 6.0;
  double squares = 0.0;
  for (const double v : x) {
    squares += (v - mean) * (v - mean);
  }
  CHECK(m.mean == Approx(mean).epsilon(1e-15));
  CHECK(m.se() == Approx(std::sqrt(squares / 5.0 / 6.0)).epsilon(1e-14));
}

TEST_CASE("check claims: a two-sided row passes within 4 standard errors and fails beyond",
          "[experiments][check]") {
  const CheckRow inside = two_sided("inside", 1.0, 1.75, 0.25);
  CHECK(inside.claim == "inside");
  CHECK(inside.theory == 1.0);
  CHECK(inside.simulation == 1.75);
  CHECK(inside.tolerance == 1.0);
  CHECK(inside.pass);
  CHECK(two_sided("edge", 1.0, 0.0, 0.25).pass);
  CHECK_FALSE(two_sided("beyond", 1.0, 2.0625, 0.25).pass);
  CHECK_FALSE(two_sided("no spread", 1.0, 1.5, 0.0).pass);
}

TEST_CASE("check claims: uncoded for d = 1, FRC groups of d otherwise", "[experiments][check]") {
  const auto uncoded = frc_or_uncoded(6, 1);
  CHECK(uncoded->name() == "uncoded");
  const auto frc = frc_or_uncoded(6, 3);
  CHECK(frc->name() == "frc");
  CHECK(frc->workers() == 6);
}

TEST_CASE("check claims: the fast-path time of one worker is shift + 1/rate",
          "[experiments][check]") {
  // One uncoded worker of load 1: T = 1 + Exp(1) under either tail scaling, E[T] = 2.
  const auto code = frc_or_uncoded(1, 1);
  for (const auto tail : {sim::TailScaling::kLoad, sim::TailScaling::kNone}) {
    const Mean m = simulate_time(code, std::make_shared<sim::AllStopping>(1), tail, 20000, 5);
    CHECK(m.n == 20000.0);
    CHECK(std::abs(m.mean - 2.0) <= 4.0 * m.se());
    // Exp(1) has standard deviation 1: the s.e. of 20000 draws is 1/sqrt(20000).
    CHECK(m.se() == Approx(1.0 / std::sqrt(20000.0)).epsilon(0.05));
  }
}

TEST_CASE("check claims: the convergence config plans as the least-squares run it names",
          "[experiments][check]") {
  // The callers add the scheme.
  nlohmann::json config = convergence_config(200, 5, 0.5, 4, 12);
  config["code"] = {{"kind", "frc"}, {"d", 2}};
  config["stopping"] = {{"rule", "first_r"}, {"r", 2}};
  const RunPlan plan = plan_run(config, "check", ".");
  CHECK(plan.workers == 4);
  CHECK(plan.iterations == 12);
  CHECK(plan.objective->rows() == 200);
  CHECK(plan.resolved["loss"]["kind"] == "least_squares");
  CHECK(plan.resolved["loss"]["l2"] == 0.5);
}

}  // namespace stragglersim::experiments::check

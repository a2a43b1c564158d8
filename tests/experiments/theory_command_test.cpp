// The theory and check subcommands end to end, and the scheme mapping behind them.

#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/config/predictions.h"
#include "experiments/config/run_plan.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using testing::slurp;

fs::path scratch(const std::string& name) { return testing::scratch_dir("theory_test", name); }

/// Runs stragglersim with stdout and stderr both written to `out`.
int run(const std::string& args, const fs::path& out) {
  return testing::exit_status(std::system(
      fmt::format("{} {} > '{}' 2>&1", STRAGGLERSIM_BINARY, args, out.string()).c_str()));
}

nlohmann::json delay_only(const nlohmann::json& code, const nlohmann::json& stopping) {
  return {{"workers", 64},
          {"data", nullptr},
          {"code", code},
          {"stopping", stopping},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"iterations", 10}}}};
}

}  // namespace

TEST_CASE("experiments: theory --json gives the design's reference numbers",
          "[experiments][theory]") {
  const auto dir = scratch("json");
  const auto cfg = dir / "eh.json";
  std::ofstream(cfg)
      << delay_only({{"kind", "frc"}, {"d", 2}}, {{"rule", "first_r"}, {"r", 32}}).dump();
  REQUIRE(run(fmt::format("theory '{}' --json", cfg.string()), dir / "out.json") == 0);
  const auto j = nlohmann::json::parse(slurp(dir / "out.json"));
  CHECK(j["expected_iteration_time"].get<double>() == Approx(3.3708).margin(5e-5));
  CHECK(j["group_erasure_probability"].get<double>() == Approx(0.246032).margin(1e-6));
  CHECK(j["iteration_time_sd"].get<double>() > 0.0);
  CHECK(j["method"] == "closed form");
  // The speedup table: uncoded 5.7439 and FRC 6.0585 at n = 64.
  bool found = false;
  for (const auto& row : j["speedup_vs_n"]) {
    if (row["workers"] == 64) {
      found = true;
      CHECK(row["uncoded"].get<double>() == Approx(5.7439).margin(5e-5));
      CHECK(row["frc"].get<double>() == Approx(6.0585).margin(5e-5));
    }
  }
  CHECK(found);
}

TEST_CASE("experiments: describe_scheme maps codes and rules for the theory",
          "[experiments][theory]") {
  const RunPlan crc = plan_run(
      delay_only({{"kind", "crc"}, {"s", 1}}, {{"rule", "first_r"}, {"r", 63}}), "c.json", ".");
  std::string why;
  const auto s = describe_scheme(crc, &why);
  REQUIRE(s);
  CHECK(s->code == sim::CodeFamily::kCyclic);
  CHECK(s->d == 2);
  CHECK(s->r == 63);
  // CRC first n − s, Model A: 2(1 + H_64 − H_1) = 9.4878 (DESIGN.md §2).
  CHECK(predictions(crc)["expected_iteration_time"].get<double>() == Approx(9.4878).margin(5e-5));
  const RunPlan bgc = plan_run(
      delay_only({{"kind", "bgc"}, {"d", 2.0}}, {{"rule", "first_r"}, {"r", 32}}), "c.json", ".");
  CHECK_FALSE(describe_scheme(bgc, &why));
  CHECK(why == "no timing model for code 'bgc' (random or non-uniform supports)");
}

TEST_CASE("experiments: the PL bound holds for a least-squares run with data",
          "[experiments][theory]") {
  nlohmann::json c = {{"seed", 3},
                      {"workers", 8},
                      {"data",
                       {{"source", "synthetic"},
                        {"generator", "linear_regression"},
                        {"rows", 400},
                        {"features", 6}}},
                      {"loss", {{"kind", "least_squares"}}},
                      {"code", {{"kind", "frc"}, {"d", 2}}},
                      {"stopping", {{"rule", "first_r"}, {"r", 4}}},
                      {"delay", {{"kind", "shifted_exponential"}}},
                      {"optimizer", {{"step", "auto"}, {"iterations", 40}}},
                      {"target_loss", 0.2}};
  const RunPlan plan = plan_run(c, "c.json", ".");
  const auto p = predictions(plan);
  REQUIRE(p.contains("bound"));
  const auto& bound = p["bound"];
  CHECK(bound.size() == 41);
  // f* is the least-squares optimum: the gradient there vanishes and f* < f(0).
  CHECK(p["f_star"].get<double>() < bound[0].get<double>());
  CHECK(p["noise_floor"].get<double>() > 0.0);
  CHECK(p["contraction"].get<double>() < 1.0);
  CHECK(bound[40].get<double>() < bound[0].get<double>());
}

TEST_CASE("cli: check --quick passes and writes its tables", "[experiments][cli][check]") {
  const auto dir = scratch("check");
  REQUIRE(run(fmt::format("check --quick --out '{}'", (dir / "out").string()), dir / "log.txt") ==
          0);
  const std::string log = slurp(dir / "log.txt");
  CHECK(log.find("FAIL") == std::string::npos);
  CHECK(log.find("claims hold (quick)") != std::string::npos);
  CHECK(slurp(dir / "out" / "check.csv").rfind("claim,theory,simulation,tolerance,result\n", 0) ==
        0);
  CHECK(fs::exists(dir / "out" / "speedup.csv"));
  CHECK(fs::exists(dir / "out" / "bound.csv"));
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("experiments: summary.json carries the prediction beside the measurement",
          "[experiments][theory]") {
  const auto dir = scratch("summary");
  auto c = delay_only({{"kind", "frc"}, {"d", 2}}, {{"rule", "deadline"}, {"after", 12.0}});
  c["optimizer"]["iterations"] = 20000;
  c["seed"] = 5;
  const auto cfg = dir / "deadline.json";
  std::ofstream(cfg) << c.dump();
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()),
              dir / "log.txt") == 0);
  const auto s = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  const double predicted = s["theory"]["expected_iteration_time"].get<double>();
  const double measured = s["mean_iteration_time"].get<double>();
  const double se = s["iteration_time_standard_error"].get<double>();
  CHECK(s["theory"]["method"] == "numerical");
  CHECK(std::abs(measured - predicted) < 4.0 * se);
  CHECK(se > 0.0);
  // q = p^d with p = P(T > 12) = e^{-(12 - 2)/2} for load 2 under Model A.
  CHECK(s["theory"]["group_erasure_probability"].get<double>() ==
        Approx(std::exp(-10.0)).epsilon(1e-6));
  // 32 groups × 20 000 iterations: a binomial count with mean ~29; 4 standard errors of the
  // fraction is 4·sqrt(q/(32·20000)).
  const double erased = s["group_erasure_fraction"].get<double>();
  CHECK(std::abs(erased - std::exp(-10.0)) < 4.0 * std::sqrt(std::exp(-10.0) / 640000.0));
}

}  // namespace stragglersim::experiments

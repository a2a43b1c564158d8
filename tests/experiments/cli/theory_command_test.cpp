// The theory and check subcommands end to end, and the scheme mapping behind them.

#include <fmt/format.h>
#include <sys/wait.h>

#include <Eigen/Eigenvalues>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/config/run_plan.h"
#include "experiments/predict/predictions.h"
#include "models/optimum.h"
#include "sim/backends/simulated_backend.h"
#include "sim/theory/convergence_theory.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using testing::slurp;

fs::path scratch(const std::string& name) { return testing::scratch_dir("theory_test", name); }

/// Runs stragglersim with stdout and stderr both written to `out`.
int run(const std::string& args, const fs::path& out) {
  return testing::exit_status(std::system(
      fmt::format("{} {} > '{}' 2>&1", stragglersim::testing::cli_binary(), args, out.string())
          .c_str()));
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
  const auto s = sim::describe_scheme(crc.scheme, &why);
  REQUIRE(s);
  CHECK(s->code == sim::CodeFamily::kCyclic);
  CHECK(s->d == 2);
  CHECK(s->r == 63);
  // CRC first n − s, Model A: 2(1 + H_64 − H_1) = 9.4878 (docs/model.md §6).
  CHECK(predictions(crc)["expected_iteration_time"].get<double>() == Approx(9.4878).margin(5e-5));
  const RunPlan bgc = plan_run(
      delay_only({{"kind", "bgc"}, {"d", 2.0}}, {{"rule", "first_r"}, {"r", 32}}), "c.json", ".");
  CHECK_FALSE(sim::describe_scheme(bgc.scheme, &why));
  CHECK(why == "no timing model for code 'bgc' (random or non-uniform supports)");
}

namespace {

/// Seeds' runs of plain GD with the plan's scheme: per t, f(x_t) − f* and the slowest mode's
/// coordinate v_minᵀ(x_t − x*), with their mean and standard error over the seeds.
struct SeedRuns {
  std::vector<double> gap_mean, gap_se, slow_mean, slow_se;
  double slow_start = 0.0;  ///< v_minᵀ(x₀ − x*)
  double lambda_min = 0.0;  ///< of the Hessian, measured here
};

SeedRuns run_seeds(const RunPlan& plan, int seeds) {
  const models::Objective& f = *plan.objective;
  const auto p = f.dimension();
  const models::Optimum opt = models::solve_optimum(f);
  // The Hessian of least squares column by column from gradient differences (exact: ∇f is
  // affine), then its slowest eigenvector.
  Eigen::MatrixXd h(p, p);
  const Eigen::VectorXd g0 = f.gradient(Eigen::VectorXd::Zero(p));
  for (Eigen::Index j = 0; j < p; ++j) {
    h.col(j) = f.gradient(Eigen::VectorXd::Unit(p, j)) - g0;
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(0.5 * (h + h.transpose()));
  const Eigen::VectorXd v = eigen.eigenvectors().col(0);
  SeedRuns out;
  out.lambda_min = eigen.eigenvalues()(0);
  out.slow_start = v.dot(Eigen::VectorXd::Zero(p) - opt.x);
  const auto steps = static_cast<std::size_t>(plan.iterations) + 1;
  std::vector<double> gap_sum(steps), gap_sq(steps), slow_sum(steps), slow_sq(steps);
  for (int s = 0; s < seeds; ++s) {
    sim::SimulatedBackend backend(
        plan.objective,
        plan.scheme,
        std::make_unique<sim::SimulatedCluster>(plan.make_delays(),
                                                plan.scheme.rule,
                                                plan.stragglers,
                                                1000 + static_cast<unsigned>(s)));
    Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
    Eigen::MatrixXd pg;
    for (std::size_t t = 0; t < steps; ++t) {
      const double gap = f.evaluate(x, &pg) - opt.value;
      const double slow = v.dot(x - opt.x);
      gap_sum[t] += gap;
      gap_sq[t] += gap * gap;
      slow_sum[t] += slow;
      slow_sq[t] += slow * slow;
      if (t + 1 < steps) {
        x -= plan.step * backend.iterate(t + 1, x, &pg).estimate;
      }
    }
  }
  const auto m = static_cast<double>(seeds);
  for (std::size_t t = 0; t < steps; ++t) {
    const double gm = gap_sum[t] / m;
    const double sm = slow_sum[t] / m;
    out.gap_mean.push_back(gm);
    out.gap_se.push_back(std::sqrt(std::max(0.0, gap_sq[t] / m - gm * gm) / (m - 1.0)));
    out.slow_mean.push_back(sm);
    out.slow_se.push_back(std::sqrt(std::max(0.0, slow_sq[t] / m - sm * sm) / (m - 1.0)));
  }
  return out;
}

}  // namespace

TEST_CASE("experiments: the PL bound holds for a least-squares run with data",
          "[experiments][theory]") {
  // l2 = 0 and rescale none: the unscaled estimator, E[ĝ] = (1 − q)∇f. ErasureHead n = 8,
  // d = 2, r = 2, so q = C(6,2)/C(8,2) = 15/28: the erasures halve the progress per step.
  nlohmann::json c = {{"seed", 3},
                      {"workers", 8},
                      {"data",
                       {{"source", "synthetic"},
                        {"generator", "linear_regression"},
                        {"rows", 400},
                        {"features", 6}}},
                      {"loss", {{"kind", "least_squares"}, {"l2", 0.0}}},
                      {"code", {{"kind", "frc"}, {"d", 2}}},
                      {"stopping", {{"rule", "first_r"}, {"r", 2}}},
                      {"rescale", "none"},
                      {"delay", {{"kind", "shifted_exponential"}}},
                      {"optimizer", {{"step", "auto"}, {"iterations", 40}}},
                      {"target_loss", 0.2}};
  const RunPlan plan = plan_run(c, "c.json", ".");
  const auto p = predictions(plan);
  CHECK(p["group_erasure_probability"].get<double>() == Approx(15.0 / 28.0));
  // The classic PL bound of this regime (l2 = 0, rescale none, docs/convergence.md), from the
  // plan's β, μ, f* and ζ² along the exact-gradient path; `check` uses the same route.
  std::string why;
  const auto in = convergence_inputs(plan, &why);
  REQUIRE(in);
  sim::PlBoundParameters b;
  b.smoothness = in->smoothness;
  b.pl_constant = in->pl_constant;
  b.step = plan.step;
  b.zeta_squared = in->zeta_squared;
  b.initial_gap = in->initial_gap;
  b.q = p["group_erasure_probability"].get<double>();
  b.q2 = p["q2"].get<double>();
  const std::vector<double> bound = sim::pl_bound(b, 40);
  REQUIRE(bound.size() == 41);
  CHECK(sim::pl_noise_floor(b) > 0.0);
  const double rho = sim::pl_contraction(b);
  CHECK(rho < 1.0);

  const SeedRuns runs = run_seeds(plan, 400);
  INFO("lambda_min " << runs.lambda_min << ", mu " << in->pl_constant);
  CHECK(in->pl_constant == Approx(runs.lambda_min).epsilon(1e-6));
  // The bound against the runs: mean f(x_t) − f* over 400 seeds ≤ bound(t) + 4 s.e. at every t.
  for (std::size_t t = 0; t < bound.size(); ++t) {
    INFO("t = " << t << ": mean gap " << runs.gap_mean[t] << " +- " << runs.gap_se[t] << ", bound "
                << bound[t]);
    CHECK(runs.gap_mean[t] <= bound[t] + 4.0 * runs.gap_se[t]);
  }
  // The contraction against the runs: E[x_{t+1}] − x* = (I − γ(1 − q)H)(E[x_t] − x*) exactly
  // (∇f is affine), so along H's slowest eigenvector (eigenvalue μ) the mean iterate shrinks by
  // 1 − μγ(1 − q) = ρ per step. Without the (1 − q) it would be 1 − μγ: far outside 4 s.e. in
  // the first steps (later the mean is within the noise of x*).
  for (const std::size_t t : {1U, 2U, 4U, 8U}) {
    const double predicted = std::pow(rho, static_cast<double>(t)) * runs.slow_start;
    INFO("t = " << t << ": mean slow coordinate " << runs.slow_mean[t] << " +- " << runs.slow_se[t]
                << ", predicted " << predicted);
    CHECK(std::abs(runs.slow_mean[t] - predicted) <= 4.0 * runs.slow_se[t] + 1e-12);
  }
}

TEST_CASE("cli: check --quick passes and writes its tables", "[experiments][cli][check][heavy]") {
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

namespace stragglersim::experiments {
namespace {

/// A least-squares run of 8 workers under the fixed model τ_i = √i with a time-optimal rule.
nlohmann::json time_optimal_theory_config(const nlohmann::json& stopping) {
  return {{"name", "time_optimal"},
          {"seed", 3},
          {"workers", 8},
          {"data",
           {{"source", "synthetic"},
            {"generator", "linear_regression"},
            {"rows", 400},
            {"features", 5},
            {"condition", 1.0},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "least_squares"}, {"l2", 1.0}}},
          {"code", {{"kind", "uncoded"}}},
          {"delay", {{"kind", "fixed"}, {"times", "sqrt"}}},
          {"stopping", stopping},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 40}}}};
}

}  // namespace

TEST_CASE("experiments: theory gives a time-optimal rule's seconds per update",
          "[experiments][theory]") {
  const auto dir = scratch("time_optimal");
  // Rennala with stop_stale, B = 8 under τ_i = √i: Σ_i ⌊t/√i⌋ reaches 8 at t = √7 (1 + 1 + 1 + 1
  // + 1 + 1 from workers 2 … 7, 2 from worker 1), exactly.
  const auto cfg = dir / "rennala.json";
  std::ofstream(cfg) << time_optimal_theory_config(
                            {{"rule", "rennala"}, {"batch", 8}, {"stop_stale", true}})
                            .dump();
  REQUIRE(run(fmt::format("theory '{}' --json", cfg.string()), dir / "out.json") == 0);
  const auto j = nlohmann::json::parse(slurp(dir / "out.json"));
  CHECK_FALSE(j.contains("iteration_time_problem"));
  CHECK(j["method"] == "time-optimal theory (exact)");
  CHECK(j["time_per_update"]["exact"] == true);
  CHECK(j["time_per_update"]["lower"].get<double>() == Approx(std::sqrt(7.0)).epsilon(1e-12));
  CHECK(j["expected_iteration_time"].get<double>() == Approx(std::sqrt(7.0)).epsilon(1e-12));
  CHECK(j["time_per_update"]["formula"] == "T*(B) = min{t : sum floor(t/tau_i) >= B}");
  REQUIRE(run(fmt::format("theory '{}'", cfg.string()), dir / "out.txt") == 0);
  const std::string text = slurp(dir / "out.txt");
  CHECK(text.find("rule rennala\n") != std::string::npos);
  CHECK(text.find(fmt::format("{:<34} 2.64575 (exact)\n", "seconds per update")) !=
        std::string::npos);
  CHECK(text.find("no timing model") == std::string::npos);

  // Without stop_stale: bounds, no expected iteration time, still exit 0.
  const auto bounds_cfg = dir / "rennala_bounds.json";
  std::ofstream(bounds_cfg)
      << time_optimal_theory_config({{"rule", "rennala"}, {"batch", 8}}).dump();
  REQUIRE(run(fmt::format("theory '{}'", bounds_cfg.string()), dir / "bounds.txt") == 0);
  CHECK(slurp(dir / "bounds.txt")
            .find(fmt::format("{:<34} between 2.64575 and ", "seconds per update")) !=
        std::string::npos);

  // Ringmaster (R = ∞) and Rescaled ASGD: 1/Σ 1/√i; the summary's block is the same prediction.
  double rate = 0.0;
  for (int i = 1; i <= 8; ++i) {
    rate += 1.0 / std::sqrt(static_cast<double>(i));
  }
  for (const char* rule : {"ringmaster", "rescaled_async"}) {
    const RunPlan plan =
        plan_run(time_optimal_theory_config({{"rule", rule}}), "cfg.json", dir.string());
    const auto p = predictions(plan, /*convergence=*/false);
    CHECK(p["expected_iteration_time"].get<double>() == Approx(1.0 / rate).epsilon(1e-12));
  }
  // The disciplines of Dutta et al. keep their message.
  const RunPlan k_async = plan_run(
      time_optimal_theory_config({{"rule", "k_async"}, {"k", 2}}), "cfg.json", dir.string());
  CHECK(predictions(k_async, false)["iteration_time_problem"] ==
        "no timing model for rule 'k_async'");
  // Malenia under shifted exponentials: no formula, said so.
  auto malenia = time_optimal_theory_config({{"rule", "malenia"}, {"batch", 8}});
  malenia["delay"] = {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}};
  CHECK(predictions(plan_run(malenia, "cfg.json", dir.string()), false)["iteration_time_problem"]
            .get<std::string>()
            .starts_with("no timing model for rule 'malenia' under the 'shifted_exponential'"));
}

TEST_CASE("experiments: a rennala run's summary carries its exact time per update",
          "[experiments][theory]") {
  const auto dir = scratch("time_optimal_summary");
  const auto cfg = dir / "rennala.json";
  std::ofstream(cfg) << time_optimal_theory_config(
                            {{"rule", "rennala"}, {"batch", 4}, {"stop_stale", true}})
                            .dump();
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()),
              dir / "log.txt") == 0);
  const auto s = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  // T*(4) = 2: workers 1 (twice), 2, 3 and 4 by t = 2; every update is a fresh start.
  CHECK(s["theory"]["expected_iteration_time"].get<double>() == Approx(2.0).epsilon(1e-12));
  CHECK(s["theory"]["time_per_update"]["exact"] == true);
  CHECK(s["mean_iteration_time"].get<double>() == Approx(2.0).epsilon(1e-9));
}

}  // namespace stragglersim::experiments

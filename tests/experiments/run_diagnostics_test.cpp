// summary.json fields beyond the totals (f*, suboptimality levels, gradient error, group coverage,
// wall clock) and the warnings for degenerate runs, each checked against an independent
// computation from trace.csv, the data, or a construction whose answer is known exactly.
#include "experiments/run_diagnostics.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::slurp;
namespace ex = stragglersim::experiments;

fs::path diagnostics_scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("run_diagnostics_test", name);
}

nlohmann::json least_squares_config() {
  auto c = stragglersim::testing::small_least_squares_config();
  c["name"] = "diag";
  return c;
}

/// 4 uncoded workers (smallest delay 1 s) behind a 0.5 s deadline: nobody is ever heard.
nlohmann::json unmeetable_deadline_config() {
  auto c = least_squares_config();
  c["workers"] = 4;
  c["code"] = {{"kind", "uncoded"}};
  c["stopping"] = {{"rule", "deadline"}, {"after", 0.5}};
  return c;
}

/// trace.csv as columns of doubles (empty cells are NaN).
std::map<std::string, std::vector<double>> read_trace(const fs::path& path) {
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) {
    names.push_back(name);
  }
  std::map<std::string, std::vector<double>> columns;
  while (std::getline(in, line)) {
    std::stringstream row(line + ",");
    std::string cell;
    for (const auto& name : names) {
      std::getline(row, cell, ',');
      columns[name].push_back(cell.empty() ? std::nan("") : std::stod(cell));
    }
  }
  return columns;
}

struct Finished {
  ex::RunOutcome outcome;
  std::map<std::string, std::vector<double>> trace;
};

Finished run_config(const nlohmann::json& config, const fs::path& dir) {
  const ex::RunPlan plan = ex::plan_run(config, "cfg.json", dir);
  Finished f;
  f.outcome = ex::execute_run(plan, dir / "out");
  f.trace = read_trace(dir / "out" / "trace.csv");
  return f;
}

std::vector<std::string> warning_codes(const nlohmann::json& summary) {
  std::vector<std::string> codes;
  for (const auto& w : summary["warnings"]) {
    codes.push_back(w["code"]);
  }
  return codes;
}

std::string warning_message(const nlohmann::json& summary, const std::string& code) {
  for (const auto& w : summary["warnings"]) {
    if (w["code"] == code) {
      return w["message"];
    }
  }
  return "";
}

}  // namespace

TEST_CASE("run diagnostics: f* from the normal equations and suboptimality levels from the trace",
          "[experiments][diagnostics]") {
  const auto dir = diagnostics_scratch("suboptimality");
  auto config = least_squares_config();
  config["code"] = {{"kind", "uncoded"}};
  config["stopping"] = {{"rule", "all"}};
  const ex::RunPlan plan = ex::plan_run(config, "cfg.json", dir);
  const auto [outcome, trace] = run_config(config, dir);
  const nlohmann::json& s = outcome.summary;
  REQUIRE(s["status"] == "ok");

  // f* independently: the normal equations (AᵀA/m + λ₂I)x = Aᵀb/m by Cholesky.
  const Eigen::MatrixXd a =
      std::visit([](const auto& m) { return Eigen::MatrixXd(m); }, plan.objective->data().features);
  const Eigen::VectorXd& b = plan.objective->data().labels;
  const double m = static_cast<double>(a.rows());
  Eigen::MatrixXd gram = a.transpose() * a / m;
  gram.diagonal().array() += 0.01;
  const Eigen::VectorXd x_star = gram.llt().solve(a.transpose() * b / m);
  const double f_star = plan.objective->value(x_star);
  CHECK(s["f_star"].get<double>() == Approx(f_star).epsilon(1e-12));
  CHECK(s["f_star_method"] == "normal equations (COD)");
  CHECK(s["f_star_gradient_norm"].get<double>() < 1e-10);

  const auto& loss = trace.at("loss");
  const double fs = s["f_star"].get<double>();
  CHECK(s["final_suboptimality"].get<double>() == loss.back() - fs);
  // The first row whose (f − f*)/(f(x₀) − f*) is at most each level.
  for (std::size_t l = 0; l < ex::kSuboptimalityLevels.size(); ++l) {
    const char* key = ex::kSuboptimalityKeys[l];
    nlohmann::json time;
    nlohmann::json iteration;
    for (std::size_t t = 0; t < loss.size(); ++t) {
      if (loss[t] - fs <= ex::kSuboptimalityLevels[l] * (loss[0] - fs)) {
        time = trace.at("time")[t];
        iteration = t;
        break;
      }
    }
    INFO(key);
    CHECK(s["time_to_relative_suboptimality"][key] == time);
    CHECK(s["iterations_to_relative_suboptimality"][key] == iteration);
  }
  // Exact gradients converge: every level is reached, and within the 30 iterations.
  CHECK(s["iterations_to_relative_suboptimality"]["1e-3"].is_number());

  double sum = 0.0;
  for (std::size_t t = 1; t < loss.size(); ++t) {
    sum += trace.at("gradient_error")[t];
  }
  CHECK(s["mean_gradient_error"].get<double>() ==
        Approx(sum / static_cast<double>(loss.size() - 1)).epsilon(1e-12));
  CHECK(s["wall_clock_seconds"].get<double>() >= 0.0);
  // Only the run command times the plan it makes.
  CHECK(s["plan_seconds"].is_null());
  CHECK(s["data_bytes_read"].is_null());
  // Exact GD with step 1/β never raises the loss, and every worker is heard.
  CHECK(s["warnings"] == nlohmann::json::array());
  // Groups of one worker, all heard in every iteration.
  CHECK(s["group_coverage"] == std::vector<double>(8, 1.0));
  CHECK(s["group_longest_outage"] == std::vector<int>(8, 0));
}

TEST_CASE("run diagnostics: coverage of FRC groups matches the partitions covered in the trace",
          "[experiments][diagnostics]") {
  const auto dir = diagnostics_scratch("coverage");
  const auto [outcome, trace] = run_config(least_squares_config(), dir);
  const nlohmann::json& s = outcome.summary;
  REQUIRE(s["group_coverage"].size() == 4);
  // FRC's decode covers the d = 2 partitions of each group with a heard worker: the total
  // coverage over groups and iterations is the trace's covered partitions / 2.
  double covered = 0.0;
  for (std::size_t t = 1; t < trace.at("partitions_covered").size(); ++t) {
    covered += trace.at("partitions_covered")[t] / 2.0;
  }
  double from_summary = 0.0;
  for (std::size_t g = 0; g < 4; ++g) {
    const double c = s["group_coverage"][g];
    from_summary += c * 30.0;
    // An outage is at most the uncovered iterations, and at least one when any exist.
    const auto outage = s["group_longest_outage"][g].get<double>();
    CHECK(outage <= std::round((1.0 - c) * 30.0));
    CHECK((c < 1.0) == (outage >= 1.0));
  }
  CHECK(from_summary == Approx(covered).epsilon(1e-12));
  // Absent for a code without the groups layout.
  auto cyclic = least_squares_config();
  cyclic["code"] = {{"kind", "crc"}, {"s", 1}};
  cyclic["stopping"] = {{"rule", "first_r"}, {"r", 7}};
  const auto c = run_config(cyclic, diagnostics_scratch("cyclic"));
  CHECK_FALSE(c.outcome.summary.contains("group_coverage"));
}

TEST_CASE("run diagnostics: a slow group behind a deadline is erased in every iteration",
          "[experiments][diagnostics]") {
  // Workers 4 and 5 (FRC group 2) are 100 times slower: their smallest delay 200 s is past the
  // 50 s deadline, while the others miss it with probability e^-24 per draw.
  auto config = least_squares_config();
  config["delay"] = {{"kind", "heterogeneous"}, {"factors", {1, 1, 1, 1, 100, 100, 1, 1}}};
  config["stopping"] = {{"rule", "deadline"}, {"after", 50.0}};
  const auto [outcome, trace] = run_config(config, diagnostics_scratch("slow_group"));
  const nlohmann::json& s = outcome.summary;
  CHECK(s["group_coverage"] == std::vector<double>{1.0, 1.0, 0.0, 1.0});
  CHECK(s["group_longest_outage"] == std::vector<int>{0, 0, 30, 0});
  CHECK(warning_message(s, "group_mostly_erased") ==
        "1 of 4 groups were erased in more than half of the 30 iterations: group 2 (workers 4, 5) "
        "covered in 0");
}

TEST_CASE("run diagnostics: a deadline below every worker's minimum delay warns twice",
          "[experiments][diagnostics]") {
  const auto dir = diagnostics_scratch("deadline");
  auto config = unmeetable_deadline_config();
  const auto [outcome, trace] = run_config(config, dir);
  const nlohmann::json& s = outcome.summary;
  CHECK(s["status"] == "ok");
  CHECK(warning_codes(s) == std::vector<std::string>{"deadline_below_minimum_delay",
                                                     "no_worker_heard",
                                                     "group_mostly_erased"});
  CHECK(warning_message(s, "deadline_below_minimum_delay") ==
        "the deadline 0.5 s is below the smallest possible delay of every worker (1 s): no worker "
        "can ever be heard");
  CHECK(warning_message(s, "no_worker_heard") ==
        "no worker was heard in 30 of 30 iterations (first: iteration 1); those steps used no "
        "data gradient");
  CHECK(warning_message(s, "group_mostly_erased") ==
        "4 of 4 groups were erased in more than half of the 30 iterations: group 0 (workers 0) "
        "covered in 0; group 1 (workers 1) covered in 0; group 2 (workers 2) covered in 0; group 3 "
        "(workers 3) covered in 0");

  // The same cluster without data: the delay-only path warns the same way.
  config["data"] = nullptr;
  config.erase("loss");
  config["optimizer"] = {{"iterations", 12}};
  const auto d = run_config(config, diagnostics_scratch("deadline_delay_only"));
  CHECK(warning_codes(d.outcome.summary) ==
        std::vector<std::string>{"deadline_below_minimum_delay", "no_worker_heard"});
  CHECK(warning_message(d.outcome.summary, "no_worker_heard") ==
        "no worker was heard in 12 of 12 iterations (first: iteration 1); those steps used no "
        "data gradient");
  // A deadline above the minimum delay: no warning.
  config["stopping"]["after"] = 1.5;
  const auto fine = run_config(config, diagnostics_scratch("deadline_fine"));
  CHECK(fine.outcome.summary["warnings"].empty() ==
        (*std::min_element(fine.trace.at("workers_heard").begin() + 1,
                           fine.trace.at("workers_heard").end()) > 0));
}

TEST_CASE("run diagnostics: a step past 2/beta raises the loss and says where",
          "[experiments][diagnostics]") {
  auto config = least_squares_config();
  config["code"] = {{"kind", "uncoded"}};
  config["stopping"] = {{"rule", "all"}};
  config["optimizer"]["iterations"] = 6;
  const ex::RunPlan plan = ex::plan_run(config, "cfg.json", diagnostics_scratch("step"));
  config["optimizer"]["step"] = 2.5 / plan.smoothness;
  const auto [outcome, trace] = run_config(config, diagnostics_scratch("step"));
  const auto& loss = trace.at("loss");
  std::uint64_t increases = 0;
  std::uint64_t first = 0;
  std::uint64_t at = 0;
  double largest = 0.0;
  for (std::uint64_t t = 1; t < loss.size(); ++t) {
    if (loss[t] > loss[t - 1]) {
      first = increases++ == 0 ? t : first;
      if (loss[t] - loss[t - 1] > largest) {
        largest = loss[t] - loss[t - 1];
        at = t;
      }
    }
  }
  // The top eigen-direction grows by |1 − 2.5| = 1.5 per step: the loss eventually rises.
  REQUIRE(increases > 0);
  CHECK(warning_message(outcome.summary, "loss_increase") ==
        fmt::format("the loss increased in {} of 6 iterations (first: iteration {}; largest "
                    "increase {:.6g} at iteration {})",
                    increases,
                    first,
                    largest,
                    at));
}

TEST_CASE("run diagnostics: above 4000 features f* comes from conjugate gradient, certified",
          "[experiments][diagnostics][heavy]") {
  // 5000 features (above the exact solvers' limit) and one iteration: the iterative solve is
  // affordable (docs/model.md §7) and must reach its certificate.
  const auto dir = diagnostics_scratch("iterative");
  auto config = least_squares_config();
  config["data"]["features"] = 5000;
  config["data"]["rows"] = 2000;
  config["optimizer"]["iterations"] = 1;
  config["optimizer"]["step"] = 1e-3;
  const ex::RunPlan plan = ex::plan_run(config, "cfg.json", dir);
  const auto [outcome, trace] = run_config(config, dir);
  const nlohmann::json& s = outcome.summary;
  CHECK(s["f_star_method"] == "conjugate gradient");
  const auto& f = *plan.objective;
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(f.dimension());
  CHECK(s["f_star_gradient_norm"].get<double>() <= 1e-10 * std::max(1.0, f.gradient(zero).norm()));
  // f* lies below every iterate of the run.
  for (const double loss : trace.at("loss")) {
    CHECK(s["f_star"].get<double>() < loss);
  }
  CHECK(s.contains("final_suboptimality"));
}

TEST_CASE("run diagnostics: warnings reach stderr and theory warns of a vacuous bound",
          "[experiments][diagnostics][cli]") {
  const auto dir = diagnostics_scratch("stderr");
  auto config = unmeetable_deadline_config();
  config["data"] = nullptr;
  config.erase("loss");
  config["optimizer"] = {{"iterations", 5}};
  std::ofstream(dir / "cfg.json") << config.dump();
  const auto r = stragglersim::testing::run_stragglersim(
      fmt::format("run '{}' --out '{}'", (dir / "cfg.json").string(), (dir / "out").string()), dir);
  CHECK(r.status == 0);
  CHECK(r.err ==
        "warning: deadline_below_minimum_delay: the deadline 0.5 s is below the smallest possible "
        "delay of every worker (1 s): no worker can ever be heard\n"
        "warning: no_worker_heard: no worker was heard in 5 of 5 iterations (first: iteration 1); "
        "those steps used no data gradient\n");

  // Logistic with λ₂ = 1e-4: μ is tiny and the noise floor exceeds f(x₀) − f*.
  auto logistic = least_squares_config();
  logistic["data"] = {
      {"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 400}, {"features", 5}};
  logistic["loss"] = {{"kind", "logistic"}, {"l2", 1e-4}};
  std::ofstream(dir / "logistic.json") << logistic.dump();
  const auto t = stragglersim::testing::run_stragglersim(
      fmt::format("theory '{}' --json", (dir / "logistic.json").string()), dir);
  REQUIRE(t.status == 0);
  const auto p = nlohmann::json::parse(t.out);
  REQUIRE(p["bound_vacuous"] == true);
  // No t has a bound below f(x₀) − f* (the convex route does not get there in 5 iterations).
  for (std::size_t i = 1; i < p["bound"].size(); ++i) {
    CHECK(p["bound"][i].get<double>() >= p["initial_gap"].get<double>());
  }
  const std::string message = fmt::format(
      "the convergence bound is vacuous: it is at least f(x0) - f* = {:.6g} at every iteration "
      "and its noise floor is {:.6g}, so it says nothing about this run",
      p["initial_gap"].get<double>(),
      p["noise_floor"].get<double>());
  CHECK(p["warnings"] ==
        nlohmann::json::array({{{"code", "bound_vacuous"}, {"message", message}}}));
  CHECK(t.err == "warning: bound_vacuous: " + message + "\n");
  // A bound that says something: no warning.
  auto strong = logistic;
  strong["loss"]["l2"] = 0.5;
  std::ofstream(dir / "strong.json") << strong.dump();
  const auto u = stragglersim::testing::run_stragglersim(
      fmt::format("theory '{}' --json", (dir / "strong.json").string()), dir);
  const auto q = nlohmann::json::parse(u.out);
  CHECK(q["bound_vacuous"] == false);
  CHECK(q["warnings"] == nlohmann::json::array());
  CHECK(u.err.empty());
}

// The "aggregation" block end to end: the parameter server's block changes no byte of any
// shipped example's trace, every collectives example runs and writes the collective columns,
// workers.csv on a hand-made delay table against hand-computed values, and a delay-only
// collective run's times against its stops.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "models/worker_pool.h"
#include "sim/backends/simulated_backend.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_paths.h"

namespace stragglersim::experiments {
namespace {

std::filesystem::path collective_scratch() {
  return testing::process_scratch("collective_run_test");
}

std::string collective_read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The configs of `folder` (sorted), as parsed JSON with their paths.
std::vector<std::pair<std::filesystem::path, nlohmann::json>> collective_configs(
    const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".json") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::filesystem::path, nlohmann::json>> out;
  for (const auto& path : paths) {
    out.emplace_back(path, read_json_file(path));
  }
  return out;
}

/// Runs `config` (relative paths from `base`) into `out` and returns its trace.csv bytes.
std::string collective_trace(const nlohmann::json& config,
                             const std::filesystem::path& base,
                             const std::filesystem::path& out) {
  const RunPlan plan = plan_run(config, "cfg.json", base);
  const RunOutcome outcome = execute_run(plan, out);
  CHECK(outcome.status == "ok");
  return collective_read(out / "trace.csv");
}

/// The first `iterations` estimates of `plan` on the simulated backend at x₀, on `threads`
/// threads.
std::vector<Eigen::VectorXd> collective_estimates(const RunPlan& plan,
                                                  int threads,
                                                  int iterations) {
  models::WorkerPool pool(threads);
  sim::SimulatedBackend backend(
      plan.objective, plan.scheme, plan.make_cluster(plan.seed), &pool, std::nullopt, plan.seed);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(plan.objective->dimension(), 0.1);
  std::vector<Eigen::VectorXd> out;
  for (int t = 1; t <= iterations; ++t) {
    out.push_back(backend.iterate(static_cast<std::uint64_t>(t), x, nullptr).estimate);
  }
  return out;
}

const std::filesystem::path kExamples =
    std::filesystem::path(stragglersim::testing::source_dir()) / "experiments" / "examples";

}  // namespace

TEST_CASE("collective run: a parameter_server block gives every example's trace byte for byte",
          "[experiments][aggregation][heavy]") {
  int compared = 0;
  for (auto [path, config] : collective_configs(kExamples)) {
    const bool sweep = config.contains("base") || config.contains("base_file");
    const bool simulated = !config.contains("backend") || config["backend"]["kind"] == "simulated";
    // The Fashion-MNIST examples read an installed data set that a machine may not have.
    const bool absent_data = config["data"].is_object() && config["data"].contains("dir") &&
                             !std::filesystem::exists(config["data"]["dir"].get<std::string>());
    if (sweep || !simulated || absent_data) {
      continue;
    }
    INFO(path.string());
    // A few iterations of each: the bytes of every row are what is compared.
    config["optimizer"]["iterations"] = 3;
    const auto dir = collective_scratch() / ("ps_" + path.stem().string());
    const std::string without = collective_trace(config, path.parent_path(), dir / "none");
    config["aggregation"] = {{"kind", "parameter_server"}};
    const std::string with = collective_trace(config, path.parent_path(), dir / "ps");
    CHECK(with == without);
    CHECK(with.find('\n') != std::string::npos);
    ++compared;
  }
  CHECK(compared >= 9);
}

TEST_CASE("collective run: every collectives example runs and writes the collective columns",
          "[experiments][aggregation]") {
  int ran = 0;
  for (auto [path, config] : collective_configs(kExamples / "collectives")) {
    INFO(path.string());
    REQUIRE(config.contains("aggregation"));
    config["optimizer"]["iterations"] = 5;
    const auto out = collective_scratch() / ("example_" + path.stem().string());
    const RunPlan plan = plan_run(config, path.string(), path.parent_path());
    REQUIRE(plan.collective);
    const RunOutcome outcome = execute_run(plan, out);
    CHECK(outcome.status == "ok");
    // A delay-only run (erasurehead_ring_speedup.json, docs/theory.md) writes no workers.csv.
    if (!config["data"].is_null()) {
      const std::string workers = collective_read(out / "workers.csv");
      CHECK(workers.substr(0, workers.find('\n')) ==
            "worker,heard,used,share,collective_seconds_mean,arrived_last");
    }
    CHECK(outcome.summary["config"]["aggregation"] == config["aggregation"]);
    ++ran;
  }
  CHECK(ran == 8);
}

TEST_CASE("collective run: a ring's estimate is the gradient the parameter server decodes",
          "[experiments][aggregation]") {
  const auto dir = collective_scratch();
  auto c = testing::small_logistic_config("ring-gradient");
  c["code"] = {{"kind", "uncoded"}};
  c["stopping"] = {{"rule", "all"}};
  c["aggregation"] = {{"kind", "ring"}, {"latency", 0.01}};
  const RunPlan all = plan_run(c, "cfg.json", dir);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(all.objective->dimension(), 0.1);
  // The full gradient Σ_j ∇F_j(x), and the ranks' contributions reduced by the schedule here.
  Eigen::MatrixXd buffers(all.objective->dimension(), all.workers);
  for (int j = 0; j < all.workers; ++j) {
    all.objective->partition_gradient(j, x, buffers.col(j));
  }
  const Eigen::VectorXd full = buffers.rowwise().sum();
  sim::collectives::execute(*all.collective->schedule, buffers);
  for (Eigen::Index i = 1; i < buffers.cols(); ++i) {
    CHECK(buffers.col(i) == buffers.col(0));
  }
  const auto one = collective_estimates(all, 1, 3);
  const auto two = collective_estimates(all, 2, 3);
  for (std::size_t t = 0; t < one.size(); ++t) {
    CHECK(one[t] == buffers.col(0));
    CHECK(two[t] == one[t]);  // the same bytes on every thread count
    CHECK((one[t] - full).norm() <= 1e-13 * full.norm());
  }

  // ErasureHead over a ring (frc d = 2, the first 3 of 6): the parameter server's decode within
  // rounding, only the order of the sum differs.
  auto eh = testing::small_logistic_config("eh-ring");
  const RunPlan server = plan_run(eh, "cfg.json", dir);
  eh["aggregation"] = {{"kind", "ring"}};
  const RunPlan ring = plan_run(eh, "cfg.json", dir);
  const auto decoded = collective_estimates(server, 1, 5);
  const auto reduced = collective_estimates(ring, 2, 5);
  for (std::size_t t = 0; t < decoded.size(); ++t) {
    CHECK((reduced[t] - decoded[t]).norm() <= 1e-13 * decoded[t].norm());
  }
}

TEST_CASE("collective run: workers.csv counts last arrivals and mean all-reduce times by hand",
          "[experiments][aggregation]") {
  // 4 workers, uncoded, all, a ring with latency 1 and an infinite bandwidth, fixed compute
  // times; 8 features, so that each of the ring's 4 chunks holds elements (an empty chunk is not
  // sent). The ring's 6 rounds run in a chain once everyone is ready: every rank's part of a
  // round waits for its left neighbour's previous part, so with ready times r and latency 1
  // rank i completes its last round at max_j r_j + 6 exactly (each round adds one latency after
  // the last rank is ready, and the chain through the latest rank reaches every rank).
  auto c = nlohmann::json::parse(R"({
    "name": "hand", "seed": 1, "workers": 4,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 40, "features": 8},
    "loss": {"kind": "logistic", "l2": 0.0},
    "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
    "delay": {"kind": "fixed", "times": [1, 2, 4, 3], "scale": 1},
    "optimizer": {"kind": "gd", "step": 0.1, "iterations": 3},
    "aggregation": {"kind": "ring", "latency": 1}
  })");
  const auto out = collective_scratch() / "hand";
  const RunPlan plan = plan_run(c, "cfg.json", collective_scratch());
  (void)execute_run(plan, out);
  std::istringstream workers(collective_read(out / "workers.csv"));
  std::string line;
  std::getline(workers, line);
  CHECK(line == "worker,heard,used,share,collective_seconds_mean,arrived_last");
  // Worker 2 (4 s) arrives last every time; each rank completes at 4 + 6 = 10.
  const std::vector<double> times = {1, 2, 4, 3};
  for (int w = 0; w < 4; ++w) {
    std::getline(workers, line);
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) {
      cells.push_back(cell);
    }
    REQUIRE(cells.size() == 6);
    CHECK(std::stod(cells[4]) == Approx(10.0 - times[static_cast<std::size_t>(w)]));
    CHECK(cells[5] == (w == 2 ? "3" : "0"));
  }
  // The iteration time is the last completion: 10 s each.
  const std::string trace = collective_read(out / "trace.csv");
  CHECK(trace.find("\n1,10,10,") != std::string::npos);
  CHECK(trace.find("\n3,30,10,") != std::string::npos);
}

TEST_CASE("collective run: a delay-only collective run never ends before the rule's stop",
          "[experiments][aggregation]") {
  auto c = testing::four_worker_delay_only(
      {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 2.0}});
  c["optimizer"]["iterations"] = 200;
  c["stopping"] = {{"rule", "first_r"}, {"r", 2}};
  // The worker sampler, as the collective's run uses: the same delays in the same order.
  c["sampler"] = "workers";
  const std::string stops = collective_trace(c, collective_scratch(), collective_scratch() / "ps");
  c["aggregation"] = {
      {"kind", "tree"}, {"latency", 0.25}, {"bandwidth", 100}, {"message_bytes", 50}};
  const std::string tree = collective_trace(c, collective_scratch(), collective_scratch() / "tree");
  std::istringstream a(stops);
  std::istringstream b(tree);
  std::string la;
  std::string lb;
  std::getline(a, la);
  std::getline(b, lb);
  CHECK(la == lb);
  int rows = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    std::vector<double> va;
    std::vector<double> vb;
    std::stringstream sa(la);
    std::stringstream sb(lb);
    for (std::string cell; std::getline(sa, cell, ',');) {
      va.push_back(std::stod(cell));
    }
    for (std::string cell; std::getline(sb, cell, ',');) {
      vb.push_back(std::stod(cell));
    }
    // The same draws (the worker sampler both times, four i.i.d. workers): the same heard
    // counts; the all-reduce adds at least one latency after the stop.
    CHECK(vb[3] == va[3]);
    if (va[0] > 0) {
      CHECK(vb[2] >= va[2] + 0.25);
    }
    ++rows;
  }
  CHECK(rows == 201);
}

}  // namespace stragglersim::experiments

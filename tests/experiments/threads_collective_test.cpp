// The threaded backend with a collective (docs/backends.md "Collectives"): the master
// coordinates (notices, the rule's stop, the announcement of the decode weights) and the worker
// threads run the schedule among themselves. Against the simulated backend of the same plan in
// lock-step at the same query points (its SimulatedCluster is the real master's twin, and its
// estimate executes the same schedule on the same contributions): the simulated times are the
// twin's; a heard set differs from the simulated one only where the measured lateness of the
// real stop covers the simulated gap to the next arrival (the existing threads tests' criterion,
// threaded_backend_test.cpp); wherever the sets agree the estimate is the simulated backend's
// bytes; no real stop comes before the simulated one; the per-rank records are consistent.
// Then the replay: a data-parallel log measured on the threads backend (ring, 4 workers, each
// rank's compute and all-reduce seconds per step, collective.csv) replayed on the simulated
// clock with the compute times as a trace delay and the ring's cost calibrated to the smallest
// measured all-reduce time predicts each rank's mean all-reduce time within 15 %.

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

/// Real seconds: rounding of the steady clock and of duration casts, far below any jitter.
constexpr double kCollectiveClockSlack = 1e-6;
/// Real seconds per simulated second: 50 ms delay units.
constexpr double kCollectiveSpu = 0.05;

nlohmann::json collective_threads_config(int workers,
                                         const std::string& kind,
                                         const std::string& rule,
                                         int iterations) {
  const bool all = rule == "all";
  nlohmann::json c = {
      {"name", "threads-collective"},
      {"seed", 19},
      {"workers", workers},
      {"data",
       {{"source", "synthetic"},
        {"generator", "gaussian_mixture"},
        {"rows", 100 * workers},
        {"features", 12},
        {"test_fraction", 0.0}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      // all: uncoded; first_r: ErasureHead (FRC d = 2, the first half) over the collective.
      {"code",
       all ? nlohmann::json{{"kind", "uncoded"}} : nlohmann::json{{"kind", "frc"}, {"d", 2}}},
      {"stopping",
       all ? nlohmann::json{{"rule", "all"}}
           : nlohmann::json{{"rule", "first_r"}, {"r", workers / 2}}},
      {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}, {"tail", "load"}}},
      {"stragglers", "cancel"},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}},
      {"aggregation", {{"kind", kind}}},
      {"backend", {{"kind", "threads"}, {"seconds_per_unit", kCollectiveSpu}, {"timeout", 5.0}}}};
  return c;
}

std::filesystem::path collective_scratch() {
  return testing::process_scratch("threads_collective_test");
}

RunPlan collective_plan(const nlohmann::json& config) {
  return plan_run(config, "threads.json", collective_scratch());
}

bool collective_same_bytes(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

std::vector<int> collective_sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// What the lock-step saw.
struct CollectiveFidelity {
  int iterations = 0;
  int same = 0;
  int explained = 0;    // disagreements whose measured lateness covers the simulated gap
  int unexplained = 0;  // a bug, whatever the load
  int same_order = 0;   // agreeing iterations whose decode weights are also the simulated ones
  int same_bytes = 0;   // of those, the ones whose estimate is the simulated backend's bytes
  double min_slack = std::numeric_limits<double>::infinity();  // real − simulated stop (s)
  double real_end = 0.0;        // Σ broadcast to the last completion
  double simulated_stop = 0.0;  // Σ simulated iteration time × seconds_per_unit
};

/// Forwards to the threads backend; the simulated backend of the same plan follows at the same
/// query points and every iteration is compared (the file comment).
class CollectiveLockStep final : public sim::Backend {
 public:
  explicit CollectiveLockStep(const RunPlan& plan)
      : threads_(plan.make_backend(nullptr)),
        simulated_(plan.objective, plan.scheme, plan.make_cluster(plan.seed)),
        workers_(plan.workers) {}
  [[nodiscard]] std::string name() const override { return "collective lock-step"; }
  sim::BackendIteration iterate(std::uint64_t iteration,
                                const Eigen::VectorXd& query,
                                const Eigen::MatrixXd* partition_gradients) override {
    sim::BackendIteration real = threads_->iterate(iteration, query, nullptr);
    const sim::BackendIteration sim = simulated_.iterate(iteration, query, partition_gradients);
    const sim::ThreadedIterationRecord& r = threads_->real_records()->back();
    CHECK(real.iteration_time == sim.iteration_time);
    CHECK(r.simulated_heard == sim.heard);
    CHECK(real.collective_seconds == sim.collective_seconds);
    ++f.iterations;
    const double spu = kCollectiveSpu;
    // α = 0 and B = ∞: the simulated collective is free, its iteration time the rule's stop.
    const double slack = r.real_rule_stop_seconds - sim.iteration_time * spu;
    f.min_slack = std::min(f.min_slack, slack);
    f.real_end += r.real_stop_seconds;
    f.simulated_stop += sim.iteration_time * spu;
    CHECK(r.real_stop_seconds >= r.real_rule_stop_seconds);
    if (collective_sorted(real.heard) == collective_sorted(sim.heard)) {
      ++f.same;
      // The decode weights may follow the arrival order (FRC first_r: a group's first arrival
      // carries it), and a zero weight moves where the ring's fixed-order sum rounds: the same
      // weights give the same bytes; the same set with other weights may not.
      if (real.decoding.weights.size() == sim.decoding.weights.size() &&
          real.decoding.weights == sim.decoding.weights) {
        ++f.same_order;
        f.same_bytes += collective_same_bytes(real.estimate, sim.estimate) ? 1 : 0;
      }
    } else if (slack >= r.near_tie_gap * spu - kCollectiveClockSlack) {
      ++f.explained;
    } else {
      ++f.unexplained;
    }
    check_ranks(r, real.heard);
    return real;
  }
  CollectiveFidelity f;

 private:
  /// Every heard rank computed before the real stop and joined then; every rank completed the
  /// collective after its join and before the master saw the last completion.
  void check_ranks(const sim::ThreadedIterationRecord& r, const std::vector<int>& heard) const {
    REQUIRE(r.compute_seconds.size() == static_cast<std::size_t>(workers_));
    REQUIRE(r.collective_seconds.size() == static_cast<std::size_t>(workers_));
    for (const int i : heard) {
      const auto w = static_cast<std::size_t>(i);
      CHECK(std::isfinite(r.compute_seconds[w]));
      CHECK(r.compute_seconds[w] <= r.real_rule_stop_seconds + kCollectiveClockSlack);
    }
    for (std::size_t w = 0; w < r.collective_seconds.size(); ++w) {
      CHECK(r.collective_seconds[w] >= 0.0);
      if (std::isfinite(r.compute_seconds[w])) {
        CHECK(r.compute_seconds[w] + r.collective_seconds[w] <=
              r.real_stop_seconds + kCollectiveClockSlack);
      }
    }
  }

  std::unique_ptr<sim::Backend> threads_;
  sim::SimulatedBackend simulated_;
  int workers_;
};

CollectiveFidelity collective_measure(const RunPlan& plan) {
  CollectiveLockStep backend(plan);
  auto optimizer = plan.make_optimizer();
  sim::train(*plan.objective,
             nullptr,
             *optimizer,
             backend,
             sim::TrainingOptions{plan.iterations},
             [](const sim::TraceRow& /*row*/) {});
  return backend.f;
}

/// The rows of a CSV file as maps from column name to field.
std::vector<std::map<std::string, std::string>> collective_read_csv(
    const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream names(line);
  for (std::string name; std::getline(names, name, ',');) {
    header.push_back(name);
  }
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::stringstream fields(line);
    std::string field;
    for (const auto& name : header) {
      field.clear();
      std::getline(fields, field, ',');
      row[name] = field;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

TEST_CASE("threads collective: heard sets and estimates follow the simulated backend",
          "[threads][collectives][heavy]") {
  for (const int workers : {4, 8}) {
    for (const std::string kind : {"ring", "tree"}) {
      for (const std::string rule : {"all", "first_r"}) {
        INFO(workers << " workers, " << kind << ", " << rule);
        const auto plan = collective_plan(collective_threads_config(workers, kind, rule, 10));
        const CollectiveFidelity f = collective_measure(plan);
        fmt::print(
            "threads collective {} workers {} {}: heard as simulated {}/{}, explained {}, "
            "unexplained {}, same bytes {}/{} with the simulated weights, real end / simulated "
            "stop "
            "{:.4f}\n",
            workers,
            kind,
            rule,
            f.same,
            f.iterations,
            f.explained,
            f.unexplained,
            f.same_bytes,
            f.same_order,
            f.real_end / f.simulated_stop);
        CHECK(f.iterations == 10);
        CHECK(f.unexplained == 0);
        CHECK(f.same_bytes == f.same_order);
        // No worker notices before its injected delay and the rules are monotone: the real
        // stop never comes before the simulated one.
        CHECK(f.min_slack >= -kCollectiveClockSlack);
        if (rule == "all") {
          CHECK(f.same == f.iterations);
          CHECK(f.same_order == f.same);  // uncoded all: every weight 1, whatever the order
        }
      }
    }
  }
}

TEST_CASE("threads collective: collective.csv holds every rank's compute and all-reduce seconds",
          "[threads][collectives]") {
  const auto plan = collective_plan(collective_threads_config(4, "ring", "first_r", 6));
  const auto out = collective_scratch() / "first_r";
  REQUIRE(execute_run(plan, out).status == "ok");
  const auto rows = collective_read_csv(out / "collective.csv");
  REQUIRE(rows.size() == 6 * 4);
  const auto heard = collective_read_csv(out / "heard.csv");
  REQUIRE(heard.size() == 6);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const auto& row = rows[k];
    CHECK(row.at("iteration") == std::to_string(k / 4 + 1));
    CHECK(row.at("rank") == std::to_string(k % 4));
    CHECK(std::stod(row.at("collective_seconds")) >= 0.0);
    // A heard rank's compute time is measured; an abandoned rank's is empty (censored).
    std::stringstream set(heard[k / 4].at("heard"));
    bool was_heard = false;
    for (int w = 0; set >> w;) {
      was_heard = was_heard || w == static_cast<int>(k % 4);
    }
    if (was_heard) {
      CHECK(std::stod(row.at("compute_seconds")) > 0.0);
    }
  }
}

TEST_CASE("threads collective: a replayed data-parallel log predicts each rank's all-reduce time",
          "[threads][collectives][timing][heavy]") {
  // 1. The measurement: ring, 4 workers, all, injected delays of 50 ms units.
  const int n = 4;
  const int steps = 20;
  const auto measured = collective_scratch() / "measured";
  REQUIRE(execute_run(collective_plan(collective_threads_config(n, "ring", "all", steps)), measured)
              .status == "ok");
  const auto log = collective_read_csv(measured / "collective.csv");
  REQUIRE(log.size() == static_cast<std::size_t>(steps * n));
  // 2. Each rank's compute times as a trace delay (iteration,worker,seconds); the ring's cost
  // 2(n−1)(α + S/(nB)) with B = ∞ set to the smallest measured all-reduce time.
  const auto trace = collective_scratch() / "compute_trace.csv";
  std::vector<double> measured_mean(n, 0.0);
  double smallest = std::numeric_limits<double>::infinity();
  {
    std::ofstream out(trace);
    out << "iteration,worker,seconds\n";
    for (const auto& row : log) {
      out << row.at("iteration") << ',' << row.at("rank") << ',' << row.at("compute_seconds")
          << '\n';
      const double c = std::stod(row.at("collective_seconds"));
      measured_mean[static_cast<std::size_t>(std::stoi(row.at("rank")))] += c / steps;
      smallest = std::min(smallest, c);
    }
  }
  const double alpha = smallest / (2.0 * (n - 1));
  // 3. The replay on the simulated clock, one measured step per iteration.
  auto config = collective_threads_config(n, "ring", "all", steps);
  config["delay"] = {{"kind", "trace"}, {"path", trace.string()}};
  config["aggregation"] = {{"kind", "ring"}, {"latency", alpha}};
  config["backend"] = {{"kind", "simulated"}};
  const auto replayed = collective_scratch() / "replayed";
  REQUIRE(execute_run(collective_plan(config), replayed).status == "ok");
  const auto workers = collective_read_csv(replayed / "workers.csv");
  REQUIRE(workers.size() == static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double predicted =
        std::stod(workers[static_cast<std::size_t>(i)].at("collective_seconds_mean"));
    const double real = measured_mean[static_cast<std::size_t>(i)];
    fmt::print("replay rank {}: measured mean all-reduce {:.6f} s, replayed {:.6f} s ({:+.2f}%)\n",
               i,
               real,
               predicted,
               100.0 * (predicted / real - 1.0));
    CHECK(std::abs(predicted - real) <= 0.15 * real);
  }
}

}  // namespace stragglersim::experiments

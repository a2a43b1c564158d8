// The threaded backend against the simulated clock with the same seed (DESIGN.md §3).
//
// Tests tagged [threads] assert only what holds whatever the scheduling: identical simulated
// times, losses equal to 1e-9 wherever the heard sets match, the lower bound real stop ≥
// simulated stop × seconds_per_unit (a worker never delivers before its injected delay), the
// policies and the faults. They also run under ThreadSanitizer.
//
// Tests tagged [threads][timing] assert timing precision and are excluded from the sanitizer
// stage. Their tolerances, for iterations of 20-50 ms on a loaded 2-core machine:
//   - agreement of the heard sets ≥ 99% of iterations, and every disagreement a near-tie: the
//     simulated arrivals around the stop less than kJitter = 1 ms (real) apart. Two workers
//     whose targets are closer than the wake-up latency of a sleeping thread (tens of µs idle,
//     up to a scheduler slice when the cores are busy) may be heard in either order;
//   - the real iteration time (broadcast to stop) within 5% of simulated × seconds_per_unit in
//     total and in at least 95% of the iterations (a preempted master can miss one iteration).

#include "sim/threaded_backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "experiments/config/run_plan.h"
#include "sim/simulated_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::sim {
namespace {

constexpr double kJitter = 1e-3;  // real seconds: the near-tie bound of the [timing] tests

nlohmann::json threads_config(const nlohmann::json& code,
                              const nlohmann::json& stopping,
                              double seconds_per_unit,
                              int iterations,
                              const std::string& policy = "cancel") {
  nlohmann::json c = {
      {"name", "threads"},
      {"seed", 11},
      {"workers", 12},
      {"data",
       {{"source", "synthetic"},
        {"generator", "gaussian_mixture"},
        {"rows", 1200},
        {"features", 10},
        {"test_fraction", 0.0}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      {"code", code},
      {"stopping", stopping},
      {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}, {"tail", "load"}}},
      {"stragglers", policy},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}},
      {"backend", {{"kind", "threads"}, {"seconds_per_unit", seconds_per_unit}, {"timeout", 5.0}}}};
  return c;
}

const nlohmann::json kFrc2 = {{"kind", "frc"}, {"d", 2}};
const nlohmann::json kFirst6 = {{"rule", "first_r"}, {"r", 6}};
const nlohmann::json kDecodable = {{"rule", "decodable"}};
const nlohmann::json kUncoded = {{"kind", "uncoded"}};
const nlohmann::json kAll = {{"rule", "all"}};

experiments::RunPlan plan_of(const nlohmann::json& config) {
  return experiments::plan_run(config, "threads.json", std::filesystem::temp_directory_path());
}

std::unique_ptr<ThreadedBackend> make_threads(const experiments::RunPlan& plan) {
  return std::make_unique<ThreadedBackend>(
      plan.objective, plan.scheme, plan.make_delays(), plan.seed, plan.threaded);
}

/// Forwards to the threaded backend and runs the simulated backend (same seed) in lock-step at
/// the same query points, so estimates can be compared in every iteration, not only until the
/// trajectories part.
class LockStep final : public Backend {
 public:
  explicit LockStep(const experiments::RunPlan& plan)
      : threads_(make_threads(plan)),
        simulated_(plan.objective,
                   plan.scheme,
                   std::make_unique<SimulatedCluster>(
                       plan.make_delays(), plan.scheme.rule, plan.stragglers, plan.seed)) {}
  [[nodiscard]] std::string name() const override { return "lock-step"; }
  BackendIteration iterate(std::uint64_t iteration,
                           const Eigen::VectorXd& query,
                           const Eigen::MatrixXd* partition_gradients) override {
    BackendIteration real = threads_->iterate(iteration, query, nullptr);
    const BackendIteration sim = simulated_.iterate(iteration, query, partition_gradients);
    CHECK(real.iteration_time == sim.iteration_time);
    CHECK(real.wall_time == sim.wall_time);
    if (threads_->records().back().same_set) {
      const double scale = std::max(sim.estimate.norm(), 1e-300);
      max_estimate_error =
          std::max(max_estimate_error, (real.estimate - sim.estimate).norm() / scale);
    }
    return real;
  }
  [[nodiscard]] const ThreadedBackend& threads() const { return *threads_; }
  double max_estimate_error = 0.0;

 private:
  std::unique_ptr<ThreadedBackend> threads_;
  SimulatedBackend simulated_;
};

std::vector<TraceRow> train_with(const experiments::RunPlan& plan, Backend& backend) {
  auto optimizer = plan.make_optimizer();
  std::vector<TraceRow> rows;
  train(*plan.objective,
        nullptr,
        *optimizer,
        backend,
        TrainingOptions{plan.iterations},
        [&](const TraceRow& r) { rows.push_back(r); });
  return rows;
}

std::vector<TraceRow> train_simulated(const experiments::RunPlan& plan) {
  SimulatedBackend backend(plan.objective,
                           plan.scheme,
                           std::make_unique<SimulatedCluster>(
                               plan.make_delays(), plan.scheme.rule, plan.stragglers, plan.seed));
  return train_with(plan, backend);
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

/// What a fidelity run measured.
struct Fidelity {
  std::size_t iterations = 0;
  std::size_t same = 0;
  std::size_t near_ties = 0;        // iterations with a simulated gap below kJitter (real)
  std::size_t close_ties = 0;       // ... below 50 µs
  std::size_t unexplained = 0;      // disagreements that were not near-ties
  std::size_t first_mismatch = 0;   // iteration, or iterations + 1
  double max_loss_error = 0.0;      // rows before the first mismatch
  double max_estimate_error = 0.0;  // every iteration with matching sets
  double real_stop = 0.0;
  double simulated_stop = 0.0;  // × seconds_per_unit
  std::size_t within_5_percent = 0;
  double max_relative_time_error = 0.0;
  double min_slack = 0.0;  // min over iterations of real − simulated stop (seconds)
};

Fidelity measure(const experiments::RunPlan& plan) {
  LockStep backend(plan);
  const std::vector<TraceRow> rows = train_with(plan, backend);
  const std::vector<TraceRow> reference = train_simulated(plan);
  REQUIRE(rows.size() == reference.size());
  const auto& records = backend.threads().records();
  REQUIRE(records.size() == plan.iterations);
  const double spu = plan.threaded.seconds_per_unit;
  Fidelity f;
  f.iterations = records.size();
  f.first_mismatch = records.size() + 1;
  f.max_estimate_error = backend.max_estimate_error;
  f.min_slack = std::numeric_limits<double>::infinity();
  for (const auto& r : records) {
    const bool tie = r.near_tie_gap * spu < kJitter;
    f.near_ties += tie ? 1U : 0U;
    f.close_ties += r.near_tie_gap * spu < 50e-6 ? 1U : 0U;
    if (r.same_set) {
      ++f.same;
    } else {
      f.first_mismatch = std::min<std::size_t>(f.first_mismatch, r.iteration);
      f.unexplained += tie ? 0U : 1U;
      fmt::print("  disagreement at iteration {}: gap {:.1f} us, real stop - simulated {:.1f} us\n",
                 r.iteration,
                 1e6 * r.near_tie_gap * spu,
                 1e6 * (r.real_stop_seconds - r.simulated_stop * spu));
      fmt::print(
          "  real {} simulated {}\n", fmt::join(r.heard, " "), fmt::join(r.simulated_heard, " "));
    }
    const double sim = r.simulated_stop * spu;
    f.real_stop += r.real_stop_seconds;
    f.simulated_stop += sim;
    const double err = relative(r.real_stop_seconds, sim);
    f.within_5_percent += err <= 0.05 ? 1U : 0U;
    f.max_relative_time_error = std::max(f.max_relative_time_error, err);
    f.min_slack = std::min(f.min_slack, r.real_stop_seconds - sim);
  }
  for (std::size_t t = 0; t < rows.size(); ++t) {
    CHECK(rows[t].time == reference[t].time);
    if (t < f.first_mismatch) {
      f.max_loss_error = std::max(f.max_loss_error, relative(rows[t].loss, reference[t].loss));
    }
  }
  return f;
}

void report(const std::string& what, const Fidelity& f) {
  fmt::print(
      "threads fidelity {}: {} iterations, heard sets agree {}/{} ({:.2f}%), near-ties {} "
      "(< {} ms; {} < 50 us), unexplained disagreements {}, loss error {:.2e}, estimate error "
      "{:.2e}, "
      "real/simulated time {:.4f}, iterations within 5% {}/{}, max error {:.2f}%, mean "
      "overhead {:.1f} us\n",
      what,
      f.iterations,
      f.same,
      f.iterations,
      100.0 * static_cast<double>(f.same) / static_cast<double>(f.iterations),
      f.near_ties,
      kJitter * 1e3,
      f.close_ties,
      f.unexplained,
      f.max_loss_error,
      f.max_estimate_error,
      f.real_stop / f.simulated_stop,
      f.within_5_percent,
      f.iterations,
      100.0 * f.max_relative_time_error,
      1e6 * (f.real_stop - f.simulated_stop) / static_cast<double>(f.iterations));
}

}  // namespace

TEST_CASE("threads: the same seed gives the simulated times and losses where the sets match",
          "[threads]") {
  struct Case {
    std::string name;
    nlohmann::json code;
    nlohmann::json stopping;
  };
  const std::vector<Case> cases = {{"erasurehead", kFrc2, kFirst6},
                                   {"exact frc", kFrc2, kDecodable},
                                   {"crc", {{"kind", "crc"}, {"s", 2}}, kDecodable},
                                   {"uncoded", kUncoded, kAll}};
  for (const auto& c : cases) {
    INFO(c.name);
    const auto plan = plan_of(threads_config(c.code, c.stopping, 0.002, 30));
    const Fidelity f = measure(plan);
    report(c.name + " (no timing assertions)", f);
    CHECK(f.max_loss_error <= 1e-9);
    CHECK(f.max_estimate_error <= 1e-9);
    // No worker delivers before its injected delay, and the rules here are monotone, so the
    // real master can never stop before the simulated one.
    CHECK(f.min_slack >= -1e-6);
    if (c.name == "uncoded") {
      CHECK(f.same == f.iterations);
    }
  }
}

TEST_CASE("threads timing: heard sets and iteration times agree with the simulated clock",
          "[threads][timing]") {
  // E[iteration] = 3.31 units (ErasureHead) and 4.45 units (exact FRC): 43 ms and 45 ms.
  const std::vector<std::tuple<std::string, nlohmann::json, int, double>> cases = {
      {"erasurehead", kFirst6, 200, 0.013}, {"exact frc", kDecodable, 200, 0.01}};
  for (const auto& [name, stopping, iterations, spu] : cases) {
    INFO(name);
    const auto plan = plan_of(threads_config(kFrc2, stopping, spu, iterations));
    const Fidelity f = measure(plan);
    report(name, f);
    CHECK(static_cast<double>(f.same) >= 0.99 * static_cast<double>(f.iterations));
    CHECK(f.unexplained == 0);
    CHECK(f.max_loss_error <= 1e-9);
    CHECK(f.max_estimate_error <= 1e-9);
    CHECK(std::abs(f.real_stop / f.simulated_stop - 1.0) <= 0.05);
    CHECK(static_cast<double>(f.within_5_percent) >= 0.95 * static_cast<double>(f.iterations));
  }
}

TEST_CASE("threads: finish runs stale work to the end and its late messages are dropped",
          "[threads][policies]") {
  auto config = threads_config(kFrc2, kFirst6, 0.002, 30, "finish");
  const auto plan = plan_of(config);
  LockStep backend(plan);
  const auto rows = train_with(plan, backend);
  int late = 0;
  for (const auto& r : backend.threads().records()) {
    late += r.late_dropped;
    CHECK(r.heard.size() == 6);
  }
  // Six stragglers per iteration finish their stale work and deliver it after the stop.
  CHECK(late > 0);
  CHECK(std::isfinite(rows.back().loss));
  CHECK(rows.back().loss < rows.front().loss);
}

TEST_CASE("threads: drain waits for every worker and cancel does not", "[threads][policies]") {
  const double spu = 0.004;
  double totals[2] = {0.0, 0.0};
  const std::vector<std::string> policies = {"drain", "cancel"};
  for (std::size_t p = 0; p < policies.size(); ++p) {
    const auto plan = plan_of(threads_config(kFrc2, kFirst6, spu, 15, policies[p]));
    auto backend = make_threads(plan);
    const Eigen::VectorXd x = Eigen::VectorXd::Constant(plan.objective->dimension(), 0.1);
    for (std::uint64_t t = 1; t <= plan.iterations; ++t) {
      const BackendIteration it = backend->iterate(t, x, nullptr);
      totals[p] += it.real_seconds;
      const auto& record = backend->records().back();
      if (policies[p] == "drain") {
        // Every worker delivered before iterate returned: nothing is ever late.
        CHECK(it.real_seconds >= it.wall_time * spu - 1e-6);
        CHECK(record.late_dropped == 0);
        CHECK(it.wall_time >= it.iteration_time);
      } else {
        CHECK(it.wall_time == it.iteration_time);
      }
      CHECK(record.real_stop_seconds >= it.iteration_time * spu - 1e-6);
    }
  }
  // ErasureHead stops at the 6th of 12 arrivals, drain waits for the 12th: E 3.3 vs 8.2 units.
  CHECK(totals[1] < totals[0]);
}

TEST_CASE("threads: a deadline scaled by seconds_per_unit stops the master", "[threads]") {
  const double spu = 0.002;
  const auto plan =
      plan_of(threads_config(kUncoded, {{"rule", "deadline"}, {"after", 1.8}}, spu, 15));
  auto backend = make_threads(plan);
  const Eigen::VectorXd x = Eigen::VectorXd::Zero(plan.objective->dimension());
  for (std::uint64_t t = 1; t <= plan.iterations; ++t) {
    const BackendIteration it = backend->iterate(t, x, nullptr);
    const auto& record = backend->records().back();
    if (it.heard.size() < 12) {
      CHECK(record.simulated_stop == 1.8);
      CHECK(record.real_stop_seconds >= 1.8 * spu - 1e-6);
    }
    CHECK(it.decoding.partitions_covered == static_cast<int>(it.heard.size()));
  }
}

TEST_CASE("threads: an approximate scheme keeps going with a crashed and a hung worker",
          "[threads][faults]") {
  auto config = threads_config(kFrc2, kFirst6, 0.002, 20);
  config["backend"]["timeout"] = 2.0;
  config["backend"]["faults"] = {{{"worker", 3}, {"kind", "crash"}},
                                 {{"worker", 8}, {"kind", "hang"}, {"from_iteration", 5}}};
  const auto plan = plan_of(config);
  auto backend = make_threads(plan);
  const auto rows = train_with(plan, *backend);
  REQUIRE(rows.size() == 21);
  for (const auto& r : backend->records()) {
    CHECK(std::find(r.heard.begin(), r.heard.end(), 3) == r.heard.end());
    if (r.iteration >= 5) {
      CHECK(std::find(r.heard.begin(), r.heard.end(), 8) == r.heard.end());
    }
    CHECK(r.heard.size() == 6);
    CHECK(r.real_seconds < 1.0);
    CHECK(std::isfinite(r.simulated_stop));
  }
  CHECK(rows.back().loss < rows.front().loss);
}

TEST_CASE("threads: exact codes tolerate up to s faulty workers with the exact losses",
          "[threads][faults]") {
  struct Case {
    std::string name;
    nlohmann::json code;
    nlohmann::json stopping;
    nlohmann::json faults;
  };
  // FRC d = 2: one fault in each of two groups; CRC s = 2: two faults anywhere.
  const std::vector<Case> cases = {{"exact frc",
                                    kFrc2,
                                    kDecodable,
                                    {{{"worker", 0}, {"kind", "crash"}},
                                     {{"worker", 5}, {"kind", "hang"}, {"from_iteration", 2}}}},
                                   {"crc",
                                    {{"kind", "crc"}, {"s", 2}},
                                    {{"rule", "first_r"}, {"r", 10}},
                                    {{{"worker", 2}, {"kind", "crash"}, {"from_iteration", 3}},
                                     {{"worker", 7}, {"kind", "hang"}}}}};
  for (const auto& c : cases) {
    INFO(c.name);
    auto config = threads_config(c.code, c.stopping, 0.002, 15);
    config["backend"]["faults"] = c.faults;
    config["backend"]["timeout"] = 2.0;
    const auto plan = plan_of(config);
    auto backend = make_threads(plan);
    const auto rows = train_with(plan, *backend);
    // Exact decoding gives the full gradient whichever workers answered: the fault-free
    // simulated run has the same losses.
    auto fault_free = config;
    fault_free["backend"].erase("faults");
    const auto reference = train_simulated(plan_of(fault_free));
    REQUIRE(rows.size() == reference.size());
    for (std::size_t t = 0; t < rows.size(); ++t) {
      CHECK(relative(rows[t].loss, reference[t].loss) <= 1e-9);
      CHECK(rows[t].estimate_error <= 1e-9);
    }
  }
}

TEST_CASE("threads: uncoded stops with a timeout error and shuts down cleanly",
          "[threads][faults]") {
  auto config = threads_config(kUncoded, kAll, 0.001, 10);
  config["backend"]["timeout"] = 0.25;
  config["backend"]["faults"] = {{{"worker", 4}, {"kind", "crash"}, {"from_iteration", 3}},
                                 {{"worker", 9}, {"kind", "hang"}, {"from_iteration", 3}}};
  const auto plan = plan_of(config);
  std::vector<TraceRow> rows;
  const auto begin = std::chrono::steady_clock::now();
  std::string error;
  {
    auto backend = make_threads(plan);
    auto optimizer = plan.make_optimizer();
    try {
      train(*plan.objective,
            nullptr,
            *optimizer,
            *backend,
            TrainingOptions{plan.iterations},
            [&](const TraceRow& r) { rows.push_back(r); });
    } catch (const BackendTimeout& e) {
      error = e.what();
    }
  }  // the destructor must interrupt the hung worker and join every thread
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  CHECK(error ==
        "iteration 3: timeout: the all rule was not satisfied 0.25 s after the broadcast; heard 10 "
        "of 12 workers; not heard: 4, 9");
  REQUIRE(rows.size() == 3);  // rows 0, 1, 2
  CHECK(rows.back().iteration == 2);
  CHECK(elapsed < 10.0);
}

TEST_CASE("threads: a worker hung under finish does not block the shutdown",
          "[threads][faults][policies]") {
  auto config = threads_config(kFrc2, kFirst6, 0.001, 5, "finish");
  config["backend"]["faults"] = {{{"worker", 1}, {"kind", "hang"}}};
  const auto plan = plan_of(config);
  auto backend = make_threads(plan);
  const Eigen::VectorXd x = Eigen::VectorXd::Zero(plan.objective->dimension());
  for (std::uint64_t t = 1; t <= plan.iterations; ++t) {
    const auto it = backend->iterate(t, x, nullptr);
    CHECK(std::find(it.heard.begin(), it.heard.end(), 1) == it.heard.end());
  }
  backend.reset();
  SUCCEED("joined");
}

}  // namespace stragglersim::sim

// The "network" block and optimizer.time_budget end to end: config errors word for word, the
// theory's communication shift against closed forms and simulation, and the runs' traces.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/predictions.h"
#include "experiments/run_output.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json delay_only_config() {
  return nlohmann::json::parse(R"({
    "name": "net", "seed": 3, "workers": 12, "data": null,
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 6},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 2.0, "tail": "load"},
    "optimizer": {"iterations": 200}
  })");
}

nlohmann::json data_config() {
  auto c = testing::config_with_data(nlohmann::json::parse(
      R"({"source": "synthetic", "generator": "gaussian_mixture", "rows": 240, "features": 5})"));
  c["name"] = "net-data";
  c["optimizer"]["iterations"] = 30;
  return c;
}

std::string network_plan_error(const nlohmann::json& config) {
  return testing::plan_error(config, std::filesystem::temp_directory_path());
}

double harmonic(int m) {
  double h = 0.0;
  for (int i = 1; i <= m; ++i) {
    h += 1.0 / i;
  }
  return h;
}

std::filesystem::path scratch() { return testing::process_scratch("network_run_test"); }

/// The `time` column of a trace.csv.
std::vector<double> times_of(const std::filesystem::path& trace) {
  std::ifstream in(trace);
  std::string line;
  std::getline(in, line);
  std::vector<double> out;
  while (std::getline(in, line)) {
    const auto first = line.find(',');
    const auto second = line.find(',', first + 1);
    out.push_back(std::stod(line.substr(first + 1, second - first - 1)));
  }
  return out;
}

}  // namespace

TEST_CASE("experiments: network and time budget errors name the key and the accepted values",
          "[experiments][config][errors][network]") {
  auto c = delay_only_config();
  c["network"] = {{"latency", 0.1}, {"bandwidth", 1e6}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/message_bytes: missing required key: a delay-only run (\"data\": null) "
        "with a bandwidth needs the message size in bytes; expected a number >= 0");
  c["network"] = {{"value_bytes", 4}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/value_bytes: a delay-only run (\"data\": null) has no model "
        "dimension p; set message_bytes");
  c["network"] = {{"latency", -0.5}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/latency: out of range; got -0.5; expected a number >= 0");
  c["network"] = {{"bandwidth", 0}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/bandwidth: out of range; got 0; expected a number > 0");
  c["network"] = {{"latency", 0.1}, {"serial", "yes"}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/serial: wrong type; got \"yes\"; expected true or false");
  c["network"] = {{"latncy", 0.1}};
  CHECK(network_plan_error(c) ==
        "cfg.json:/network/latncy: unknown key 'latncy'; did you mean 'latency'? valid keys are: "
        "bandwidth, latency, message_bytes, "
        "serial");
  c.erase("network");
  c["optimizer"]["time_budget"] = 0;
  CHECK(network_plan_error(c) ==
        "cfg.json:/optimizer/time_budget: out of range; got 0; expected a number > 0");

  auto d = data_config();
  d["network"] = {{"message_bytes", 100}};
  CHECK(network_plan_error(d) ==
        "cfg.json:/network/message_bytes: with data the message size is p * value_bytes (the "
        "model's dimension times the bytes of one value); set value_bytes instead");
  d["network"] = {{"latency", 0.1}};
  d["backend"] = {{"kind", "threads"}};
  CHECK(network_plan_error(d) ==
        "cfg.json:/network: a network model applies to the simulated clock only (the threads "
        "backend's messages take their real time); got \"threads\"; expected backend "
        "\"simulated\", or no \"network\" block");
  d.erase("backend");
  d["stopping"] = {{"rule", "deadline"}, {"after", 3.0}};
  d["rescale"] = "expected";
  CHECK(network_plan_error(d) ==
        "cfg.json:/rescale: rescale 'expected' with a network needs a rule that stops on the "
        "order of arrivals (the network changes who meets a deadline); got \"expected\"; "
        "expected 'none' or 'empirical', or a first_r, all or decodable rule");
}

TEST_CASE("experiments: with data the message is p float64 values unless value_bytes says",
          "[experiments][config][network]") {
  auto d = data_config();
  d["network"] = {{"bandwidth", 1000.0}};
  const RunPlan plan = plan_run(d, "cfg.json", std::filesystem::temp_directory_path());
  const double p = static_cast<double>(plan.objective->dimension());
  CHECK(plan.network.message_bytes == 8.0 * p);
  CHECK(plan.resolved["network"]["value_bytes"] == 8);
  CHECK(plan.resolved["network"]["latency"] == 0.0);
  CHECK(plan.resolved["network"]["serial"] == false);
  d["network"]["value_bytes"] = 4;
  CHECK(plan_run(d, "cfg.json", std::filesystem::temp_directory_path()).network.message_bytes ==
        4.0 * p);
}

TEST_CASE("experiments: parallel links shift the predicted iteration time by L + S/B exactly",
          "[experiments][network][theory]") {
  // ErasureHead d = 2, r = 6 of 12, a = 1, λ = 2, Model A: d·(a + (H_12 − H_6)/λ) + L + S/B.
  auto c = delay_only_config();
  c["network"] = {{"latency", 0.05}, {"bandwidth", 1e6}, {"message_bytes", 2e5}};
  const RunPlan plan = plan_run(c, "cfg.json", std::filesystem::temp_directory_path());
  const nlohmann::json p = predictions(plan, false);
  const double closed = 2.0 * (1.0 + (harmonic(12) - harmonic(6)) / 2.0) + 0.05 + 0.2;
  CHECK(p["expected_iteration_time"].get<double>() == Approx(closed).epsilon(1e-12));
  CHECK(p["method"].get<std::string>().find("(exact shift)") != std::string::npos);
  // The simulation agrees within 4 standard errors.
  const nlohmann::json sim = simulated_iteration_time(plan, 20000);
  CHECK(std::abs(sim["expected_iteration_time"].get<double>() - closed) <
        4.0 * sim["iteration_time_se"].get<double>());
}

TEST_CASE("experiments: a deadline with parallel links is the deadline minus L + S/B, plus it",
          "[experiments][network][theory]") {
  auto c = delay_only_config();
  c["stopping"] = {{"rule", "deadline"}, {"after", 4.0}};
  c["network"] = {{"latency", 0.5}, {"bandwidth", 1e6}, {"message_bytes", 5e5}};
  const RunPlan plan = plan_run(c, "cfg.json", std::filesystem::temp_directory_path());
  const nlohmann::json p = predictions(plan, false);
  // Worker lateness on compute ends: P(T > 3) for T = 2 + 2·Exp(1)/2 (load 2, Model A), so
  // q = P(T > 3)^2 = e^{−2}.
  CHECK(p["group_erasure_probability"].get<double>() == Approx(std::exp(-2.0)).epsilon(1e-9));
  const nlohmann::json sim = simulated_iteration_time(plan, 20000);
  CHECK(std::abs(sim["expected_iteration_time"].get<double>() -
                 p["expected_iteration_time"].get<double>()) <
        4.0 * sim["iteration_time_se"].get<double>());
  // A deadline inside the communication time hears nobody: the iteration lasts the deadline.
  c["stopping"]["after"] = 0.9;
  const nlohmann::json none =
      predictions(plan_run(c, "cfg.json", std::filesystem::temp_directory_path()), false);
  CHECK(none["expected_iteration_time"].get<double>() == 0.9);
  CHECK(none["group_erasure_probability"].get<double>() == 1.0);
}

TEST_CASE("experiments: a serial link is simulated and says so", "[experiments][network][theory]") {
  auto c = delay_only_config();
  c["network"] = {{"bandwidth", 1e6}, {"message_bytes", 2e5}, {"serial", true}};
  const RunPlan plan = plan_run(c, "cfg.json", std::filesystem::temp_directory_path());
  const nlohmann::json summary_theory = predictions(plan, false);
  CHECK(summary_theory["expected_iteration_time"].is_null());
  CHECK(summary_theory["network_note"].get<std::string>().find("serial link") == 0);
  const nlohmann::json p = predictions(plan, true);
  CHECK(p["method"] == "simulation");
  // Six messages of 0.2 s each pass the link before the 6th arrival: at least 1.2 s beyond the
  // first compute end, which is at least the shift d·a = 2.
  CHECK(p["expected_iteration_time"].get<double>() > 2.0 + 1.2);
}

TEST_CASE("experiments: the time budget ends a run at the first row reaching it",
          "[experiments][time_budget]") {
  const auto dir = scratch();
  for (const bool delay_only : {false, true}) {
    auto c = delay_only ? delay_only_config() : data_config();
    const RunPlan full = plan_run(c, "cfg.json", dir);
    (void)execute_run(full, dir / "full");
    const std::vector<double> times = times_of(dir / "full" / "trace.csv");
    const double budget = 0.5 * (times[7] + times[8]);
    c["optimizer"]["time_budget"] = budget;
    const RunPlan cut = plan_run(c, "cfg.json", dir);
    const RunOutcome outcome = execute_run(cut, dir / "cut");
    const std::vector<double> cut_times = times_of(dir / "cut" / "trace.csv");
    REQUIRE(cut_times.size() == 9);  // rows 0 … 8: row 8 is the first at or past the budget
    CHECK(cut_times == std::vector<double>(times.begin(), times.begin() + 9));
    CHECK(outcome.summary["iterations"] == 8);
    CHECK(outcome.summary["status"] == "ok");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace stragglersim::experiments

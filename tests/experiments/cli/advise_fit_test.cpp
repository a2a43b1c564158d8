// `stragglersim advise --fit` on a 16-worker heterogeneous trace (docs/model.md section 6, "What
// the exact computation costs"): the fitted per-worker factors are all distinct, so the exact
// FRC first_r theory would be exponential in practice; the command must finish, with the
// iteration time of those candidates simulated (method "simulation"). And on a shipped real
// trace, the model chosen by held-out error (docs/validate.md) against the replay.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/base/random_stream.h"
#include "sim/delays/heterogeneous_delay.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

/// 16 workers × 300 iterations of heterogeneous delays (factors 1, 1.04, …, 1.6), as a trace.
std::string heterogeneous_trace() {
  std::vector<double> factors;
  for (int i = 0; i < 16; ++i) {
    factors.push_back(1.0 + 0.04 * i);
  }
  sim::HeterogeneousDelay delay(std::vector<double>(16, 1.0),
                                {.shift = 0.5, .rate = 2.0, .factors = factors});
  RandomEngine rng = make_engine(31, Stream::kDelays);
  std::vector<double> row(16);
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 1; t <= 300; ++t) {
    delay.sample(static_cast<std::uint64_t>(t), rng, row);
    for (std::size_t w = 0; w < row.size(); ++w) {
      csv += fmt::format("{},{},{:.6f}\n", t, w, row[w]);
    }
  }
  return csv;
}

}  // namespace

TEST_CASE("cli: advise --fit on 16 heterogeneous workers simulates what theory cannot afford",
          "[experiments][cli][classes][heavy]") {
  const testing::TempDir dir("advise_fit");
  const std::string trace = dir.write("times.csv", heterogeneous_trace());
  const nlohmann::json config = {
      {"name", "advise-heterogeneous"},
      {"seed", 5},
      {"workers", 16},
      {"partitions", 16},
      {"data",
       {{"source", "synthetic"},
        {"generator", "linear_regression"},
        {"rows", 160},
        {"features", 20},
        {"test_fraction", 0},
        {"condition", 1}}},
      {"loss", {{"kind", "least_squares"}, {"l2", 0.01}}},
      {"code", {{"kind", "uncoded"}}},
      {"stopping", {{"rule", "all"}}},
      {"rescale", "none"},
      {"delay", {{"kind", "shifted_exponential"}}},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 60}}},
      {"backend", {{"kind", "simulated"}}}};
  const std::string cfg = dir.write("cfg.json", config.dump(2));
  // A bounded amount of work: 2 simulated runs per scheme of 60 iterations.
  const auto r = testing::run_stragglersim(
      "advise " + cfg + " --fit " + trace +
          " --fit-model family --suboptimality 0.1 --repetitions 2 --json --fixed-step",
      dir.path());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["predicted_delay"]["kind"] == "heterogeneous");
  CHECK(j["model_choice"]["chosen"] == "fit: heterogeneous");
  CHECK(j["model_choice"]["reason"] == "asked for (--fit-model family)");
  bool simulated_frc_first_r = false;
  for (const auto& row : j["schemes"]) {
    const std::string label = row["scheme"].get<std::string>();
    if (label.starts_with("erasurehead frc") && label.find(" r=") != std::string::npos &&
        row.contains("iteration_time_method")) {
      const std::string method = row["iteration_time_method"].get<std::string>();
      INFO(label << ": " << method);
      CHECK(method.starts_with("simulation (20000 draws"));
      simulated_frc_first_r = true;
    }
  }
  CHECK(simulated_frc_first_r);
}

TEST_CASE("cli: advise --fit chooses by held-out error and predicts the real trace's replay",
          "[experiments][cli][validate]") {
  const testing::TempDir dir("advise_fit_real");
  const std::string trace =
      std::string(testing::source_dir()) + "/data/traces/imported/bytedance_ar.csv";
  nlohmann::json config = {
      {"seed", 3},
      {"workers", 4},
      {"data",
       {{"source", "synthetic"},
        {"generator", "gaussian_mixture"},
        {"rows", 400},
        {"features", 10},
        {"test_fraction", 0}}},
      {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
      {"code", {{"kind", "uncoded"}}},
      {"stopping", {{"rule", "all"}}},
      {"delay", {{"kind", "trace"}, {"path", trace}, {"mode", "cycle"}, {"start", "random"}}},
      {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 100}}}};
  const std::string cfg = dir.write("cfg.json", config.dump(2));
  const std::string common = " --suboptimality 0.1 --repetitions 2 --json --fixed-step";
  const auto fitted =
      testing::run_stragglersim("advise " + cfg + " --fit " + trace + common, dir.path());
  const auto replayed = testing::run_stragglersim("advise " + cfg + common, dir.path());
  INFO(fitted.err << replayed.err);
  REQUIRE(fitted.status == 0);
  REQUIRE(replayed.status == 0);
  const nlohmann::json f = nlohmann::json::parse(fitted.out);
  const nlohmann::json r = nlohmann::json::parse(replayed.out);
  // The choice is validate's on the same trace: the smallest of the three scores.
  const nlohmann::json& choice = f["model_choice"];
  REQUIRE(choice["scores"].size() == 3);
  double smallest = INFINITY;
  std::string smallest_model;
  for (const auto& s : choice["scores"]) {
    if (s["score"].get<double>() < smallest) {
      smallest = s["score"].get<double>();
      smallest_model = s["model"].get<std::string>();
    }
  }
  REQUIRE(choice["stationary"].is_boolean());
  // Stationary: the smallest held-out error; otherwise the whole trace in blocks.
  CHECK(choice["chosen"] == (choice["stationary"].get<bool>() ? smallest_model : "block replay"));
  // A trace model names the trace relative to the config's folder, in the mode chosen.
  if (smallest_model == "block replay" || smallest_model == "empirical") {
    CHECK(f["predicted_delay"]["kind"] == "trace");
    CHECK(f["predicted_delay"]["mode"] == (smallest_model == "empirical" ? "empirical" : "block"));
    CHECK((dir.path() / f["predicted_delay"]["path"].get<std::string>()).lexically_normal() ==
          std::filesystem::path(trace).lexically_normal());
  }
  // Built from the whole trace, the chosen model predicts the replay's exact mean iteration time
  // (over the trace's rows) of uncoded, exact FRC and ErasureHead within 5 %.
  std::map<std::string, double> replay;
  for (const auto& row : r["schemes"]) {
    if (row.contains("iteration_time")) {
      replay[row["scheme"]] = row["iteration_time"].get<double>();
    }
  }
  int compared = 0;
  for (const auto& row : f["schemes"]) {
    const std::string label = row["scheme"];
    if (label == "uncoded" || label == "exact frc d=2" || label == "erasurehead frc d=2 r=2") {
      INFO(label);
      REQUIRE(replay.count(label) == 1);
      CHECK(std::abs(row["iteration_time"].get<double>() / replay[label] - 1.0) < 0.05);
      ++compared;
    }
  }
  CHECK(compared == 3);
}

}  // namespace stragglersim::experiments

// `stragglersim advise --fit` on a 16-worker heterogeneous trace (docs/model.md section 6, "What
// the exact computation costs"): the fitted per-worker factors are all distinct, so the exact
// FRC first_r theory would be exponential in practice; the command must finish, with the
// iteration time of those candidates simulated (method "simulation").

#include <fmt/format.h>

#include <catch2/catch.hpp>
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
      "advise " + cfg + " --fit " + trace + " --suboptimality 0.1 --repetitions 2 --json",
      dir.path());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["predicted_delay"]["kind"] == "heterogeneous");
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

}  // namespace stragglersim::experiments

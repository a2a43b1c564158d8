// `stragglersim validate` (experiments/cli/validate_command.cpp, docs/validate.md): the worked
// example's table and verdicts, --json, and bad options exiting 2 with nothing on stdout.

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::run_stragglersim;
using testing::TempDir;

const std::string kExamples =
    std::string(stragglersim::testing::source_dir()) + "/experiments/examples/";

TEST_CASE("cli: validate prints the table of the persistent-stragglers example",
          "[validate][cli][heavy]") {
  const TempDir dir("validate_cli");
  const std::string args =
      kExamples + "advise_persistent.json --trace " + kExamples + "persistent_stragglers.csv";
  const auto r = run_stragglersim("validate " + args, dir.path());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("fit on the first 250 iterations, replay of the last 250") != std::string::npos);
  CHECK(r.out.find("block replay: recommends") != std::string::npos);
  // Persistent slow spells: the empirical marginals, best on iteration times alone, draw every
  // iteration afresh (lag-1 autocorrelation 0); the block replay keeps the persistence and is
  // chosen.
  CHECK(r.out.find("block replay 13.94% (lag-1 0.54), empirical 47.32% (lag-1 0.00)") !=
        std::string::npos);
  CHECK(r.out.find("\nchosen: block replay (the smallest held-out error)\n") != std::string::npos);
  const auto j = run_stragglersim("validate " + args + " --json --holdout 0.4", dir.path());
  REQUIRE(j.status == 0);
  const auto v = nlohmann::json::parse(j.out);
  CHECK(v["fit_iterations"] == 300);
  CHECK(v["holdout_iterations"] == 200);
  CHECK(v["verdicts"].size() == 3);
  REQUIRE(v["scores"].size() == 3);
  CHECK(v["scores"][2]["model"] == "empirical");
  CHECK(v["scores"][2]["lag1"] == 0.0);
  // The held-out part is persistent, the block replay's ρ₁ near it, the empirical's far.
  const double held = v["holdout_lag1"].get<double>();
  CHECK(held > 2.0 / std::sqrt(200.0));
  CHECK(std::abs(v["scores"][1]["lag1"].get<double>() - held) < held);
  for (const auto& row : v["rows"]) {
    if (!row.contains("problem") && row["model"] == "block replay") {
      CHECK(row["method"] == "trace rows");
    }
  }
}

TEST_CASE("cli: validate refuses bad options with exit 2", "[validate][cli]") {
  const TempDir dir("validate_cli_bad");
  const std::string config = kExamples + "advise_persistent.json";
  const std::string trace = kExamples + "persistent_stragglers.csv";
  const auto r =
      run_stragglersim("validate " + config + " --trace " + trace + " --holdout 1.5", dir.path());
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "error: --holdout: outside (0, 1); got 1.5; expected a fraction of the iterations "
        "strictly between 0 and 1\n");
  const std::string small = dir.write("small.csv", "iteration,worker,seconds\n1,0,1\n1,1,2\n");
  const auto w = run_stragglersim("validate " + config + " --trace " + small, dir.path());
  CHECK(w.status == 2);
  CHECK(w.err == "error: --trace: trace '" + small +
                     "' has 2 workers; expected 24 (the config's workers)\n");
  const auto missing = run_stragglersim(
      "validate " + config + " --trace " + dir.path().string() + "/absent.csv", dir.path());
  CHECK(missing.status == 2);
}

}  // namespace
}  // namespace stragglersim::experiments

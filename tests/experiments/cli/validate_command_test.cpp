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

const std::string kValidateExamples =
    std::string(stragglersim::testing::source_dir()) + "/experiments/examples/";

TEST_CASE("cli: validate prints the table of the persistent-stragglers example",
          "[validate][cli][heavy]") {
  const TempDir dir("validate_cli");
  // The example's config without its target: the iteration-time table alone (the time to target
  // of its 31 candidates takes minutes; the test below checks it on a small config).
  nlohmann::json config =
      nlohmann::json::parse(testing::slurp(kValidateExamples + "advise_persistent.json"));
  config.erase("target_loss");
  config["delay"]["path"] = kValidateExamples + "persistent_stragglers.csv";
  const std::string untargeted = dir.write("untargeted.json", config.dump());
  const std::string args =
      untargeted + " --trace " + kValidateExamples + "persistent_stragglers.csv";
  const auto r = run_stragglersim("validate " + args, dir.path());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("fit on the first 250 iterations, replay of the last 250") != std::string::npos);
  CHECK(r.out.find("block replay: recommends") != std::string::npos);
  // Persistent slow spells: the empirical marginals, best on iteration times alone, draw every
  // iteration afresh (lag-1 autocorrelation 0); the block replay keeps the persistence and is
  // chosen. The score in its two parts: the scheme error and the persistence term apart.
  CHECK(r.out.find("block replay scheme error 3.93% + persistence 0.10 (lag-1 0.54 vs 0.44) = "
                   "0.1394; empirical scheme error 2.91% + persistence 0.44 (lag-1 0.00 vs "
                   "0.44) = 0.4732") != std::string::npos);
  CHECK(r.out.find("\nchosen: block replay (the smallest held-out error)\n") != std::string::npos);
  CHECK(r.out.find("\ntime to target: not compared (no target: the config has no target_loss; "
                   "give one or --suboptimality)\n") != std::string::npos);
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
  for (const auto& score : v["scores"]) {
    CHECK(score["score"].get<double>() ==
          Approx(score["scheme_error"].get<double>() + score["persistence"].get<double>()));
  }
  CHECK(v["time_to_target"]["not_compared"] ==
        "no target: the config has no target_loss; give one or --suboptimality");
}

TEST_CASE("cli: validate prints the time to target of every candidate on a small config",
          "[validate][cli][heavy]") {
  // 8 workers, worker 3 1.6 times slower, 120 iterations; the target 5 % of the initial gap.
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 0; t < 120; ++t) {
    for (int w = 0; w < 8; ++w) {
      const double u = (static_cast<double>((t * 8 + w) * 7919 % 1000) + 0.5) / 1000.0;
      csv += std::to_string(t) + "," + std::to_string(w) + "," +
             std::to_string((w == 3 ? 1.6 : 1.0) * (0.5 - 0.5 * std::log(u))) + "\n";
    }
  }
  const TempDir dir("validate_cli_ttt");
  nlohmann::json config = testing::small_least_squares_config();
  config["optimizer"]["iterations"] = 60;
  const std::string path = dir.write("cfg.json", config.dump());
  const std::string line = "validate " + path + " --trace " + dir.write("t.csv", csv) +
                           " --suboptimality 0.05 --repetitions 2 --fixed-step";
  const auto r = run_stragglersim(line + " --threads 1", dir.path());
  REQUIRE(r.status == 0);
  // The candidates estimated two at a time: the same bytes.
  const auto two = run_stragglersim(line + " --threads 2", dir.path());
  REQUIRE(two.status == 0);
  CHECK(two.out == r.out);
  CHECK(r.out.find("\ntime to target: loss ") != std::string::npos);
  for (const std::string scheme : {" k-sync K=4 ", " k-async K=4 ", " rennala B=8 ", " uncoded "}) {
    CHECK(r.out.find(scheme) != std::string::npos);
  }
  CHECK(r.out.find("\nblock replay: recommends ") != std::string::npos);
  CHECK(r.out.find(" under the replay; ") != std::string::npos);
  CHECK(r.out.find("\nrecommended (by the chosen model, ") != std::string::npos);
}

TEST_CASE("cli: validate refuses bad options with exit 2", "[validate][cli]") {
  const TempDir dir("validate_cli_bad");
  const std::string config = kValidateExamples + "advise_persistent.json";
  const std::string trace = kValidateExamples + "persistent_stragglers.csv";
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
  // The time-to-target options, and a target below f* (advise's refusal).
  for (const std::string bad :
       {" --suboptimality 1.5", " --suboptimality 0", " --repetitions 0", " --threads 0"}) {
    INFO(bad);
    const auto b = run_stragglersim("validate " + config + " --trace " + trace + bad, dir.path());
    CHECK(b.status == 2);
    CHECK(b.out.empty());
  }
  nlohmann::json below = nlohmann::json::parse(testing::slurp(config));
  below["target_loss"] = 0.01;
  below["delay"]["path"] = trace;
  const std::string below_path = dir.write("below.json", below.dump());
  const auto f = run_stragglersim("validate " + below_path + " --trace " + trace, dir.path());
  CHECK(f.status == 2);
  CHECK(f.out.empty());
  CHECK(f.err.starts_with("error: " + below_path +
                          ":/target_loss: below the optimum, no run reaches it; got 0.01"));
  const auto missing = run_stragglersim(
      "validate " + config + " --trace " + dir.path().string() + "/absent.csv", dir.path());
  CHECK(missing.status == 2);
}

}  // namespace
}  // namespace stragglersim::experiments

// `stragglersim fit` (experiments/cli/fit_command.cpp, docs/fit.md): the command line around
// fit/delay_fit.h: bad trace files exit 2 naming file:line and write nothing, --out writes the
// block that --json reports as best, and the worked example's trace is fitted as documented.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/fit_report.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::run_stragglersim;
using testing::slurp;
using testing::TempDir;

const std::string kExampleTrace = std::string(stragglersim::testing::source_dir()) +
                                  "/experiments/examples/persistent_stragglers.csv";

TEST_CASE("cli: fit refuses malformed traces with exit 2 naming file:line", "[fit][cli]") {
  const TempDir dir("fit_cli");
  const auto check = [&](const std::string& contents, const std::string& message) {
    const std::string path = dir.write("bad.csv", contents);
    const std::string out = (dir.path() / "delay.json").string();
    const auto r = run_stragglersim("fit " + path + " --out " + out, dir.path());
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + path + message + "\n");
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(out));
  };
  check("",
        ":1: empty file (expected a header with columns iteration,worker,seconds or "
        "worker,seconds)");
  check("iteration,worker,seconds\n1,0,1\n1,1,1\n2,0,1\n3,0,1\n3,1,1\n",
        ":4: iteration 2 (first row on this line) has no row for worker 1 (expected one row for "
        "each worker 0..1)");
  check("iteration,worker,seconds\n1,0,-0.5\n",
        ":2: seconds must be finite and ≥ 0; got -0.5 (expected a measured time)");
  check("worker,seconds\n0,1\n0,1\n0,1\n",
        ": no delay family could be fitted; got 3 times; expected at least five distinct times");
}

TEST_CASE("cli: fit ends on a trace holding a time of 1e308 and prints no nan", "[fit][cli]") {
  // Found by tests/reliability/campaign.py: 2 workers x 40 iterations, worker 1's iteration 25
  // at 1e308. The log-likelihoods of some families are NaN there, and Brent's search cycled on
  // them forever; the equal-rates test printed "dispersion -nan".
  const std::string times =
      "1.35181 2.00919 7.06868 1.11339 1.05211 1.49055 4.23508 1.38977 2.41349 1.58616 "
      "3.3233 1.54849 4.65968 2.05671 6.32613 1.90534 2.18349 1.06089 1.38714 1.21135 "
      "2.40889 4.23234 4.26965 1.33907 3.39825 3.54873 5.06621 1.19766 1.73314 3.1005 "
      "3.17766 2.44465 2.60068 1.2435 1.09779 1.23019 2.67548 3.76173 3.9203 2.81798 "
      "10.5012 1.31036 3.06151 1.21152 3.08067 2.89323 2.66619 1.22076 10.2329 1e308 "
      "5.80173 1.66368 5.6473 1.58311 1.23571 1.59988 5.46004 1.80763 2.62421 1.71351 "
      "2.35408 2.13131 1.22677 3.34651 1.46865 1.73313 3.91166 1.54916 1.38514 2.15362 "
      "8.72374 1.03987 2.5515 1.78862 1.07234 1.32556 2.25566 1.34478 3.89505 1.21663 ";
  std::string csv = "iteration,worker,seconds\n";
  std::istringstream in(times);
  std::string value;
  for (int k = 0; in >> value; ++k) {
    csv += std::to_string(k / 2 + 1) + "," + std::to_string(k % 2) + "," + value + "\n";
  }
  const TempDir dir("fit_1e308");
  const auto r = run_stragglersim("fit " + dir.write("times.csv", csv), dir.path());
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("nan") == std::string::npos);
  CHECK(r.out.find("equal rates: not tested (one worker, no spread, or times too large for "
                   "double precision)") != std::string::npos);
  CHECK(r.out.find("best by AIC: ") != std::string::npos);
}

TEST_CASE("cli: fit --out --model family writes the best block that --json reports",
          "[fit][cli][heavy]") {
  const TempDir dir("fit_cli_out");
  const std::string out = (dir.path() / "delay.json").string();
  const auto r =
      run_stragglersim("fit " + kExampleTrace + " --json --model family --out " + out, dir.path());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto written = nlohmann::json::parse(slurp(out));
  CHECK(written == j["delay"]);
  CHECK(written == j["written"]);
  CHECK(j["model_choice"]["reason"] == "asked for (--fit-model family)");
  CHECK(j["best"] == "heterogeneous_markov");
  CHECK(written["kind"] == "heterogeneous_markov");
  CHECK(j["workers"] == 24);
  CHECK(j["observations"] == 12000);
  CHECK(j["iterations"] == 500);
  CHECK(j["ordered"] == true);
  CHECK(j["censored"] == 0);
  // The generator's model (experiments/examples/make_persistent_trace.py): chains with
  // p = 0.03, q = 0.15 and workers 0..5 1.6 times slower; the fit sees both.
  CHECK(j["heterogeneity"]["heterogeneous"] == true);
  CHECK(written["to_slow"].get<double>() == Approx(0.03).margin(4 * 0.0019));
  CHECK(written["to_normal"].get<double>() == Approx(0.15).margin(4 * 0.009));
  // The factors and the chain's times share one scale (fastest worker 1): ratios of 1.6.
  const auto& c = written["factors"];
  for (int w = 0; w < 24; ++w) {
    CHECK(c[w].get<double>() / c[23].get<double>() == Approx(w < 6 ? 1.6 : 1.0).epsilon(0.1));
  }
  for (const auto& f : j["fits"]) {
    if (f["family"] == "heterogeneous") {
      for (int w = 0; w < 24; ++w) {
        CHECK(f["factors"][w].get<double>() == Approx(w < 6 ? 1.6 : 1.0).epsilon(0.03));
      }
    }
  }
}

namespace {

/// 15 workers x 60 iterations like a cloud-VM cluster: workers 0..4 persistently 1.5 times
/// slower, every worker's time multiplied by a cluster-wide slowdown c_t = 1 + 2u^8 shared by the
/// iteration (u uniform), times 1 + 0.3 Exp(1) of its own. Every fitted family draws workers
/// independently, so none keeps the shared slowdown; the trace replayed in blocks does.
std::string fit_test_cloud_trace() {
  std::mt19937_64 rng(2026);
  const auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 1; t <= 60; ++t) {
    const double c = 1.0 + 2.0 * std::pow(uniform(), 8.0);
    for (int w = 0; w < 15; ++w) {
      const double x = (w < 5 ? 1.5 : 1.0) * c * (1.0 + 0.3 * -std::log(uniform()));
      csv += fmt::format("{},{},{:.6f}\n", t, w, x);
    }
  }
  return csv;
}

}  // namespace

TEST_CASE("cli: fit --out writes the model validate chooses, not a family that misses",
          "[fit][cli]") {
  const TempDir dir("fit_cli_choice");
  const std::string trace = dir.write("cloud.csv", fit_test_cloud_trace());
  const std::string out = (dir.path() / "delay.json").string();
  const auto r = run_stragglersim("fit " + trace + " --out " + out, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("best by AIC: heterogeneous\n") != std::string::npos);
  // validate's held-out choice on the same trace (fit on the first half, replay of the second).
  const std::string config = dir.write(
      "cfg.json",
      R"({"workers": 15, "data": null, "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
          "optimizer": {"iterations": 1},
          "delay": {"kind": "shifted_exponential", "shift": 1, "rate": 1}})");
  const auto v =
      run_stragglersim("validate " + config + " --trace " + trace + " --json", dir.path());
  REQUIRE(v.status == 0);
  const auto chosen = nlohmann::json::parse(v.out)["chosen"].get<std::string>();
  CHECK(chosen == "block replay");
  const auto written = nlohmann::json::parse(slurp(out));
  CHECK(written ==
        nlohmann::json{
            {"kind", "trace"}, {"path", "cloud.csv"}, {"mode", "block"}, {"tail", "load"}});
  CHECK(r.out.find("model written to " + out + ": block replay (the smallest held-out error") !=
        std::string::npos);
  CHECK(r.out.find("no fitted family describes this trace as well as the trace itself: " + out +
                   " wrote the trace replayed in block mode (--model family writes the AIC "
                   "family)\n") != std::string::npos);
  // --model family: today's AIC block.
  const auto f = run_stragglersim("fit " + trace + " --model family --out " + out, dir.path());
  REQUIRE(f.status == 0);
  CHECK(nlohmann::json::parse(slurp(out))["kind"] == "heterogeneous");
  // An unknown model is refused before anything is written.
  const auto bad = run_stragglersim("fit " + trace + " --model aic --out " + out, dir.path());
  CHECK(bad.status == 2);
  CHECK(bad.err ==
        "error: --model: unknown model; got \"aic\"; expected one of: auto, block, empirical, "
        "family\n");
}

TEST_CASE("cli: fit states the test of equal rates in words when it has no ratio", "[fit][cli]") {
  // Six workers x 49 iterations, worker w at 1 + 0.25 w plus a pattern of period 7 (eighths:
  // every sum exact): every batch of 7 has the same mean, so the dispersion is 0 while the
  // workers' means differ. And the same trace with worker 0 at the smallest time throughout: an
  // infinite likelihood ratio.
  const std::vector<double> pattern = {0.0, 0.125, 0.25, 0.5, 0.375, 0.0625, 0.75};
  std::string periodic = "iteration,worker,seconds\n";
  std::string at_shift = periodic;
  for (int t = 0; t < 49; ++t) {
    for (int w = 0; w < 6; ++w) {
      const double time = 1.0 + 0.25 * w + pattern[static_cast<std::size_t>(t % 7)];
      periodic += fmt::format("{},{},{}\n", t, w, time);
      at_shift += fmt::format("{},{},{}\n", t, w, w == 0 ? 1.0 : time + 0.125 * (t % 5));
    }
  }
  const TempDir dir("fit_no_ratio");
  const auto first = run_stragglersim("fit " + dir.write("periodic.csv", periodic), dir.path());
  INFO(first.out);
  CHECK(first.out.find("inf") == std::string::npos);
  CHECK(first.out.find("equal rates: every worker's batch means are equal (dispersion 0: no "
                       "variation over the iterations to test against) while the workers' mean "
                       "times differ: heterogeneous workers\n") != std::string::npos);
  const auto second = run_stragglersim("fit " + dir.write("at_shift.csv", at_shift), dir.path());
  INFO(second.out);
  CHECK(second.out.find("LR inf") == std::string::npos);
  CHECK(second.out.find("equal rates: some worker's times all equal the smallest time (an excess "
                        "of 0 over the shift, the likelihood ratio unbounded) while others' do "
                        "not: heterogeneous workers\n") != std::string::npos);
}

TEST_CASE("cli: fit says so when no family describes the times", "[fit][cli]") {
  // Times on a grid of 0.01 s (1.00 ... 1.04): every family's KS p is 0 against the steps.
  std::string grid = "iteration,worker,seconds\n";
  for (int t = 0; t < 50; ++t) {
    for (int w = 0; w < 4; ++w) {
      grid += fmt::format("{},{},{}\n", t, w, 1.0 + 0.01 * ((t + w) % 5));
    }
  }
  const TempDir dir("fit_rejected");
  const auto r = run_stragglersim("fit " + dir.write("grid.csv", grid), dir.path());
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\nno family describes these times: every fitted family's KS p is below "
                   "0.001, so the chosen one is only the least bad") != std::string::npos);
  const auto j = run_stragglersim("fit --json " + (dir.path() / "grid.csv").string(), dir.path());
  CHECK(nlohmann::json::parse(j.out)["every_family_rejected"] == true);
  // Times at the quantiles (i + 0.5)/200 of a shifted exponential are described: no such line.
  std::string quantiles = "iteration,worker,seconds\n";
  for (int i = 0; i < 200; ++i) {
    const double u = (((i * 37) % 200) + 0.5) / 200.0;  // the quantiles in a scrambled order
    quantiles += fmt::format("{},{},{}\n", i / 4, i % 4, 1.0 - std::log(1.0 - u) / 2.0);
  }
  const auto fine = run_stragglersim("fit " + dir.write("quantiles.csv", quantiles), dir.path());
  REQUIRE(fine.status == 0);
  CHECK(fine.out.find("no family describes") == std::string::npos);
}

TEST_CASE("cli: fit text output and per-worker tables", "[fit][cli]") {
  const TempDir dir("fit_cli_text");
  const std::string path = dir.write("pool.csv",
                                     "worker,seconds\n0,1.0\n0,1.5\n0,2.5\n0,1.2\n0,3.0\n0,1.1\n"
                                     "1,1.3\n1,1.9\n1,1.0\n1,2.2\n1,1.4\n1,4.0\n");
  const auto r = run_stragglersim("fit " + path + " --per-worker", dir.path());
  REQUIRE(r.status == 0);
  CHECK(r.out.find(path + ": 2 workers, 12 times, no iteration order (per-worker pools)\n") == 0);
  CHECK(
      r.out.find("markov               not fitted: needs iteration order (an iteration column)") !=
      std::string::npos);
  CHECK(r.out.find("\nworker 0: 6 times\n") != std::string::npos);
  CHECK(r.out.find("\nworker 1: 6 times\n") != std::string::npos);
  CHECK(r.out.find("best by AIC: ") != std::string::npos);
  // The library's view of the same file, for the JSON.
  const TraceFit fit = fit_trace_file(path, true);
  CHECK(fit.per_worker.size() == 2);
  CHECK(fit.report.observations == 12);
  CHECK_THROWS_AS(fit_trace_file((dir.path() / "absent.csv").string(), false), ConfigError);
}

}  // namespace
}  // namespace stragglersim::experiments

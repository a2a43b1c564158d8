// End-to-end tests of the stragglersim executable: exit statuses, outputs, determinism.

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/version.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::slurp;
using Result = stragglersim::testing::CommandResult;

fs::path scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("cli_test", name);
}

Result run(const std::string& args, const fs::path& dir) {
  return stragglersim::testing::run_stragglersim(args, dir);
}

nlohmann::json config() {
  return nlohmann::json::parse(R"({
    "seed": 3, "workers": 8,
    "data": {"source": "synthetic", "generator": "linear_regression", "rows": 400, "features": 6},
    "loss": {"kind": "least_squares", "l2": 0.01},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 4},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 30}
  })");
}

fs::path write_config(const fs::path& dir,
                      const nlohmann::json& c,
                      const std::string& name = "cfg.json") {
  const auto p = dir / name;
  std::ofstream(p) << c.dump(2);
  return p;
}

}  // namespace

TEST_CASE("cli: run writes trace.csv and summary.json", "[experiments][cli]") {
  const auto dir = scratch("run");
  const auto cfg = write_config(dir, config());
  const Result r =
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  REQUIRE(r.status == 0);
  const std::string trace = slurp(dir / "out" / "trace.csv");
  CHECK(trace.rfind("iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
                    "gradient_error_relative,workers_heard,"
                    "partitions_covered,test_loss,test_metric\n0,0,0,",
                    0) == 0);
  CHECK(std::count(trace.begin(), trace.end(), '\n') == 32);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "ok");
  CHECK(summary["seed"] == 3);
  CHECK(summary["config"]["stragglers"] == "cancel");
  CHECK(summary["build"].contains("git_revision"));
  // The Boost the binary was built with: BOOST_LIB_VERSION ("1_74") of the same headers, then
  // the patch number.
  std::string boost_lib = BOOST_LIB_VERSION;
  std::replace(boost_lib.begin(), boost_lib.end(), '_', '.');
  const std::string boost = summary["build"]["boost"];
  CHECK(std::regex_match(boost, std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(boost.rfind(boost_lib + ".", 0) == 0);
  // Nothing but the two outputs is left behind (temporary names are renamed away).
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "out")) {
    ++files;
  }
  CHECK(files == 2);
}

TEST_CASE("cli: summary records the git revision of the build", "[experiments][cli]") {
  // Taken at build time (experiments/git_revision.cmake): after a commit, a rebuild records the
  // new HEAD without a reconfigure. The test binary is built with the executable, so HEAD now
  // is HEAD at that build unless someone committed since.
  const auto dir = scratch("revision");
  const auto cfg = write_config(dir, config());
  REQUIRE(
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir).status ==
      0);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  const std::string recorded = summary["build"]["git_revision"];
  const auto head = dir / "head.txt";
  const int status = stragglersim::testing::exit_status(
      std::system(fmt::format("git -C '{}' rev-parse --short=12 HEAD > '{}' 2> /dev/null",
                              STRAGGLERSIM_SOURCE_DIR,
                              head.string())
                      .c_str()));
  if (status != 0) {
    // Not a git checkout (a source archive): the build says so.
    CHECK(recorded == "unknown");
    return;
  }
  std::string expected = slurp(head);
  expected.erase(expected.find_last_not_of('\n') + 1);
  INFO("a commit after the last build makes the binaries stale: rebuild, then rerun");
  CHECK(recorded == expected);
  const Result version = run("--version", dir);
  CHECK(version.out.find("(" + expected + ")") != std::string::npos);
}

TEST_CASE("cli: same seed gives the same bytes and another seed other times",
          "[experiments][cli]") {
  const auto dir = scratch("determinism");
  const auto cfg = write_config(dir, config());
  auto c2 = config();
  c2["seed"] = 4;
  const auto cfg2 = write_config(dir, c2, "cfg2.json");
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "a").string()), dir).status ==
          0);
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "b").string()), dir).status ==
          0);
  REQUIRE(
      run(fmt::format("run '{}' --out '{}'", cfg2.string(), (dir / "c").string()), dir).status ==
      0);
  const std::string a = slurp(dir / "a" / "trace.csv");
  CHECK(a == slurp(dir / "b" / "trace.csv"));
  CHECK(a != slurp(dir / "c" / "trace.csv"));
  // The seed changes the data too; the delays alone must differ: compare the time column.
  auto times = [](const std::string& csv) {
    std::vector<std::string> out;
    std::stringstream s(csv);
    std::string line;
    std::getline(s, line);
    while (std::getline(s, line)) {
      const auto first = line.find(',');
      out.push_back(line.substr(first + 1, line.find(',', first + 1) - first - 1));
    }
    return out;
  };
  CHECK(times(a) != times(slurp(dir / "c" / "trace.csv")));
}

TEST_CASE("cli: bad input exits 2 with the message and leaves no output", "[experiments][cli]") {
  const auto dir = scratch("bad");
  auto c = config();
  c["code"]["d"] = 3;
  const auto cfg = write_config(dir, c);
  const auto out = dir / "out";
  const Result r = run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/code/d: replication must divide the workers; got 3; "
                             "expected a divisor of workers = 8\n",
                             cfg.string()));
  CHECK_FALSE(fs::exists(out));

  const auto broken = dir / "broken.json";
  std::ofstream(broken) << "{\"workers\": 8,";
  const Result b = run(fmt::format("run '{}' --out '{}'", broken.string(), out.string()), dir);
  CHECK(b.status == 2);
  CHECK(b.err.rfind(fmt::format("error: {}: invalid JSON:", broken.string()), 0) == 0);
  CHECK_FALSE(fs::exists(out));

  const Result missing =
      run(fmt::format("run '{}' --out '{}'", (dir / "nope.json").string(), out.string()), dir);
  CHECK(missing.status == 2);
  CHECK(missing.err ==
        fmt::format("error: {}: cannot open config file\n", (dir / "nope.json").string()));

  const Result usage = run("run", dir);
  CHECK(usage.status == 2);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: a diverging run exits 3 and its trace holds only finite rows",
          "[experiments][cli]") {
  const auto dir = scratch("diverge");
  auto c = config();
  c["optimizer"]["step"] = 50.0;
  c["optimizer"]["iterations"] = 3000;
  const auto cfg = write_config(dir, c);
  const Result r =
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  CHECK(r.status == 3);
  CHECK(r.err.find("non-finite loss") != std::string::npos);
  const std::string trace = slurp(dir / "out" / "trace.csv");
  CHECK(trace.find("nan") == std::string::npos);
  CHECK(trace.find("inf") == std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "failed");
}

TEST_CASE("cli: delay-only runs with a million workers", "[experiments][cli]") {
  const auto dir = scratch("delay_only");
  const Result r =
      run(fmt::format("run '{}/experiments/examples/delay_only_million.json' --out '{}'",
                      STRAGGLERSIM_SOURCE_DIR,
                      (dir / "out").string()),
          dir);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["iterations"] == 200);
  CHECK(summary["fast_path"] == true);
  // ErasureHead, d = 2, r = n/2, Model A: 2(1 + H_n − H_{n/2}) → 2(1 + ln 2) as n grows.
  CHECK(summary["mean_iteration_time"].get<double>() ==
        Approx(2.0 * (1.0 + std::log(2.0)))
            .margin(4.0 * summary["iteration_time_standard_error"].get<double>() + 1e-6));
}

TEST_CASE("cli: --version and --help", "[experiments][cli]") {
  const auto dir = scratch("version");
  const Result v = run("--version", dir);
  CHECK(v.status == 0);
  CHECK(v.out.rfind("stragglersim 0.1.0", 0) == 0);
  const Result h = run("run --help", dir);
  CHECK(h.status == 0);
  CHECK(h.out.find("--out") != std::string::npos);
}

TEST_CASE("cli: run refuses an --out folder holding another run unless --force",
          "[experiments][cli]") {
  const auto dir = scratch("force");
  const auto cfg = write_config(dir, config());
  auto other = config();
  other["seed"] = 4;
  const auto cfg2 = write_config(dir, other, "other.json");
  const auto out = dir / "out";
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir).status == 0);
  const std::string trace = slurp(out / "trace.csv");
  const std::string summary = slurp(out / "summary.json");
  // The same config again is the same run: allowed, same bytes.
  REQUIRE(run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir).status == 0);
  CHECK(slurp(out / "trace.csv") == trace);

  const Result refused = run(fmt::format("run '{}' --out '{}'", cfg2.string(), out.string()), dir);
  CHECK(refused.status == 2);
  CHECK(refused.err ==
        fmt::format("error: {}: holds another run; got run \"cfg\" (summary.json of another "
                    "config); expected an empty or new --out folder, or --force to replace its "
                    "trace.csv and summary.json\n",
                    out.string()));
  CHECK(slurp(out / "trace.csv") == trace);
  CHECK(slurp(out / "summary.json") == summary);

  const Result forced =
      run(fmt::format("run '{}' --out '{}' --force", cfg2.string(), out.string()), dir);
  CHECK(forced.status == 0);
  CHECK(slurp(out / "trace.csv") != trace);
  CHECK(nlohmann::json::parse(slurp(out / "summary.json"))["seed"] == 4);

  // A trace without summary (an unfinished run) cannot be told apart: refused too.
  fs::remove(out / "summary.json");
  CHECK(run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir).status == 2);
}

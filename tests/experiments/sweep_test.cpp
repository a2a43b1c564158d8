// Sweeps: grid expansion and seeds, config errors, independence from --jobs, resumption after
// SIGKILL and SIGINT (byte-identical to an uninterrupted sweep).

#include "experiments/sweep.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "experiments/config/config_error.h"
#include "models/base/random_stream.h"
#include "sim/backends/mpi_session.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using stragglersim::testing::slurp;

fs::path sweep_scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("sweep_test", name);
}

/// Every file under `root` (hidden ones included) by relative path, with its bytes (the measured
/// wall_clock_seconds of a summary.json masked).
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      const std::string text = slurp(e.path());
      files[fs::relative(e.path(), root).string()] =
          e.path().filename() == "summary.json" ? stragglersim::testing::mask_wall_clock(text)
                                                : text;
    }
  }
  return files;
}

nlohmann::json delay_only_base() {
  return nlohmann::json::parse(R"({
    "seed": 11, "workers": 12, "data": null,
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 6},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"iterations": 20}
  })");
}

nlohmann::json gradient_base() {
  return nlohmann::json::parse(R"({
    "seed": 5, "workers": 6,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 300, "features": 5},
    "loss": {"kind": "logistic", "l2": 0.001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 3},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 15},
    "target_loss": 0.6
  })");
}

int run_binary(const std::string& args) {
  const std::string cmd =
      fmt::format("{} {} > /dev/null 2>&1", stragglersim::testing::cli_binary(), args);
  return stragglersim::testing::exit_status(std::system(cmd.c_str()));
}

/// Starts `stragglersim sweep <sweep> --out <out> --jobs <jobs>` in the background.
pid_t spawn_sweep(const fs::path& sweep, const fs::path& out, int jobs) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string jobs_text = std::to_string(jobs);
    FILE* null = std::freopen("/dev/null", "w", stdout);
    null = std::freopen("/dev/null", "w", stderr);
    (void)null;
    execl(stragglersim::testing::cli_binary(),
          stragglersim::testing::cli_binary(),
          "sweep",
          sweep.c_str(),
          "--out",
          out.c_str(),
          "--jobs",
          jobs_text.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

int completed_runs(const fs::path& out) {
  int n = 0;
  std::error_code ec;
  if (!fs::is_directory(out / "runs", ec)) {
    return 0;
  }
  for (const auto& e : fs::directory_iterator(out / "runs", ec)) {
    n += fs::exists(e.path() / "summary.json") ? 1 : 0;
  }
  return n;
}

/// A sweep of 80 delay-only runs of a few milliseconds each: long enough to be killed midway.
fs::path write_slow_sweep(const fs::path& dir) {
  auto base = delay_only_base();
  base["workers"] = 1000;
  base["optimizer"]["iterations"] = 600;
  const nlohmann::json sweep = {{"base", base},
                                {"grid", {{"/code/d", {1, 2, 4, 5}}, {"/stopping/r", {500, 1000}}}},
                                {"repetitions", 10}};
  const auto path = dir / "slow.json";
  std::ofstream(path) << sweep.dump(2);
  return path;
}

}  // namespace

TEST_CASE("sweep: grid expands in sorted key order with repetitions innermost",
          "[experiments][sweep]") {
  const nlohmann::json sweep = {
      {"name", "order"},
      {"base", delay_only_base()},
      {"grid", {{"/workers", {12, 24}}, {"/code/d", {2, 3, 4}}, {"/target_loss", {1.5}}}},
      {"repetitions", 3}};
  const auto spec = expand_sweep(sweep, "order.json", ".");
  CHECK(spec.name == "order");
  REQUIRE(spec.parameters == std::vector<std::string>{"/code/d", "/target_loss", "/workers"});
  REQUIRE(spec.runs.size() == 18);
  // index = ((d · 1 + target) · 2 + workers) · 3 + repetition; the first key varies slowest.
  for (std::size_t i = 0; i < spec.runs.size(); ++i) {
    const auto& run = spec.runs[i];
    CHECK(run.index == i);
    CHECK(run.repetition == static_cast<int>(i % 3));
    CHECK(run.values[0] == std::vector<int>{2, 3, 4}[i / 6]);
    CHECK(run.values[1] == 1.5);
    CHECK(run.values[2] == std::vector<int>{12, 24}[i / 3 % 2]);
    CHECK(run.config["code"]["d"] == run.values[0]);
    CHECK(run.config["workers"] == run.values[2]);
    CHECK(run.config["target_loss"] == 1.5);  // a new key of an existing object is allowed
    // Repetition 0 keeps the base seed; repetition k derives it (top bit cleared).
    const std::uint64_t expected =
        run.repetition == 0
            ? 11U
            : stragglersim::derive_seed(11, static_cast<std::uint64_t>(run.repetition)) &
                  ((std::uint64_t{1} << 63U) - 1U);
    CHECK(run.seed == expected);
    CHECK(run.config["seed"] == expected);
  }
  CHECK(spec.runs[0].folder == "runs/code.d=2_target_loss=1.5_workers=12_rep0");
  CHECK(spec.runs[17].folder == "runs/code.d=4_target_loss=1.5_workers=24_rep2");
  CHECK(spec.runs[17].config["name"] == "order/code.d=4_target_loss=1.5_workers=24_rep2");
  CHECK(spec.runs[4].seed == spec.runs[1].seed);  // same repetition, other grid point
  CHECK(spec.runs[1].seed != spec.runs[2].seed);

  // No grid, one repetition: the base config itself, seed included.
  const auto single = expand_sweep({{"base", delay_only_base()}}, "one.json", ".");
  REQUIRE(single.runs.size() == 1);
  CHECK(single.runs[0].folder == "runs/rep0");
  auto expected = delay_only_base();
  expected["name"] = "one/rep0";
  CHECK(single.runs[0].config == expected);
}

TEST_CASE("sweep: bad grid pointers and values are config errors with exact messages",
          "[experiments][sweep]") {
  auto sweep_with = [](const nlohmann::json& grid) {
    return nlohmann::json{{"base", delay_only_base()}, {"grid", grid}};
  };
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/dd/x", {1}}}), "s.json", "."),
                    "s.json:/grid/~1code~1dd~1x: no such place in the base config; got "
                    "\"/code/dd/x\"; expected a pointer to an existing value or to a new key of an "
                    "existing object");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"code/d", {1}}}), "s.json", "."),
                    "s.json:/grid/code~1d: not a JSON pointer; got \"code/d\"; expected a pointer "
                    "into the base config such as \"/code/d\"");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/d", 3}}), "s.json", "."),
                    "s.json:/grid/~1code~1d: wrong type; got 3; expected a non-empty array of "
                    "values, such as [2, 3, 5]");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/d", nlohmann::json::array()}}), "s.json", "."),
                    "s.json:/grid/~1code~1d: wrong type; got []; expected a non-empty array of "
                    "values, such as [2, 3, 5]");
  CHECK_THROWS_WITH(
      expand_sweep({{"base", delay_only_base()}, {"repetitions", 0}}, "s.json", "."),
      "s.json:/repetitions: out of range; got 0; expected an integer in [1, 1000000]");
  CHECK_THROWS_WITH(expand_sweep({{"grid", nlohmann::json::object()}}, "s.json", "."),
                    "s.json:/base: missing required key; expected a run config object (or "
                    "\"base_file\")");
  CHECK_THROWS_WITH(
      expand_sweep(
          {{"base", delay_only_base()}, {"grdi", nlohmann::json::object()}}, "s.json", "."),
      Catch::Matchers::StartsWith("s.json:/grdi: unknown key"));

  // A bad grid value fails validation before anything is written, naming the run.
  const auto dir = sweep_scratch("bad_value");
  const auto spec =
      expand_sweep(sweep_with({{"/code/d", {2, 5}}, {"/stopping/r", {6, 13}}}), "s.json", dir);
  CHECK_THROWS_WITH(run_sweep(spec, dir / "out", SweepOptions{}),
                    "s.json run 1 (/code/d = 2, /stopping/r = 13, repetition 0):/stopping/r: out "
                    "of range; got 13; expected an integer in [1, 12]");
  CHECK_FALSE(fs::exists(dir / "out"));

  // The CLI prints it and exits 2, writing nothing.
  const auto path = dir / "bad.json";
  std::ofstream(path) << sweep_with({{"/code/d", {2, 5}}}).dump();
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", path.string(), (dir / "cli").string())) ==
        2);
  CHECK_FALSE(fs::exists(dir / "cli"));
}

TEST_CASE("sweep: results and index are byte-identical for jobs 1 and jobs 2",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("jobs");
  const nlohmann::json sweep = {{"base", gradient_base()},
                                {"grid", {{"/code/d", {1, 2, 3}}, {"/stopping/r", {3, 6}}}},
                                {"repetitions", 2}};
  const auto path = dir / "grad.json";
  std::ofstream(path) << sweep.dump(2);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 1", path.string(), (dir / "j1").string())) == 0);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", path.string(), (dir / "j2").string())) == 0);
  const auto one = tree(dir / "j1");
  // index.csv, summary.csv, traces.csv, sweep_spec.json, the one f* cache entry (every run has
  // the same data) + config, trace, summary, workers per run
  CHECK(one.size() == 5 + 12 * 4);
  CHECK(one.at("summary.csv") == tree(dir / "j2").at("summary.csv"));
  CHECK(one.at("traces.csv") == tree(dir / "j2").at("traces.csv"));
  CHECK(one == tree(dir / "j2"));

  const std::string index = one.at("index.csv");
  CHECK(index.rfind("index,repetition,seed,/code/d,/stopping/r,status,iterations,total_time,"
                    "mean_iteration_time,final_loss,best_loss,time_to_target,final_test_metric,"
                    "f_star,final_suboptimality,time_to_1e-1,time_to_1e-2,time_to_1e-3,"
                    "folder\n0,0,5,1,3,ok,15,",
                    0) == 0);
  CHECK(std::count(index.begin(), index.end(), '\n') == 13);
  // Each row repeats its run's summary: spot-check the last one.
  const auto summary =
      nlohmann::json::parse(one.at("runs/code.d=3_stopping.r=6_rep1/summary.json"));
  const std::string last_row = index.substr(index.rfind('\n', index.size() - 2) + 1);
  CHECK(last_row.rfind(fmt::format("11,1,{},3,6,ok,15,{},",
                                   summary["seed"].get<std::uint64_t>(),
                                   summary["total_time"].get<double>()),
                       0) == 0);
}

TEST_CASE("sweep: a sweep killed with SIGKILL and rerun is byte-identical to an uninterrupted one",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("sigkill");
  const auto sweep = write_slow_sweep(dir);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", sweep.string(), (dir / "whole").string())) == 0);
  const auto whole = tree(dir / "whole");
  REQUIRE(whole.size() == 4 + 80 * 3);

  const auto out = dir / "killed";
  const pid_t pid = spawn_sweep(sweep, out, 2);
  REQUIRE(pid > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (completed_runs(out) < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  const int done = completed_runs(out);
  CHECK(done >= 5);
  WARN("runs complete when killed: " << done << " of 80");
  CHECK_FALSE(fs::exists(out / "index.csv"));
  // A temporary file of a write the kill interrupted (as write_file_atomically names them).
  fs::create_directories(out / "runs" / "code.d=5_stopping.r=1000_rep9");
  std::ofstream(out / "runs" / "code.d=5_stopping.r=1000_rep9" / ".trace.csv.tmp-99999") << "0,0,";

  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}' --jobs 2", sweep.string(), out.string())) ==
          0);
  CHECK(tree(out) == whole);
  fs::remove_all(dir);
}

TEST_CASE("sweep: SIGINT stops the sweep with status 130 and a rerun completes it",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("sigint");
  const auto sweep = write_slow_sweep(dir);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 1", sweep.string(), (dir / "whole").string())) == 0);
  const auto out = dir / "interrupted";
  const pid_t pid = spawn_sweep(sweep, out, 1);
  REQUIRE(pid > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (completed_runs(out) < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(completed_runs(out) < 80);
  CHECK_FALSE(fs::exists(out / "index.csv"));
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}' --jobs 2", sweep.string(), out.string())) ==
          0);
  CHECK(tree(out) == tree(dir / "whole"));
  fs::remove_all(dir);
}

TEST_CASE("sweep: folder names come from the grid point and survive grid extension",
          "[experiments][sweep]") {
  const auto small =
      expand_sweep({{"base", delay_only_base()}, {"grid", {{"/code/d", {2, 3}}}}}, "s.json", ".");
  const auto large = expand_sweep(
      {{"base", delay_only_base()}, {"grid", {{"/code/d", {1, 2, 3, 4}}}}, {"repetitions", 2}},
      "s.json",
      ".");
  REQUIRE(small.runs.size() == 2);
  REQUIRE(large.runs.size() == 8);
  // d = 2, repetition 0 is index 0 of the small sweep and index 2 of the large one.
  CHECK(small.runs[0].folder == "runs/code.d=2_rep0");
  CHECK(large.runs[2].folder == small.runs[0].folder);
  CHECK(large.runs[2].config == small.runs[0].config);
  CHECK(large.runs[4].folder == small.runs[1].folder);
  CHECK(large.runs[5].folder == "runs/code.d=3_rep1");

  // Values the slug cannot keep whole add 8 hex digits of FNV-1a over the point's values, so
  // the string "2" and the number 2 (and two long names with one prefix) get distinct folders.
  const auto odd = expand_sweep(
      {{"base", delay_only_base()}, {"grid", {{"/label", {2, "2", "a/b"}}}}}, "s.json", ".");
  REQUIRE(odd.runs.size() == 3);
  CHECK(odd.runs[0].folder == "runs/label=2_rep0");
  auto fnv = [](const std::string& text) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    return fmt::format("{:016x}", h).substr(0, 8);
  };
  CHECK(odd.runs[1].folder == "runs/label=2_rep0-h" + fnv(R"(["2"])"));
  CHECK(odd.runs[2].folder == "runs/label=a_b_rep0-h" + fnv(R"(["a/b"])"));
}

namespace {

fs::path write_sweep(const fs::path& path, const nlohmann::json& sweep) {
  std::ofstream(path) << sweep.dump(2);
  return path;
}

nlohmann::json small_delay_sweep(const nlohmann::json& d_values, int repetitions) {
  return {{"name", "ext"},
          {"base", delay_only_base()},
          {"grid", {{"/code/d", d_values}}},
          {"repetitions", repetitions}};
}

}  // namespace

TEST_CASE("sweep: another sweep into a used folder is refused and changes nothing",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("identity");
  const auto out = dir / "out";
  const auto first = write_sweep(dir / "first.json", small_delay_sweep({2, 3}, 2));
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", first.string(), out.string())) == 0);
  const auto before = tree(out);

  // Same grid, another base (more iterations): every shared run differs.
  auto other = small_delay_sweep({2, 3}, 2);
  other["base"]["optimizer"]["iterations"] = 30;
  const auto second = write_sweep(dir / "second.json", other);
  const auto spec = stragglersim::experiments::expand_sweep_file(second);
  CHECK_THROWS_WITH(
      run_sweep(spec, out, SweepOptions{}),
      fmt::format("{}: holds sweep \"ext\" of 4 runs (0 with the same config as here, 4 with "
                  "another); got {}; expected the same sweep or one that extends its grid or "
                  "repetitions; to proceed, give another --out folder or delete {} to start over",
                  out.string(),
                  second.string(),
                  out.string()));
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", second.string(), out.string())) == 2);
  // Another grid key: no run in common.
  const auto third = write_sweep(
      dir / "third.json",
      {{"name", "ext"}, {"base", delay_only_base()}, {"grid", {{"/stopping/r", {5, 6}}}}});
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", third.string(), out.string())) == 2);
  CHECK(tree(out) == before);

  // A non-empty folder that is no sweep folder is refused too, and left alone.
  fs::create_directories(dir / "plain");
  std::ofstream(dir / "plain" / "notes.txt") << "mine";
  CHECK(run_binary(
            fmt::format("sweep '{}' --out '{}'", first.string(), (dir / "plain").string())) == 2);
  CHECK(tree(dir / "plain").size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("sweep: extending the grid and repetitions keeps the runs done and names the dropped",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("extend");
  const auto out = dir / "out";
  const auto small = write_sweep(dir / "small.json", small_delay_sweep({2, 3}, 1));
  const auto large = write_sweep(dir / "large.json", small_delay_sweep({1, 2, 3, 4}, 2));
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", small.string(), out.string())) == 0);
  const auto small_tree = tree(out);

  const auto spec = stragglersim::experiments::expand_sweep_file(large);
  const auto result = run_sweep(spec, out, SweepOptions{});
  CHECK(result.total == 8);
  CHECK(result.skipped == 2);
  CHECK(result.ran == 6);
  CHECK(result.stale.empty());
  const auto extended = tree(out);
  for (const auto& [name, bytes] : small_tree) {
    if (name.rfind("runs/", 0) == 0) {
      CHECK(extended.at(name) == bytes);  // kept, not rerun
    }
  }
  // The same as the large sweep into a fresh folder.
  REQUIRE(run_binary(
              fmt::format("sweep '{}' --out '{}'", large.string(), (dir / "fresh").string())) == 0);
  CHECK(extended == tree(dir / "fresh"));

  // Back to the small sweep: its runs are all there; the others are named, kept, not indexed.
  const auto back = run_sweep(stragglersim::experiments::expand_sweep_file(small), out, {});
  CHECK(back.ran == 0);
  CHECK(back.stale == std::vector<std::string>{"runs/code.d=1_rep0",
                                               "runs/code.d=1_rep1",
                                               "runs/code.d=2_rep1",
                                               "runs/code.d=3_rep1",
                                               "runs/code.d=4_rep0",
                                               "runs/code.d=4_rep1"});
  CHECK(slurp(out / "index.csv") == small_tree.at("index.csv"));
  CHECK(fs::exists(out / "runs/code.d=4_rep1/summary.json"));

  // Switching the folder to the large sweep again through a shard drops the small sweep's
  // index.csv (it no longer describes the folder); the merge writes the large one.
  SweepOptions half;
  half.shard = {0, 2};
  CHECK(run_sweep(spec, out, half).ran == 0);
  CHECK_FALSE(fs::exists(out / "index.csv"));
  CHECK(merge_sweep(spec, out).failed == 0);
  CHECK(tree(out) == tree(dir / "fresh"));
  fs::remove_all(dir);
}

TEST_CASE("sweep: three shards then merge equal one full sweep byte for byte",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("shards");
  const auto path = write_sweep(dir / "grad.json",
                                {{"base", gradient_base()},
                                 {"grid", {{"/code/d", {1, 2, 3}}, {"/stopping/r", {3, 6}}}},
                                 {"repetitions", 2}});
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 1", path.string(), (dir / "full").string())) == 0);
  const auto out = dir / "sharded";
  const auto spec = stragglersim::experiments::expand_sweep_file(path);
  std::size_t ran = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    SweepOptions options;
    options.shard = {i, 3};
    options.f_star_cache = out / "f_star_cache";  // as the command line's shards share it
    const auto result = run_sweep(spec, out, options);
    CHECK(result.ran == 4);  // index mod 3 == i: 12 runs, 4 each
    ran += result.ran;
    CHECK_FALSE(fs::exists(out / "index.csv"));
    if (i == 1) {
      // Merging before every shard is done is refused, writing nothing.
      CHECK_THROWS_WITH(merge_sweep(spec, out),
                        fmt::format("{}: 4 of 12 runs are not complete (the first is "
                                    "runs/code.d=1_stopping.r=6_rep0); got --merge; expected "
                                    "every shard finished: rerun the missing shards, or the sweep "
                                    "without --shard to run the rest",
                                    out.string()));
    }
  }
  CHECK(ran == 12);
  // A resumed shard runs nothing: the share of a run does not depend on what is done.
  SweepOptions again;
  again.shard = {1, 3};
  CHECK(run_sweep(spec, out, again).ran == 0);
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}' --merge", path.string(), out.string())) == 0);
  CHECK(tree(out) == tree(dir / "full"));
  CHECK(run_binary(fmt::format(
            "sweep '{}' --out '{}' --shard 3/3", path.string(), (dir / "x").string())) == 2);
  fs::remove_all(dir);
}

TEST_CASE("sweep: --shard accepts i/N with 0 <= i < N and nothing else", "[experiments][sweep]") {
  // Each refusal exits 2 before any run, naming the option, the text and the accepted form.
  const auto dir = sweep_scratch("bad_shards");
  const auto path =
      write_sweep(dir / "grad.json", {{"base", gradient_base()}, {"grid", {{"/code/d", {1, 2}}}}});
  for (const std::string shard : {"3/3",
                                  "4/3",
                                  "1/0",
                                  "0/0",
                                  "-1/3",
                                  "+1/3",
                                  "1/-3",
                                  "1/2/3",
                                  "a/3",
                                  "1/b",
                                  "1/",
                                  "/3",
                                  "13",
                                  "1 /3",
                                  "1/3 ",
                                  "0x1/3",
                                  "18446744073709551616/2"}) {
    INFO(shard);
    const auto r = stragglersim::testing::run_stragglersim(
        fmt::format(
            "sweep '{}' --out '{}' --shard '{}'", path.string(), (dir / "out").string(), shard),
        dir);
    CHECK(r.status == 2);
    CHECK(r.err.find(fmt::format("--shard: not a shard; got \"{}\"; expected i/N with 0 <= i < N",
                                 shard)) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out" / "runs"));
  }
  fs::remove_all(dir);
}

TEST_CASE("sweep: an mpi-backend run is refused before anything runs", "[experiments][sweep]") {
  // Its workers are processes of their own mpirun: inside a sweep it could only fail.
  const auto dir = sweep_scratch("mpi_refused");
  auto base = gradient_base();
  base["backend"] = {{"kind", "mpi"}};
  const auto spec = expand_sweep({{"base", base}, {"grid", {{"/seed", {1, 2}}}}}, "m.json", dir);
  const std::string expected =
      stragglersim::sim::mpi_compiled_in()
          ? "m.json run 0 (/seed = 1, repetition 0):/backend/kind: the mpi backend runs one "
            "process per worker under its own mpirun; got \"mpi\" in a sweep; expected "
            "\"simulated\" or \"threads\", or the run on its own (mpirun -np workers+1 "
            "stragglersim run)"
          : "m.json run 0 (/seed = 1, repetition 0):/backend/kind: the mpi backend is not "
            "compiled in (build with Open MPI: libopenmpi-dev, cmake "
            "-DSTRAGGLERSIM_WITH_MPI=ON); got \"mpi\"; expected \"simulated\" or \"threads\"";
  CHECK_THROWS_WITH(run_sweep(spec, dir / "out", SweepOptions{}), expected);
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("sweep: threads-backend runs never overlap under jobs 2", "[experiments][sweep]") {
  // Four threads-backend runs of about 0.2 s of real waiting each: run one at a time, the sweep
  // lasts at least the sum of their real times; two at a time it would last about half of it.
  const auto dir = sweep_scratch("threads_alone");
  auto base = nlohmann::json::parse(R"({
    "seed": 7, "workers": 12, "partitions": 12,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 600, "features": 20},
    "loss": {"kind": "logistic", "l2": 0.0001},
    "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 5},
    "backend": {"kind": "threads", "seconds_per_unit": 0.01, "timeout": 5.0}
  })");
  const auto spec =
      expand_sweep({{"base", base}, {"grid", {{"/seed", {1, 2, 3, 4}}}}}, "t.json", dir);
  SweepOptions options;
  options.jobs = 2;
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_sweep(spec, dir / "out", options);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(result.ran == 4);
  double sum = 0.0;
  for (const auto& run : spec.runs) {
    sum +=
        nlohmann::json::parse(slurp(dir / "out" / run.folder / "summary.json"))["total_real_time"]
            .get<double>();
  }
  CHECK(sum > 0.4);
  CHECK(wall >= sum);
  fs::remove_all(dir);
}

TEST_CASE("sweep: a baseline adds the speedup of every run against its baseline run",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("baseline");
  const nlohmann::json sweep = {{"base", gradient_base()},
                                {"grid", {{"/code/d", {1, 2, 3}}, {"/stopping/r", {3, 6}}}},
                                {"baseline", {{"/code/d", 1}}},
                                {"repetitions", 2}};
  const auto spec = expand_sweep(sweep, "b.json", ".");
  REQUIRE(spec.has_baseline);
  for (const auto& run : spec.runs) {
    // Same /stopping/r and repetition, /code/d = 1.
    const auto& b = spec.runs[run.baseline];
    CHECK(b.values[0] == 1);
    CHECK(b.values[1] == run.values[1]);
    CHECK(b.repetition == run.repetition);
  }
  const auto path = dir / "b.json";
  std::ofstream(path) << sweep.dump(2);
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", path.string(), (dir / "out").string())) ==
          0);
  std::istringstream index(slurp(dir / "out" / "index.csv"));
  std::string line;
  std::getline(index, line);
  CHECK(line ==
        "index,repetition,seed,/code/d,/stopping/r,status,iterations,total_time,"
        "mean_iteration_time,final_loss,best_loss,time_to_target,final_test_metric,f_star,"
        "final_suboptimality,time_to_1e-1,time_to_1e-2,time_to_1e-3,baseline_index,"
        "speedup_mean_iteration_time,speedup_time_to_1e-1,speedup_time_to_1e-2,"
        "speedup_time_to_1e-3,speedup_time_to_target,folder");
  const auto cell = [](const std::string& row, std::size_t column) {
    std::stringstream s(row);
    std::string c;
    for (std::size_t i = 0; i <= column; ++i) {
      std::getline(s, c, ',');
    }
    return c;
  };
  std::size_t rows = 0;
  while (std::getline(index, line)) {
    const auto& run = spec.runs[rows++];
    const auto mine = nlohmann::json::parse(slurp(dir / "out" / run.folder / "summary.json"));
    const auto theirs =
        nlohmann::json::parse(slurp(dir / "out" / spec.runs[run.baseline].folder / "summary.json"));
    CHECK(cell(line, 18) == std::to_string(run.baseline));
    CHECK(cell(line, 19) == fmt::format("{}",
                                        theirs["mean_iteration_time"].get<double>() /
                                            mine["mean_iteration_time"].get<double>()));
    const auto& a = mine["time_to_relative_suboptimality"]["1e-1"];
    const auto& b = theirs["time_to_relative_suboptimality"]["1e-1"];
    CHECK(cell(line, 20) == (a.is_number() && b.is_number() && a.get<double>() > 0.0
                                 ? fmt::format("{}", b.get<double>() / a.get<double>())
                                 : std::string()));
    if (run.baseline == run.index) {
      CHECK(cell(line, 19) == "1");
    }
  }
  CHECK(rows == 12);
}

TEST_CASE("sweep: a baseline must name grid keys and grid values", "[experiments][sweep]") {
  const auto with = [](const nlohmann::json& baseline) {
    return nlohmann::json{{"base", gradient_base()},
                          {"grid", {{"/code/d", {1, 2}}, {"/stopping/r", {3, 6}}}},
                          {"baseline", baseline}};
  };
  CHECK_THROWS_WITH(expand_sweep(with({{"/code/s", 1}}), "b.json", "."),
                    "b.json:/baseline/~1code~1s: not a grid key; got \"/code/s\"; expected one of "
                    "the grid keys: /code/d, /stopping/r");
  CHECK_THROWS_WITH(expand_sweep(with({{"/code/d", 3}}), "b.json", "."),
                    "b.json:/baseline/~1code~1d: not one of the grid's values for this key; got 3; "
                    "expected one of [1,2]");
  CHECK_THROWS_WITH(expand_sweep(with(nlohmann::json::object()), "b.json", "."),
                    "b.json:/baseline: empty baseline; got {}; expected an object naming at least "
                    "one grid key and its baseline value");
  nlohmann::json none = with({{"/code/d", 1}});
  none.erase("baseline");
  const auto plain = expand_sweep(none, "b.json", ".");
  CHECK_FALSE(plain.has_baseline);
  for (const auto& run : plain.runs) {
    CHECK(run.baseline == run.index);
  }
}

namespace {

/// The rows of a CSV file without quoted cells, each keyed by the header's names.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  const auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream s(text);
    while (std::getline(s, cell, ',')) {
      cells.push_back(cell);
    }
    if (!text.empty() && text.back() == ',') {
      cells.emplace_back();
    }
    return cells;
  };
  const auto header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) {
      row[header[i]] = cells[i];
    }
    rows.push_back(row);
  }
  return rows;
}

/// A logistic base with a held-out test set: the split, like the data, follows the data seed.
nlohmann::json split_base() {
  auto base = gradient_base();
  base["data"]["test_fraction"] = 0.25;
  base["target_loss"] = 0.45;
  return base;
}

/// Three schemes (uncoded, FRC d = 2 waiting for half the workers, d = 3 for all) × 5 seeds.
nlohmann::json three_scheme_sweep() {
  return nlohmann::json::parse(R"({
    "name": "schemes",
    "schemes": [
      {"name": "uncoded", "/code": {"kind": "uncoded"}, "/stopping": {"rule": "all"}},
      {"name": "frc2", "/code": {"kind": "frc", "d": 2}, "/stopping": {"rule": "first_r", "r": 3}},
      {"name": "frc3", "/code": {"kind": "frc", "d": 3}, "/stopping": {"rule": "first_r", "r": 4}}
    ],
    "baseline": "uncoded",
    "repetitions": 5
  })");
}

double cell_number(const std::map<std::string, std::string>& row, const std::string& key) {
  INFO(key);
  REQUIRE(row.count(key) == 1);
  REQUIRE(!row.at(key).empty());
  return std::stod(row.at(key));
}

}  // namespace

TEST_CASE("sweep: repetitions keep the data seed so f* is the same to the bit",
          "[experiments][sweep][sweep_seeds]") {
  const auto dir = sweep_scratch("data_seed");
  nlohmann::json sweep = {{"base", split_base()}, {"repetitions", 3}};
  const auto spec = expand_sweep(sweep, "d.json", ".");
  REQUIRE(spec.runs.size() == 3);
  CHECK_FALSE(spec.runs[0].config.contains("data_seed"));  // seed 5 = data seed 5: as a run
  CHECK(spec.runs[1].config["data_seed"] == 5);
  CHECK(spec.runs[2].config["data_seed"] == 5);
  CHECK(spec.runs[1].seed == (stragglersim::derive_seed(5, 1) & ((std::uint64_t{1} << 63U) - 1U)));
  write_sweep(dir / "d.json", sweep);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}'", (dir / "d.json").string(), (dir / "keep").string())) == 0);
  std::vector<nlohmann::json> kept;
  for (const auto& run : spec.runs) {
    kept.push_back(nlohmann::json::parse(slurp(dir / "keep" / run.folder / "summary.json")));
  }
  CHECK(kept[0]["f_star"].get<double>() == kept[1]["f_star"].get<double>());
  CHECK(kept[0]["f_star"].get<double>() == kept[2]["f_star"].get<double>());
  // The delays still differ.
  CHECK(kept[0]["total_time"].get<double>() != kept[1]["total_time"].get<double>());

  // "vary_data_seed": every repetition draws its data and split (the behaviour before the key).
  sweep["vary_data_seed"] = true;
  const auto varied = expand_sweep(sweep, "d.json", ".");
  for (const auto& run : varied.runs) {
    CHECK_FALSE(run.config.contains("data_seed"));
  }
  write_sweep(dir / "v.json", sweep);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}'", (dir / "v.json").string(), (dir / "vary").string())) == 0);
  const auto other =
      nlohmann::json::parse(slurp(dir / "vary" / varied.runs[1].folder / "summary.json"));
  CHECK(other["f_star"].get<double>() != kept[1]["f_star"].get<double>());
  // Same delay seed: the iteration times agree, only the data differ.
  CHECK(other["total_time"].get<double>() == kept[1]["total_time"].get<double>());
}

TEST_CASE("run: data_seed defaults to the seed and seeds the data apart from the delays",
          "[experiments][sweep][sweep_seeds]") {
  const auto dir = sweep_scratch("data_seed_run");
  auto config = split_base();
  std::ofstream(dir / "plain.json") << config.dump(2);
  config["data_seed"] = 5;
  std::ofstream(dir / "same.json") << config.dump(2);
  config["data_seed"] = 6;
  std::ofstream(dir / "other.json") << config.dump(2);
  for (const char* name : {"plain", "same", "other"}) {
    REQUIRE(run_binary(fmt::format("run '{}' --out '{}'",
                                   (dir / fmt::format("{}.json", name)).string(),
                                   (dir / name).string())) == 0);
  }
  CHECK(slurp(dir / "plain" / "trace.csv") == slurp(dir / "same" / "trace.csv"));
  const auto plain = nlohmann::json::parse(slurp(dir / "plain" / "summary.json"));
  const auto other = nlohmann::json::parse(slurp(dir / "other" / "summary.json"));
  CHECK_FALSE(plain["config"].contains("data_seed"));
  CHECK(other["config"]["data_seed"] == 6);
  CHECK(other["f_star"].get<double>() != plain["f_star"].get<double>());
  CHECK(other["total_time"].get<double>() == plain["total_time"].get<double>());
}

TEST_CASE("sweep: schemes are zipped tuples crossed with the grid",
          "[experiments][sweep][sweep_schemes]") {
  auto sweep = three_scheme_sweep();
  sweep["base"] = split_base();
  sweep["grid"] = {{"/optimizer/iterations", {10, 15}}};
  sweep["repetitions"] = 2;
  const auto spec = expand_sweep(sweep, "s.json", ".");
  REQUIRE(spec.schemes == std::vector<std::string>{"uncoded", "frc2", "frc3"});
  REQUIRE(spec.runs.size() == 3 * 2 * 2);
  for (const auto& run : spec.runs) {
    const std::size_t scheme = run.index / 4;
    CHECK(run.scheme == spec.schemes[scheme]);
    CHECK(run.values[0] == std::vector<int>{10, 15}[run.index / 2 % 2]);
    CHECK(run.config["optimizer"]["iterations"] == run.values[0]);
    CHECK(run.config["code"] == sweep["schemes"][scheme]["/code"]);
    CHECK(run.config["stopping"] == sweep["schemes"][scheme]["/stopping"]);
    // The baseline: uncoded at the same grid point and repetition.
    CHECK(run.baseline == run.index % 4);
  }
  CHECK(spec.runs[5].folder == "runs/scheme=frc2_optimizer.iterations=10_rep1");
  CHECK(spec.runs[5].config["name"] == "schemes/scheme=frc2_optimizer.iterations=10_rep1");

  const auto fails = [&](nlohmann::json bad) {
    bad["base"] = split_base();
    try {
      (void)expand_sweep(bad, "s.json", ".");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto twice = three_scheme_sweep();
  twice["schemes"][2]["name"] = "frc2";
  CHECK(fails(twice) ==
        "s.json:/schemes/2/name: not a new scheme name; got \"frc2\"; expected a non-empty name "
        "unique here");
  auto clash = three_scheme_sweep();
  clash["grid"] = {{"/code", {nlohmann::json{{"kind", "uncoded"}}}}};
  CHECK(fails(clash) ==
        "s.json:/schemes/0/~1code: also a grid key; got \"/code\"; expected a pointer the grid "
        "does not vary");
  auto nowhere = three_scheme_sweep();
  nowhere["schemes"][1]["/nope/deeper"] = 1;
  CHECK(fails(nowhere) ==
        "s.json:/schemes/1/~1nope~1deeper: no such place in the base config; got "
        "\"/nope/deeper\"; expected a pointer to an existing value or to a new key of an existing "
        "object");
  auto unknown = three_scheme_sweep();
  unknown["baseline"] = "coded";
  CHECK(fails(unknown) ==
        "s.json:/baseline: not a scheme name; got \"coded\"; expected one of the schemes: "
        "uncoded, frc2, frc3");
  auto empty = three_scheme_sweep();
  empty["schemes"] = nlohmann::json::array();
  CHECK(fails(empty).rfind("s.json:/schemes: wrong type; got []; expected a non-empty array", 0) ==
        0);
}

TEST_CASE("sweep: summary.csv holds the mean and t interval of each point and its speedup",
          "[experiments][sweep][sweep_summary]") {
  const auto dir = sweep_scratch("summary");
  auto sweep = three_scheme_sweep();
  sweep["base"] = split_base();
  const auto spec = expand_sweep(sweep, "s.json", ".");
  write_sweep(dir / "s.json", sweep);
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}' --jobs 2",
                                 (dir / "s.json").string(),
                                 (dir / "out").string())) == 0);
  std::vector<nlohmann::json> s;
  for (const auto& run : spec.runs) {
    s.push_back(nlohmann::json::parse(slurp(dir / "out" / run.folder / "summary.json")));
  }
  const auto rows = read_csv(dir / "out" / "summary.csv");
  REQUIRE(rows.size() == 3);
  // The 97.5 % quantile of Student's t with 4 degrees of freedom (tables: 2.776445105).
  const double t4 = 2.7764451051977987;
  for (std::size_t p = 0; p < 3; ++p) {
    const auto& row = rows[p];
    CHECK(row.at("scheme") == spec.schemes[p]);
    CHECK(row.at("runs") == "5");
    CHECK(row.at("failed") == "0");
    for (const char* metric : {"final_loss", "total_time", "f_star"}) {
      double mean = 0.0;
      for (std::size_t k = 0; k < 5; ++k) {
        mean += s[p * 5 + k][metric].get<double>() / 5.0;
      }
      double ss = 0.0;
      for (std::size_t k = 0; k < 5; ++k) {
        ss += std::pow(s[p * 5 + k][metric].get<double>() - mean, 2);
      }
      const double se = std::sqrt(ss / 4.0 / 5.0);
      const std::string m = metric;
      CHECK(row.at(m + "_n") == "5");
      CHECK(cell_number(row, m + "_mean") == Approx(mean).epsilon(1e-13));
      CHECK(cell_number(row, m + "_se") == Approx(se).epsilon(1e-9).margin(1e-15));
      CHECK(cell_number(row, m + "_ci_low") == Approx(mean - t4 * se).epsilon(1e-12));
      CHECK(cell_number(row, m + "_ci_high") == Approx(mean + t4 * se).epsilon(1e-12));
    }
    // One data set for every run: f* is the same to the bit, its standard error 0.
    CHECK(row.at("f_star_se") == "0");
    // Speedup of the total time against uncoded, paired by repetition; delta-method interval.
    double b = 0.0;
    double y = 0.0;
    for (std::size_t k = 0; k < 5; ++k) {
      b += s[k]["total_time"].get<double>() / 5.0;
      y += s[p * 5 + k]["total_time"].get<double>() / 5.0;
    }
    const double ratio = b / y;
    double var = 0.0;
    for (std::size_t k = 0; k < 5; ++k) {
      const double d =
          s[k]["total_time"].get<double>() - ratio * s[p * 5 + k]["total_time"].get<double>();
      var += d * d / 4.0;
    }
    const double se = std::sqrt(var / 5.0) / y;
    CHECK(cell_number(row, "speedup_total_time") == Approx(ratio).epsilon(1e-13));
    CHECK(cell_number(row, "speedup_total_time_ci_low") ==
          Approx(ratio - t4 * se).epsilon(1e-9).margin(1e-12));
    CHECK(cell_number(row, "speedup_total_time_ci_high") ==
          Approx(ratio + t4 * se).epsilon(1e-9).margin(1e-12));
  }
  CHECK(rows[0].at("speedup_total_time") == "1");
  CHECK(cell_number(rows[1], "speedup_total_time") > 1.0);  // waiting for half is faster

  // traces.csv: every trace row of every run, in index order, with f* and f − f*.
  const auto traces = read_csv(dir / "out" / "traces.csv");
  std::size_t at = 0;
  for (const auto& run : spec.runs) {
    std::istringstream trace(slurp(dir / "out" / run.folder / "trace.csv"));
    std::string line;
    std::getline(trace, line);
    while (std::getline(trace, line)) {
      REQUIRE(at < traces.size());
      const auto& row = traces[at++];
      CHECK(row.at("scheme") == run.scheme);
      CHECK(row.at("rep") == std::to_string(run.repetition));
      CHECK(row.at("seed") == std::to_string(run.seed));
      CHECK(line.rfind(row.at("iteration") + "," + row.at("time") + ",", 0) == 0);
      const double f_star = s[run.index]["f_star"].get<double>();
      CHECK(cell_number(row, "f_star") == f_star);
      CHECK(cell_number(row, "gap") == Approx(cell_number(row, "loss") - f_star).margin(1e-15));
    }
  }
  CHECK(at == traces.size());
  CHECK(slurp(dir / "out" / "traces.csv")
            .rfind("scheme,rep,seed,iteration,time,loss,test_loss,test_metric,f_star,gap\n", 0) ==
        0);

  // Rebuilt on resume: deleted, then rerun with every run complete.
  fs::remove(dir / "out" / "summary.csv");
  const std::string before = slurp(dir / "out" / "traces.csv");
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}' --jobs 1",
                                 (dir / "s.json").string(),
                                 (dir / "out").string())) == 0);
  CHECK(read_csv(dir / "out" / "summary.csv") == rows);
  CHECK(slurp(dir / "out" / "traces.csv") == before);
}

}  // namespace stragglersim::experiments

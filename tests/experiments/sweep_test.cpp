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
#include "tests/experiments/sweep_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using stragglersim::testing::slurp;

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

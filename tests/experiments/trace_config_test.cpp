// Trace-driven delays end to end: the MPI backend's worker_times.csv read back, `"kind": "trace"`
// configs, and the command line's exit status and file:line messages for bad trace files.

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/uniform_real_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/run_output.h"
#include "fit/delay_trace.h"
#include "models/base/random_stream.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::TempDir;
using Result = testing::CommandResult;

TEST_CASE("delay_trace: reads the MPI backend's worker_times.csv, censored rows as +inf",
          "[sim][trace]") {
  const TempDir dir("delay_trace");
  // Iteration 2's worker 1 never finished (abandoned): an empty field in the file.
  const std::vector<sim::WorkerTime> times{
      {1, 0, 0.125}, {1, 1, 0.5}, {1, 2, 0.25}, {2, 2, 1.5}, {2, 0, 0.0625}};
  const std::string text = worker_times_csv(times, 2, 3);
  REQUIRE(text ==
          "iteration,worker,seconds\n1,0,0.125\n1,1,0.5\n1,2,0.25\n2,0,0.0625\n2,1,\n2,2,1.5\n");
  const sim::DelayTrace t = sim::read_delay_trace(dir.write("worker_times.csv", text));
  CHECK(t.workers == 3);
  CHECK(t.iterations == std::vector<std::int64_t>{1, 2});
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(t.per_iteration ==
        std::vector<std::vector<double>>{{0.125, 0.5, 0.25}, {0.0625, inf, 1.5}});
  CHECK(t.censored_lines == std::vector<std::int64_t>{6});
}

namespace fs = std::filesystem;
using testing::run_stragglersim;
using testing::scratch_dir;
using testing::slurp;

/// A delay-only config of n workers around `delay` (uncoded unless `code` is given).
nlohmann::json trace_config(int workers,
                            const nlohmann::json& delay,
                            const nlohmann::json& stopping,
                            int iterations,
                            std::uint64_t seed = 3) {
  nlohmann::json c = {{"name", "trace"},
                      {"seed", seed},
                      {"workers", workers},
                      {"data", nullptr},
                      {"code", {{"kind", "uncoded"}}},
                      {"stopping", stopping},
                      {"optimizer", {{"iterations", iterations}}}};
  c["delay"] = delay;
  return c;
}

fs::path write_json(const fs::path& dir, const nlohmann::json& c) {
  const auto p = dir / "cfg.json";
  std::ofstream(p) << c.dump(2);
  return p;
}

/// The iteration_time column of DIR/out/trace.csv (its first row, iteration 0, left out).
std::vector<double> iteration_times(const fs::path& out) {
  std::istringstream in(slurp(out / "trace.csv"));
  std::string line;
  std::getline(in, line);
  REQUIRE(line.rfind("iteration,time,iteration_time,", 0) == 0);
  std::vector<double> times;
  bool first = true;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    std::string f;
    while (std::getline(row, f, ',')) fields.push_back(f);
    if (!first) times.push_back(std::stod(fields.at(2)));
    first = false;
  }
  return times;
}

/// An iteration-form trace of `rows` iterations × `workers`, written in shortest round-trip
/// form so that the file's text and the doubles compared agree exactly; rows of the file are
/// listed worker-major (any order is accepted).
std::vector<std::vector<double>> write_trace(const fs::path& file, int rows, int workers) {
  RandomEngine rng = make_engine(17, Stream::kData);
  boost::random::uniform_real_distribution<double> u(0.05, 3.0);
  std::vector<std::vector<double>> t(static_cast<std::size_t>(rows),
                                     std::vector<double>(static_cast<std::size_t>(workers)));
  for (auto& row : t) {
    for (double& v : row) v = u(rng);
  }
  std::string text = "worker,iteration,seconds,host\n";
  for (int i = 0; i < workers; ++i) {
    for (int k = 0; k < rows; ++k) {
      text += fmt::format("{},{},{},node{}\n",
                          i,
                          k + 1,
                          t[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)],
                          i);
    }
  }
  std::ofstream(file) << text;
  return t;
}

Result run_config(const fs::path& dir, const nlohmann::json& c) {
  const auto cfg = write_json(dir, c);
  return run_stragglersim(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()),
                          dir);
}

TEST_CASE("trace delay: uncoded all and first_r replay the file's maxima and order statistics",
          "[experiments][trace]") {
  constexpr int kWorkers = 6;
  constexpr int kRows = 5;
  constexpr int kIterations = 12;  // longer than the trace: cycle wraps
  for (const int r : {kWorkers, 4, 1}) {
    const auto dir = scratch_dir("trace_config", fmt::format("replay_{}", r));
    const auto t = write_trace(dir / "times.csv", kRows, kWorkers);
    const nlohmann::json stopping = r == kWorkers ? nlohmann::json{{"rule", "all"}}
                                                  : nlohmann::json{{"rule", "first_r"}, {"r", r}};
    // The path is relative to the config's folder.
    const Result res = run_config(
        dir,
        trace_config(kWorkers, {{"kind", "trace"}, {"path", "times.csv"}}, stopping, kIterations));
    REQUIRE(res.status == 0);
    const std::vector<double> times = iteration_times(dir / "out");
    REQUIRE(times.size() == kIterations);
    for (std::size_t k = 0; k < times.size(); ++k) {
      std::vector<double> row = t[k % kRows];
      std::sort(row.begin(), row.end());
      CHECK(times[k] == row[static_cast<std::size_t>(r - 1)]);
    }
  }
}

TEST_CASE("trace delay: a pool replays each worker's own times", "[experiments][trace]") {
  const auto dir = scratch_dir("trace_config", "pool");
  std::ofstream(dir / "pool.csv") << "worker,seconds\n0,1.5\n1,0.25\n2,2\n0,0.5\n2,0.75\n";
  const std::vector<std::vector<double>> pools = {{1.5, 0.5}, {0.25}, {2.0, 0.75}};
  const Result res = run_config(
      dir,
      trace_config(
          3, {{"kind", "trace"}, {"path", "pool.csv"}}, {{"rule", "first_r"}, {"r", 2}}, 5));
  REQUIRE(res.status == 0);
  const std::vector<double> times = iteration_times(dir / "out");
  REQUIRE(times.size() == 5);
  for (std::size_t k = 0; k < times.size(); ++k) {
    std::vector<double> row;
    for (const auto& p : pools) row.push_back(p[k % p.size()]);
    std::sort(row.begin(), row.end());
    CHECK(times[k] == row[1]);
  }
}

TEST_CASE("trace delay: bootstrap is reproducible per seed and replays whole rows",
          "[experiments][trace]") {
  constexpr int kWorkers = 4;
  constexpr int kRows = 6;
  const auto dir = scratch_dir("trace_config", "bootstrap");
  const auto t = write_trace(dir / "times.csv", kRows, kWorkers);
  std::vector<double> maxima;
  for (const auto& row : t) maxima.push_back(*std::max_element(row.begin(), row.end()));
  const auto times_for = [&](std::uint64_t seed) {
    const nlohmann::json delay = {{"kind", "trace"}, {"path", "times.csv"}, {"mode", "bootstrap"}};
    fs::remove_all(dir / "out");
    const Result res = run_config(dir, trace_config(kWorkers, delay, {{"rule", "all"}}, 200, seed));
    REQUIRE(res.status == 0);
    return iteration_times(dir / "out");
  };
  const auto a = times_for(3);
  CHECK(a == times_for(3));
  CHECK(a != times_for(4));
  for (const double x : a) {
    CHECK(std::find(maxima.begin(), maxima.end(), x) != maxima.end());
  }
}

TEST_CASE("trace delay: bad trace files exit 2 naming the config key and file:line",
          "[experiments][trace]") {
  const auto dir = scratch_dir("trace_config", "bad");
  const auto check = [&](const std::string& contents, const std::string& message, int workers = 2) {
    std::ofstream(dir / "times.csv") << contents;
    const auto cfg = write_json(
        dir,
        trace_config(workers, {{"kind", "trace"}, {"path", "times.csv"}}, {{"rule", "all"}}, 3));
    const Result res = run_stragglersim(
        fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
    CHECK(res.status == 2);
    CHECK(res.err == fmt::format("error: {}:/delay/path: {}\n", cfg.string(), message));
    CHECK_FALSE(fs::exists(dir / "out"));
  };
  const std::string file = (dir / "times.csv").string();
  check("iteration,worker,seconds\n1,0,0.5\n1,1,fast\n",
        file +
            ":3: malformed seconds; got 'fast' (expected a number ≥ 0, or an empty field for "
            "a censored time)");
  check("",
        file +
            ":1: empty file (expected a header with columns iteration,worker,seconds or "
            "worker,seconds)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1,0.5\n2,1,0.5\n",
        file +
            ":4: iteration 2 (first row on this line) has no row for worker 0 (expected one "
            "row for each worker 0..1)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1,-2\n",
        file + ":3: seconds must be finite and ≥ 0; got -2 (expected a measured time)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1,\n",
        file +
            ":3: censored time (empty seconds); expected every time measured (remove the "
            "iterations with unfinished workers)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1,0.5\n1,2,0.5\n",
        "trace 'times.csv' has 3 workers; expected 2 (the run's workers)");
  const auto cfg = write_json(
      dir, trace_config(2, {{"kind", "trace"}, {"path", "nope.csv"}}, {{"rule", "all"}}, 3));
  const Result res = run_stragglersim(
      fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  CHECK(res.status == 2);
  CHECK(res.err == fmt::format("error: {}:/delay/path: {}: cannot open file (expected a "
                               "readable CSV file of measured times)\n",
                               cfg.string(),
                               (dir / "nope.csv").string()));
}

}  // namespace
}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

/// A refused run: exit 2, `message` on stderr, and no output folder left behind.
void check_refused(const fs::path& dir, const Result& res, const std::string& message) {
  CHECK(res.status == 2);
  CHECK(res.err.find(message) != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("trace delay: block and empirical modes run reproducibly and check their keys",
          "[experiments][trace][block]") {
  constexpr int kWorkers = 3;
  const auto dir = scratch_dir("trace_config", "block");
  const auto t = write_trace(dir / "times.csv", 8, kWorkers);
  std::vector<double> maxima;
  for (const auto& row : t) maxima.push_back(*std::max_element(row.begin(), row.end()));
  const auto run_with = [&](const nlohmann::json& delay, std::uint64_t seed) {
    fs::remove_all(dir / "out");
    return run_config(dir, trace_config(kWorkers, delay, {{"rule", "all"}}, 40, seed));
  };
  const nlohmann::json block = {
      {"kind", "trace"}, {"path", "times.csv"}, {"mode", "block"}, {"block", 3}};
  REQUIRE(run_with(block, 3).status == 0);
  const auto a = iteration_times(dir / "out");
  REQUIRE(run_with(block, 3).status == 0);
  CHECK(a == iteration_times(dir / "out"));
  for (const double x : a) {
    CHECK(std::find(maxima.begin(), maxima.end(), x) != maxima.end());  // whole rows
  }
  nlohmann::json automatic = block;
  automatic["block"] = "auto";
  CHECK(run_with(automatic, 3).status == 0);
  const nlohmann::json empirical = {
      {"kind", "trace"}, {"path", "times.csv"}, {"mode", "empirical"}};
  CHECK(run_with(empirical, 3).status == 0);

  const auto refused = [&](const nlohmann::json& delay, const std::string& message) {
    check_refused(dir, run_with(delay, 3), message);
  };
  nlohmann::json zero = block;
  zero["block"] = 0;
  refused(zero, "/delay/block: out of range; got 0; expected an integer in [1, 8]");
  nlohmann::json word = block;
  word["block"] = "long";
  refused(word,
          "/delay/block: invalid block length; got \"long\"; expected \"auto\" or an integer in "
          "[1, 8] (the trace's iterations)");
  nlohmann::json cycle = block;
  cycle["mode"] = "cycle";
  refused(cycle,
          "/delay/block: only block mode reads a block length; got 3; expected mode \"block\"");
  nlohmann::json unknown = block;
  unknown["mode"] = "blocks";
  refused(
      unknown,
      "/delay/mode: unknown trace mode 'blocks'; did you mean 'block'? valid values are: block, "
      "bootstrap, cycle, "
      "empirical");
  std::ofstream(dir / "pool.csv") << "worker,seconds\n0,1\n1,2\n2,3\n";
  nlohmann::json pool = {{"kind", "trace"}, {"path", "pool.csv"}, {"mode", "block"}};
  refused(pool,
          "/delay/mode: block mode needs iterations; got \"block\"; expected a trace with an "
          "iteration column (a worker,seconds pool has no rows)");
}

}  // namespace
}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

TEST_CASE(
    "trace delay: a cycle start row rotates the replay and a random start varies with the seed",
    "[experiments][trace][start]") {
  constexpr int kWorkers = 3;
  const auto dir = scratch_dir("trace_config", "start");
  const auto t = write_trace(dir / "times.csv", 8, kWorkers);
  std::vector<double> maxima;
  for (const auto& row : t) maxima.push_back(*std::max_element(row.begin(), row.end()));
  const auto run_with = [&](const nlohmann::json& delay, std::uint64_t seed) {
    fs::remove_all(dir / "out");
    return run_config(dir, trace_config(kWorkers, delay, {{"rule", "all"}}, 12, seed));
  };
  const nlohmann::json cycle = {{"kind", "trace"}, {"path", "times.csv"}, {"start", 5}};
  REQUIRE(run_with(cycle, 3).status == 0);
  const auto rotated = iteration_times(dir / "out");
  REQUIRE(rotated.size() == 12);
  for (std::size_t k = 0; k < rotated.size(); ++k) {
    CHECK(rotated[k] == maxima[(5 + k) % 8]);  // uncoded `all`: each row's maximum
  }
  // A random start: some rotation of the rows, the same for a seed, not for every seed.
  nlohmann::json random = cycle;
  random["start"] = "random";
  std::set<double> firsts;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    REQUIRE(run_with(random, seed).status == 0);
    const auto got = iteration_times(dir / "out");
    const auto s = static_cast<std::size_t>(std::find(maxima.begin(), maxima.end(), got.front()) -
                                            maxima.begin());
    REQUIRE(s < maxima.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == maxima[(s + k) % 8]);
    REQUIRE(run_with(random, seed).status == 0);
    CHECK(iteration_times(dir / "out") == got);
    firsts.insert(got.front());
  }
  CHECK(firsts.size() > 1);

  const auto refused = [&](const nlohmann::json& delay, const std::string& message) {
    check_refused(dir, run_with(delay, 3), message);
  };
  nlohmann::json high = cycle;
  high["start"] = 8;
  refused(high, "/delay/start: out of range; got 8; expected an integer <= 7");
  nlohmann::json negative = cycle;
  negative["start"] = -1;
  refused(negative, "/delay/start: out of range; got -1; expected an integer in [0, 7]");
  nlohmann::json word = cycle;
  word["start"] = "middle";
  refused(word,
          "/delay/start: invalid start row; got \"middle\"; expected \"random\" or an integer in "
          "[0, 7] (a row of the trace)");
  nlohmann::json block = cycle;
  block["mode"] = "block";
  refused(block,
          "/delay/start: only cycle mode on an iteration-form trace reads a start row; got 5; "
          "expected mode \"cycle\" and a trace with an iteration column");
}

}  // namespace
}  // namespace stragglersim::experiments

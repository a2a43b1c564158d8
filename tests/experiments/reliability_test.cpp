// Reliability of the stragglersim executable against hostile input: every reproducer
// of the fuzzing campaign ends with its documented exit status and message, never a crash,
// an internal error, a silent infinity or a lost run.

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "experiments/output_file.h"
#include "fit/delay_fit.h"
#include "tests/test_support.h"

extern char** environ;  // NOLINT: POSIX

namespace {

namespace fs = std::filesystem;
using stragglersim::testing::slurp;
using Result = stragglersim::testing::CommandResult;

fs::path scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("reliability_test", name);
}

Result run(const std::string& args, const fs::path& dir) {
  return stragglersim::testing::run_stragglersim(args, dir);
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  const auto p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

fs::path write_json(const fs::path& dir, const std::string& name, const nlohmann::json& c) {
  return write(dir, name, c.dump(2));
}

nlohmann::json delay_only(int workers, std::uint64_t iterations) {
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "d", "seed": 5, "data": null,
    "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
    "delay": {"kind": "shifted_exponential"}
  })");
  c["workers"] = workers;
  c["optimizer"] = {{"iterations", iterations}};
  return c;
}

nlohmann::json logistic(double step) {
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "l", "seed": 3, "workers": 4,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 200, "features": 5},
    "loss": {"kind": "logistic"},
    "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "iterations": 20}
  })");
  c["optimizer"]["step"] = step;
  return c;
}

/// Data rows of a CSV trace (header excluded), each split at commas.
std::vector<std::vector<std::string>> rows_of(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream cells_in(line);
    std::string cell;
    while (std::getline(cells_in, cell, ',')) {
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

/// Starts `stragglersim run cfg --out out`, waits until trace.csv exists (the handlers are
/// installed by then) and 1 s more, sends `signal` and returns the exit status (-1: killed).
/// Starts `stragglersim run cfg --out out` with stderr in out/../stderr.txt; its pid, or 0.
pid_t spawn_run(const fs::path& cfg, const fs::path& out) {
  const std::string err = (out.parent_path() / "stderr.txt").string();
  std::vector<std::string> args = {
      stragglersim::testing::cli_binary(), "run", cfg.string(), "--out", out.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? pid : 0;
}

int interrupted_run(const fs::path& cfg, const fs::path& out, int signal) {
  const pid_t pid = spawn_run(cfg, out);
  if (pid == 0) {
    return -2;
  }
  for (int i = 0; i < 600 && !fs::exists(out / "trace.csv"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(pid, signal);
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

/// Starts `stragglersim run cfg --out out`, sends `signal` `after` the start, and returns the
/// exit status and the seconds from the signal to the exit (-1 when it had not exited within
/// 10 s: it is then killed).
std::pair<int, double> signalled_at(const fs::path& cfg,
                                    const fs::path& out,
                                    int signal,
                                    std::chrono::milliseconds after) {
  const pid_t pid = spawn_run(cfg, out);
  if (pid == 0) {
    return {-2, 0.0};
  }
  std::this_thread::sleep_for(after);
  ::kill(pid, signal);
  const auto sent = std::chrono::steady_clock::now();
  int raw = 0;
  while (::waitpid(pid, &raw, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - sent > std::chrono::seconds(10)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &raw, 0);
      return {-1, 10.0};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, seconds};
}

/// A sweep of `base` over `grid`, two points of which the second fails: it still writes
/// index.csv, the first point ok and the second failed, and exits 3.
void check_second_point_failed(const fs::path& dir,
                               const nlohmann::json& base,
                               const nlohmann::json& grid) {
  const nlohmann::json sweep = {{"base", base}, {"grid", grid}, {"name", "s"}};
  const auto sweep_file = write_json(dir, "sweep.json", sweep);
  const Result r = run(
      fmt::format("sweep '{}' --out '{}' --jobs 1", sweep_file.string(), (dir / "sweep").string()),
      dir);
  CHECK(r.status == 3);
  const auto index = rows_of(slurp(dir / "sweep" / "index.csv"));
  REQUIRE(index.size() == 2);
  CHECK(index[0][4] == "ok");
  CHECK(index[1][4] == "failed");
}

/// `run` of `c`, written to dir/name, into dir/out: refused with exit status 2 and the error
/// "error: <config file><message>".
void check_run_refused(const fs::path& dir,
                       const std::string& name,
                       const nlohmann::json& c,
                       const std::string& message) {
  const auto cfg = write_json(dir, name, c);
  const Result r =
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() + message);
}

}  // namespace

TEST_CASE("reliability: a signal during set-up ends the run with nothing written",
          "[experiments][reliability][fstar][heavy]") {
  const auto dir = scratch("sigint_setup");
  // 2500 × 2000 logistic: Newton's f* costs 10¹⁰ flops per Hessian, some ten of them: seconds
  // of set-up on any machine, well past the signal at 1.5 s.
  nlohmann::json c = logistic(0.1);
  c["data"]["rows"] = 2500;
  c["data"]["features"] = 2000;
  c["data"]["test_fraction"] = 0.0;
  c["loss"]["l2"] = 1e-3;
  c["optimizer"]["iterations"] = 200'000;
  const auto cfg = write_json(dir, "setup.json", c);
  const auto out = dir / "out";
  for (const int signal : {SIGINT, SIGTERM}) {
    fs::remove_all(out);
    const auto [status, seconds] = signalled_at(cfg, out, signal, std::chrono::milliseconds(1500));
    CHECK(status == 128 + signal);
    CHECK(seconds < 10.0);
    CHECK_FALSE(fs::exists(out / "trace.csv"));
    CHECK_FALSE(fs::exists(out / "summary.json"));
    CHECK(slurp(dir / "stderr.txt") ==
          fmt::format("{}: interrupted by signal {} during set-up; nothing written\n",
                      cfg.string(),
                      signal));
  }
  // The 40 000 × 100 logistic run of docs/model.md: wherever the signal at 1.5 s lands (set-up
  // or the iterations), the run ends at once with status 130 and leaves what the docs say.
  nlohmann::json paper = logistic(0.1);
  paper["workers"] = 10;
  paper["data"] = {{"source", "synthetic"},
                   {"generator", "gaussian_mixture"},
                   {"rows", 40'000},
                   {"features", 100}};
  paper["loss"]["l2"] = 1e-3;
  paper["code"] = {{"kind", "frc"}, {"d", 2}};
  paper["stopping"] = {{"rule", "first_r"}, {"r", 5}};
  paper["optimizer"] = {{"kind", "gd"}, {"step", "auto"}, {"iterations", 200'000}};
  const auto paper_cfg = write_json(dir, "paper.json", paper);
  fs::remove_all(out);
  const auto [status, seconds] =
      signalled_at(paper_cfg, out, SIGINT, std::chrono::milliseconds(1500));
  CHECK(status == 130);
  CHECK(seconds < 10.0);
  if (fs::exists(out / "summary.json")) {
    CHECK(nlohmann::json::parse(slurp(out / "summary.json"))["status"] == "interrupted");
  } else {
    CHECK_FALSE(fs::exists(out / "trace.csv"));
  }
}

TEST_CASE("reliability: deeply nested JSON is refused with its pointer",
          "[experiments][reliability]") {
  const auto dir = scratch("deep");
  std::string text;
  for (int i = 0; i < 60000; ++i) text += "{\"a\":";
  text += "1";
  for (int i = 0; i < 60000; ++i) text += "}";
  const auto cfg = write(dir, "deep.json", text);
  std::string pointer;
  for (int i = 0; i < 64; ++i) pointer += "/a";
  const std::string expected = fmt::format(
      "error: {}:{}: nesting too deep; got more than 64 levels; expected at most 64 "
      "nested arrays and objects\n",
      cfg.string(),
      pointer);
  for (const std::string command : {"run", "theory"}) {
    const std::string out = command == "run" ? " --out '" + (dir / "out").string() + "'" : "";
    const Result r = run(fmt::format("{} '{}'{}", command, cfg.string(), out), dir);
    CHECK(r.status == 2);
    CHECK(r.err == expected);
  }
  // Arrays too, inside a valid object.
  std::string arrays = "{\"seed\": ";
  for (int i = 0; i < 200000; ++i) arrays += "[";
  for (int i = 0; i < 200000; ++i) arrays += "]";
  arrays += "}";
  const auto cfg2 = write(dir, "arrays.json", arrays);
  const Result r = run(fmt::format("theory '{}'", cfg2.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err.find(cfg2.string() + ":/seed/0/0/0/") == 7);
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("reliability: numbers outside double range name file and pointer",
          "[experiments][reliability]") {
  const auto dir = scratch("range");
  const auto cfg = write(dir, "seed.json", R"({"name": "x", "seed": 1e309, "workers": 4})");
  const std::string digits(400, '7');
  const auto cfg2 = write(
      dir, "digits.json", R"({"name": "x", "workers": 4, "delay": {"shift": )" + digits + "}}");
  for (const std::string command : {"run", "theory"}) {
    const std::string out = command == "run" ? " --out '" + (dir / "out").string() + "'" : "";
    Result r = run(fmt::format("{} '{}'{}", command, cfg.string(), out), dir);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + cfg.string() +
                       ":/seed: number out of range; got 1e309; expected a number of magnitude at "
                       "most 1.8e308\n");
    r = run(fmt::format("{} '{}'{}", command, cfg2.string(), out), dir);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + cfg2.string() + ":/delay/shift: number out of range; got " +
                       digits.substr(0, 40) +
                       "...; expected a number of magnitude at most 1.8e308\n");
  }
  const Result r = run(R"(codes --workers 6 --code '{"kind": "crc", "s": 1e309}')", dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: <command line>:/code/s: number out of range; got 1e309; expected a number of "
        "magnitude at most 1.8e308\n");
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("reliability: a huge step fails numerically with the trace kept",
          "[experiments][reliability]") {
  const auto dir = scratch("step");
  const auto cfg = write_json(dir, "step.json", logistic(1e308));
  const Result r =
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  CHECK(r.status == 3);
  CHECK(r.err.find("internal error") == std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "failed");
  // Row 0 (x₀ = 0) is good; the first step overflows the test margins.
  const auto rows = rows_of(slurp(dir / "out" / "trace.csv"));
  REQUIRE(rows.size() == summary["iterations"].get<std::size_t>() + 1);
  CHECK(rows.front().front() == "0");
  CHECK(summary["error"].get<std::string>().find("iteration " + std::to_string(rows.size())) == 0);

  // A sweep holding that point still writes index.csv, the point marked failed.
  check_second_point_failed(dir, logistic(0.1), {{"/optimizer/step", {0.1, 1e308}}});
}

TEST_CASE("reliability: data values too large to square are a config error",
          "[experiments][reliability]") {
  const auto dir = scratch("huge_value");
  write(dir, "a.svm", "1 1:0.5 2:1e308\n-1 1:1 2:2\n1 1:3\n-1 2:4\n1 1:1 2:1\n");
  write(dir, "a.csv", "x,y,label\n0.5,1e308,1\n1,2,-1\n3,0,1\n0,4,-1\n1,1,1\n");
  for (const auto& [source, file] : {std::pair{"libsvm", "a.svm"}, std::pair{"csv", "a.csv"}}) {
    nlohmann::json c = logistic(0.1);
    c["optimizer"]["step"] = "auto";
    c["data"] = {{"source", source}, {"path", file}, {"test_fraction", 0}};
    c["workers"] = 2;
    check_run_refused(dir,
                      fmt::format("{}.json", source),
                      c,
                      ":/data: the data's smoothness beta is not finite (values too large to "
                      "square); got beta = inf; expected data whose squared row norms are finite "
                      "(values below about 1e150)\n");
  }
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("reliability: memory is estimated and refused before allocation",
          "[experiments][reliability]") {
  const auto dir = scratch("memory");
  nlohmann::json big = logistic(0.1);
  big["data"]["rows"] = 1'000'000;
  big["data"]["features"] = 1'000'000;
  auto cfg = write_json(dir, "gm.json", big);
  Result r =
      run(fmt::format("run '{}' --out '{}' --max-memory 8G", cfg.string(), (dir / "out").string()),
          dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() +
                     ":/data/features: the data set (1000000 x 1000000 dense) would need about "
                     "14.6 TB of memory; got 1000000; expected at most 8 GB (--max-memory)\n");

  // --max-memory applies to modest runs too: 200 x 5 doubles, twice, is 15.6 KB.
  cfg = write_json(dir, "small.json", logistic(0.1));
  r = run(fmt::format("run '{}' --out '{}' --max-memory 10K", cfg.string(), (dir / "out").string()),
          dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() +
                     ":/data/features: the data set (200 x 5 dense) would need about 15.6 KB of "
                     "memory; got 5; expected at most 10 KB (--max-memory)\n");
  r = run(fmt::format("run '{}' --out '{}' --max-memory 0", cfg.string(), (dir / "out").string()),
          dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: --max-memory: not a memory size; got \"0\"; expected a positive number of bytes "
        "with an optional K, M, G or T suffix (powers of 1024), e.g. 2G\n");

  // Dense-matrix codes for 10⁷ workers, delay-only.
  for (const std::string code : {"crc", "bgc", "cyclic_mds", "sgc"}) {
    nlohmann::json c = delay_only(10'000'000, 10);
    c["code"] = code == "crc" || code == "cyclic_mds" ? nlohmann::json{{"kind", code}, {"s", 2}}
                                                      : nlohmann::json{{"kind", code}, {"d", 2}};
    c["stopping"] = {{"rule", "first_r"}, {"r", 5'000'000}};
    cfg = write_json(dir, code + ".json", c);
    r = run(
        fmt::format("run '{}' --out '{}' --max-memory 8G", cfg.string(), (dir / "out").string()),
        dir);
    CHECK(r.status == 2);
    CHECK(r.err == fmt::format("error: {}:/workers: code '{}' would need about 2.13 PB of "
                               "memory; got 10000000; expected at most 8 GB (--max-memory)\n",
                               cfg.string(),
                               code));
  }
  r = run(R"(codes --workers 100000 --code '{"kind": "crc", "s": 1}' --max-memory 8G)", dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: --workers: code 'crc' would need about 224 GB of memory; got 100000; expected at "
        "most 8 GB (--max-memory)\n");

  // A LIBSVM index beyond the features bound, and one that fits but not densely.
  write(dir, "wide.svm", "1 2147483648:1\n-1 1:1\n");
  write(dir, "dense.svm", "1 100000000:1\n-1 1:1\n1 1:2\n-1 2:1\n1 3:1\n-1 4:1\n1 5:1\n-1 6:1\n");
  nlohmann::json svm = logistic(0.1);
  svm["data"] = {{"source", "libsvm"}, {"path", "wide.svm"}};
  svm["workers"] = 1;
  cfg = write_json(dir, "wide.json", svm);
  r = run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "out").string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/data/path: {}:1: feature index too large; got "
                             "'2147483648'; expected at most 100000000\n",
                             cfg.string(),
                             (dir / "wide.svm").string()));
  svm["data"]["path"] = "dense.svm";
  cfg = write_json(dir, "dense.json", svm);
  r = run(fmt::format("run '{}' --out '{}' --max-memory 2G", cfg.string(), (dir / "out").string()),
          dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/data/path: {}: dense storage of 8 rows x 100000000 "
                             "features would need 6.4e+09 bytes; expected at most 1073741824 "
                             "bytes (--max-memory), or \"storage\": \"sparse\"\n",
                             cfg.string(),
                             (dir / "dense.svm").string()));
  // Sparse, the data fit but the partition gradients (features × partitions) do not.
  svm["data"]["storage"] = "sparse";
  cfg = write_json(dir, "sparse.json", svm);
  r = run(fmt::format("run '{}' --out '{}' --max-memory 1G", cfg.string(), (dir / "out").string()),
          dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() +
                     ":/partitions: the partition gradients (100000000 features x 1 partitions) "
                     "would need about 1.49 GB of memory, 1.49 GB with what the run already holds "
                     "(the data set (8 x 100000000 sparse) 192 bytes, code 'uncoded' 216 bytes); "
                     "got 1; expected at most 1 GB (--max-memory)\n");
  CHECK_FALSE(fs::exists(dir / "out"));

  // The estimates add up: the data set (1000 x 200 dense, 3.05 MB), the code (98.4 KB) and the
  // partition gradients (200 features x 100 partitions, 312 KB) each fit under 3.2 MB, but not
  // all together.
  nlohmann::json sum = logistic(0.1);
  sum["data"]["rows"] = 1000;
  sum["data"]["features"] = 200;
  sum["workers"] = 100;
  cfg = write_json(dir, "sum.json", sum);
  r = run(
      fmt::format("run '{}' --out '{}' --max-memory 3.2M", cfg.string(), (dir / "out").string()),
      dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + cfg.string() +
                     ":/partitions: the partition gradients (200 features x 100 partitions) would "
                     "need about 312 KB of memory, 3.45 MB with what the run already holds (the "
                     "data set (1000 x 200 dense) 3.05 MB, code 'uncoded' 98.4 KB); got 100; "
                     "expected at most 3.2 MB "
                     "(--max-memory)\n");
  CHECK_FALSE(fs::exists(dir / "out"));
  r = run(
      fmt::format("run '{}' --out '{}' --max-memory 3.5M", cfg.string(), (dir / "out").string()),
      dir);
  CHECK(r.err == "");
  CHECK(r.status == 0);
}

TEST_CASE("reliability: an expander with more partitions than rows is refused before building",
          "[experiments][reliability]") {
  const auto dir = scratch("expander");
  nlohmann::json c = logistic(0.1);
  c["data"]["rows"] = 400;
  c["workers"] = 10'000'000;
  c["code"] = {{"kind", "expander"}, {"d", 4}};
  c["stopping"] = {{"rule", "first_r"}, {"r", 10}};
  check_run_refused(dir,
                    "e.json",
                    c,
                    ":/code/d: more partitions than training rows (k = 2·workers/d = 5000000); "
                    "got 4; expected at most the 320 training rows\n");
}

TEST_CASE("reliability: SIGINT keeps every finished row and says interrupted",
          "[experiments][reliability][heavy]") {
  const auto dir = scratch("sigint");
  // 200 000 iterations of 20 000 workers on the worker sampler (order statistics would finish in
  // milliseconds): tens of seconds, far beyond the 1 s before the signal.
  nlohmann::json long_run = delay_only(20'000, 200'000);
  long_run["sampler"] = "workers";
  const auto cfg = write_json(dir, "long.json", long_run);
  const auto out = dir / "out";
  for (const int signal : {SIGINT, SIGTERM}) {
    fs::remove_all(out);
    CHECK(interrupted_run(cfg, out, signal) == 128 + signal);
    const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
    CHECK(summary["status"] == "interrupted");
    const auto done = summary["iterations"].get<std::uint64_t>();
    CHECK(done > 0);
    CHECK(done < 200'000);
    // Every finished row, in order, and nothing else: the trace equals a run of exactly `done`
    // iterations byte for byte (same seed, same delay stream).
    const std::string trace = slurp(out / "trace.csv");
    CHECK(rows_of(trace).size() == done + 1);
    nlohmann::json short_run = delay_only(20'000, done);
    short_run["sampler"] = "workers";
    const auto short_cfg = write_json(dir, "short.json", short_run);
    fs::remove_all(dir / "short");  // the previous signal's shorter run is another config
    const Result r =
        run(fmt::format("run '{}' --out '{}'", short_cfg.string(), (dir / "short").string()), dir);
    REQUIRE(r.status == 0);
    CHECK(slurp(dir / "short" / "trace.csv") == trace);
    CHECK(summary["total_time"].get<double>() ==
          nlohmann::json::parse(slurp(dir / "short" / "summary.json"))["total_time"].get<double>());
  }
}

TEST_CASE("reliability: unusable output folders are refused before any compute",
          "[experiments][reliability]") {
  const auto dir = scratch("out_paths");
  const auto cfg = write_json(dir, "c.json", delay_only(10, 5));
  const auto file = write(dir, "file.txt", "x");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/null",
       "exists and is not a folder; got \"/dev/null\"; expected a new or existing folder"},
      {"", "empty path; got \"\"; expected a folder to write into"},
      {file.string(),
       "exists and is not a folder; got \"" + file.string() +
           "\"; expected a new or existing folder"},
      {(file / "sub").string(),
       file.string() + " is not a folder; got \"" + (file / "sub").string() +
           "\"; expected a path under an existing folder"},
  };
  for (const auto& [out, message] : cases) {
    const Result r = run(fmt::format("run '{}' --out '{}'", cfg.string(), out), dir);
    CHECK(r.status == 2);
    CHECK(r.err == "error: --out: " + message + "\n");
  }
}

TEST_CASE("reliability: non-finite simulated time is a numerical failure",
          "[experiments][reliability]") {
  const auto dir = scratch("inf_time");
  nlohmann::json c = logistic(0.1);
  c["delay"] = {{"kind", "shifted_exponential"}, {"shift", 1e308}};
  auto cfg = write_json(dir, "train.json", c);
  Result r = run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "train").string()), dir);
  CHECK(r.status == 3);
  auto summary = nlohmann::json::parse(slurp(dir / "train" / "summary.json"));
  CHECK(summary["status"] == "failed");
  // 1e308 per iteration overflows on the second one: rows 0 and 1 are kept.
  CHECK(summary["iterations"] == 1);
  CHECK(rows_of(slurp(dir / "train" / "trace.csv")).size() == 2);
  CHECK(summary["error"] ==
        "iteration 2: non-finite simulated time inf (iteration time 1e+308; delays too large)");

  nlohmann::json d = delay_only(10, 5);
  d["delay"] = {{"kind", "shifted_exponential"}, {"rate", 1e-308}};
  cfg = write_json(dir, "delay.json", d);
  r = run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "delay").string()), dir);
  CHECK(r.status == 3);
  summary = nlohmann::json::parse(slurp(dir / "delay" / "summary.json"));
  CHECK(summary["status"] == "failed");
  CHECK(rows_of(slurp(dir / "delay" / "trace.csv")).size() ==
        summary["iterations"].get<std::size_t>() + 1);
  CHECK(r.out.find("nan") == std::string::npos);

  // Finite times whose spread overflows: the summary would hold an infinity.
  nlohmann::json spread = delay_only(4, 2);
  spread["delay"] = {{"kind", "shifted_exponential"}, {"rate", 1e-300}};
  const auto spread_cfg = write_json(dir, "spread.json", spread);
  r = run(fmt::format("run '{}' --out '{}'", spread_cfg.string(), (dir / "spread").string()), dir);
  CHECK(r.status == 3);
  summary = nlohmann::json::parse(slurp(dir / "spread" / "summary.json"));
  CHECK(summary["error"] == "non-finite iteration_time_sd (delays or data too large)");
  CHECK(rows_of(slurp(dir / "spread" / "trace.csv")).size() == 3);

  r = run(fmt::format("theory '{}'", cfg.string()), dir);
  CHECK(r.status == 3);
  CHECK(r.err == "error: " + cfg.string() +
                     ": theory: the expected iteration time is not finite (delays too large)\n");

  check_second_point_failed(dir, d, {{"/delay/rate", {1.0, 1e-308}}});
}

TEST_CASE("reliability: theory cost does not grow with iterations or features",
          "[experiments][reliability][heavy]") {
  const auto dir = scratch("theory_bounded");
  nlohmann::json c = nlohmann::json::parse(R"({
    "name": "t", "seed": 1, "workers": 10,
    "data": {"source": "synthetic", "generator": "linear_regression", "rows": 200, "features": 5,
             "condition": 1},
    "loss": {"kind": "least_squares", "l2": 0.01},
    "code": {"kind": "frc", "d": 2}, "stopping": {"rule": "first_r", "r": 5},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 1000000000000}
  })");
  auto cfg = write_json(dir, "long.json", c);
  Result r = run(fmt::format("theory '{}' --json", cfg.string()), dir);
  REQUIRE(r.status == 0);
  const auto p = nlohmann::json::parse(r.out);
  CHECK(p["bound_iterations"] == 10000);
  CHECK(p["bound"].size() == 10001);

  c["optimizer"]["iterations"] = 100;
  c["data"] = {{"source", "synthetic"},
               {"generator", "kc_housing_like"},
               {"rows", 400},
               {"features", 1'000'000}};
  cfg = write_json(dir, "wide.json", c);
  // 10⁶ features: f* by matrix-free conjugate gradient, its budget bounded by max(10 × the run,
  // 10¹¹) entry-operations, and certified.
  r = run(fmt::format("theory '{}' --json", cfg.string()), dir);
  CHECK(r.status == 0);
  const auto wide = nlohmann::json::parse(r.out);
  CHECK(wide["f_star_method"] == "conjugate gradient");
  CHECK(wide["f_star"].is_number());
}

// Found by the fuzz_run target: an empty BGC row (load 0) under Pareto delays was an
// internal error (exit 1).
TEST_CASE("reliability: a BGC worker without partitions runs under every delay model",
          "[experiments][reliability]") {
  const auto dir = scratch("empty_row");
  for (const std::string kind : {"shifted_exponential", "pareto", "bimodal"}) {
    nlohmann::json c = delay_only(40, 5);
    // d = 1 of k = 40 partitions: each row is empty with probability (1 - 1/40)^40 ≈ 0.36.
    c["code"] = {{"kind", "bgc"}, {"d", 1}};
    c["stopping"] = {{"rule", "first_r"}, {"r", 20}};
    c["delay"] = {{"kind", kind}};
    const auto cfg = write_json(dir, kind + ".json", c);
    const Result r =
        run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / kind).string()), dir);
    CHECK(r.err == "");
    CHECK(r.status == 0);
  }
}

TEST_CASE("reliability: wrong inputs are refused", "[experiments][reliability]") {
  const auto dir = scratch("wrong_inputs");
  // Logistic regression with one label value.
  write(dir, "one.csv", "x,label\n1,1\n2,1\n3,1\n4,1\n5,1\n");
  nlohmann::json c = logistic(0.1);
  c["data"] = {{"source", "csv"}, {"path", "one.csv"}};
  c["workers"] = 2;
  check_run_refused(dir,
                    "one.json",
                    c,
                    ":/loss: logistic regression needs two label values; got 1 distinct labels; "
                    "expected -1/+1 or two values mapped to -1 (smaller) and +1 (larger)\n");

  // A config path that is a folder.
  const Result r =
      run(fmt::format("run '{}' --out '{}'", dir.string(), (dir / "out").string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: " + dir.string() + ": cannot open config file: it is a folder\n");

  // The threads backend's timeout is capped.
  c = logistic(0.1);
  c["backend"] = {{"kind", "threads"}, {"timeout", 1e308}};
  check_run_refused(dir,
                    "timeout.json",
                    c,
                    ":/backend/timeout: out of range; got 1e+308; expected a number in (0, "
                    "3600] seconds\n");
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("reliability: SIGINT stops the threads backend after the current iteration",
          "[experiments][reliability]") {
  const auto dir = scratch("sigint_threads");
  nlohmann::json c = logistic(0.1);
  c["optimizer"]["iterations"] = 100'000;  // about 30 ms each: far beyond the 1 s
  c["backend"] = {{"kind", "threads"}, {"seconds_per_unit", 0.01}};
  const auto cfg = write_json(dir, "threads.json", c);
  CHECK(interrupted_run(cfg, dir / "out", SIGINT) == 130);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "interrupted");
  const auto done = summary["iterations"].get<std::size_t>();
  CHECK(done > 0);
  CHECK(done < 100'000);
  const auto rows = rows_of(slurp(dir / "out" / "trace.csv"));
  REQUIRE(rows.size() == done + 1);
  CHECK(rows.back().front() == std::to_string(done));
}

TEST_CASE("reliability: SIGTERM ends a threads run held by a hung worker before its timeout",
          "[experiments][reliability]") {
  // Worker 1 hangs from iteration 3 under the `all` rule: without the master's stop poll the
  // run would wait out the 3600 s timeout after the signal.
  const auto dir = scratch("sigterm_hang");
  nlohmann::json c = logistic(0.1);
  c["optimizer"]["iterations"] = 50;
  c["stopping"] = {{"rule", "all"}};
  c["backend"] = {{"kind", "threads"},
                  {"seconds_per_unit", 0.01},
                  {"timeout", 3600},
                  {"faults", {{{"worker", 1}, {"kind", "hang"}, {"from_iteration", 3}}}}};
  const auto cfg = write_json(dir, "hang.json", c);
  const pid_t pid = spawn_run(cfg, dir / "out");
  REQUIRE(pid != 0);
  // The iterations have started once the trace exists; by 1 s later the run waits on worker 1.
  for (int i = 0; i < 600 && !fs::exists(dir / "out" / "trace.csv"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(pid, SIGTERM);
  const auto sent = std::chrono::steady_clock::now();
  int raw = 0;
  while (::waitpid(pid, &raw, WNOHANG) == 0 &&
         std::chrono::steady_clock::now() - sent < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  if (seconds >= 30.0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &raw, 0);
  }
  // The master polls every 50 ms; 30 s is far below the 3600 s it would otherwise wait.
  CHECK(seconds < 30.0);
  CHECK((WIFEXITED(raw) ? WEXITSTATUS(raw) : -1) == 143);
  const auto summary = nlohmann::json::parse(slurp(dir / "out" / "summary.json"));
  CHECK(summary["status"] == "interrupted");
  // Iterations 1 and 2 finished; the third, held by the hung worker, was abandoned.
  CHECK(summary["iterations"] == 2);
  CHECK(rows_of(slurp(dir / "out" / "trace.csv")).size() == 3);
}

namespace {

/// A character device like /dev/null (major 1, minor 3) at `path`: a root process writing to it
/// must leave it a device.
fs::path null_device(const fs::path& path) {
  REQUIRE(::mknod(path.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
  return path;
}

bool is_char_device(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

/// Names of the files in `dir` that look like a writer's temporaries.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) {
      names.push_back(e.path().filename().string());
    }
  }
  return names;
}

/// Runs `args` while a thread reads the FIFO at `fifo` to its end; returns what it read.
std::string run_into_fifo(const std::string& args,
                          const fs::path& fifo,
                          const fs::path& dir,
                          Result& result) {
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  std::string got;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    got = slurp(fifo);
    done = true;
  });
  result = run(args, dir);
  // A command that never opened the FIFO leaves the reader waiting for a writer: be one.
  while (!done) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) {
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  return got;
}

/// A command taking an output file: `format` has one {} for the path.
struct FileCommand {
  std::string option;
  std::string format;
};

std::vector<FileCommand> file_commands(const fs::path& dir) {
  // Small inputs: each command runs eight times.
  std::string csv = "worker,seconds\n";
  for (int i = 0; i < 40; ++i) {
    csv += fmt::format("{},{}\n", i % 4, 1.0 + 0.37 * (i % 7) + 0.05 * i);
  }
  const auto times = write(dir, "times.csv", csv);
  nlohmann::json advise = stragglersim::testing::small_least_squares_config();
  advise["target_loss"] = 1.0;
  advise["optimizer"]["iterations"] = 10;
  const auto advise_cfg = write_json(dir, "advise.json", advise);
  const auto theory_cfg = write_json(dir, "theory.json", logistic(0.1));
  const auto source = write(dir, "source.csv", "step,rank,t\n1,0,1.5\n1,1,2\n2,0,1.25\n2,1,1.1\n");
  return {
      {"--out", fmt::format("fit '{}' --out '{{}}'", times.string())},
      {"--csv", R"(codes --workers 4 --code '{{"kind": "frc", "d": 2}}' --csv '{}')"},
      {"--csv", fmt::format("theory '{}' --measure 2 --csv '{{}}'", theory_cfg.string())},
      // --fixed-step: the tuning's estimate of its time would precede the error on stderr.
      {"--write",
       fmt::format("advise '{}' --repetitions 2 --fixed-step --write '{{}}'", advise_cfg.string())},
      {"--out",
       fmt::format("trace import '{}' --format csv --iteration step --worker rank --seconds t "
                   "--out '{{}}'",
                   source.string())},
      {"--out", "init --workers 4 -o '{}'"},
  };
}

}  // namespace

TEST_CASE("reliability: output files write through devices FIFOs and links and never replace them",
          "[experiments][reliability][output]") {
  const auto dir = scratch("output_files");
  for (const auto& command : file_commands(dir)) {
    const auto cmd = [&](const fs::path& p) {
      return fmt::format(fmt::runtime(command.format), p.string());
    };
    INFO(command.format);
    const auto work = scratch("output_files_work");
    // The bytes every way of writing must deliver.
    const Result ref = run(cmd(work / "ref.txt"), work);
    REQUIRE(ref.status == 0);
    const std::string expected = slurp(work / "ref.txt");
    REQUIRE_FALSE(expected.empty());

    const auto device = null_device(work / "fakenull");
    CHECK(run(cmd(device), work).status == 0);
    CHECK(is_char_device(device));

    Result fifo_result;
    CHECK(run_into_fifo(cmd(work / "fifo"), work / "fifo", work, fifo_result) == expected);
    CHECK(fifo_result.status == 0);
    CHECK(fs::is_fifo(work / "fifo"));

    write(work, "target.txt", "old");
    fs::create_symlink(work / "target.txt", work / "link");
    CHECK(run(cmd(work / "link"), work).status == 0);
    CHECK(fs::is_symlink(work / "link"));
    CHECK(slurp(work / "target.txt") == expected);

    fs::create_symlink(work / "nothing", work / "dangling");
    Result r = run(cmd(work / "dangling"), work);
    CHECK(r.status == 2);
    CHECK(r.err == fmt::format("error: {}: is a symbolic link to nothing; got \"{}\"; expected a "
                               "link to an existing file\n",
                               command.option,
                               (work / "dangling").string()));
    CHECK_FALSE(fs::exists(work / "nothing"));

    r = run(cmd(work), work);
    CHECK(r.status == 2);
    CHECK(r.err == fmt::format("error: {}: is a folder; got \"{}\"; expected a file name\n",
                               command.option,
                               work.string()));
    // Checked before the work: a missing folder says so and nothing is computed or printed.
    r = run(cmd(work / "missing" / "x"), work);
    CHECK(r.status == 2);
    CHECK(r.err == fmt::format("error: {}: {} is not a folder; got \"{}\"; expected a file in an "
                               "existing folder\n",
                               command.option,
                               (work / "missing").string(),
                               (work / "missing" / "x").string()));
    CHECK(r.out.empty());
    // A full device: the documented write failure, exit 2.
    r = run(cmd("/dev/full"), work);
    CHECK(r.status == 2);
    CHECK(r.err == fmt::format("error: {}: cannot write file (No space left on device); got "
                               "\"/dev/full\"; expected a writable file system with free space\n",
                               command.option));
    CHECK(temporaries(work).empty());
  }
}

TEST_CASE("reliability: output folders refuse devices and FIFOs and follow links to folders",
          "[experiments][reliability][output]") {
  const auto dir = scratch("output_folders");
  const auto cfg = write_json(dir, "c.json", delay_only(4, 3));
  const auto sweep = write_json(
      dir, "s.json", nlohmann::json{{"base", delay_only(4, 3)}, {"grid", {{"/seed", {1, 2}}}}});
  const auto device = null_device(dir / "fakenull");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0666) == 0);
  const std::vector<std::string> commands = {
      "run '" + cfg.string() + "' --out '{}'",
      "sweep '" + sweep.string() + "' --out '{}'",
      "check --quick --out '{}'",
  };
  for (const auto& format : commands) {
    INFO(format);
    for (const auto& target : {device, dir / "fifo"}) {
      const Result r = run(fmt::format(fmt::runtime(format), target.string()), dir);
      CHECK(r.status == 2);
      CHECK(r.err.find(fmt::format("error: --out: exists and is not a folder; got \"{}\"; "
                                   "expected a new or existing folder\n",
                                   target.string())) != std::string::npos);
    }
    // An empty path is refused too (check's --out is optional, not ignored when empty).
    const Result empty = run(fmt::format(fmt::runtime(format), ""), dir);
    CHECK(empty.status == 2);
    CHECK(empty.err.find("error: --out: empty path; got \"\"; expected a folder to write into\n") !=
          std::string::npos);
  }
  CHECK(is_char_device(device));
  CHECK(fs::is_fifo(dir / "fifo"));
  // A link to a folder is written through.
  fs::create_directories(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  CHECK(
      run(fmt::format("run '{}' --out '{}'", cfg.string(), (dir / "link").string()), dir).status ==
      0);
  CHECK(fs::is_symlink(dir / "link"));
  CHECK(fs::exists(dir / "real" / "summary.json"));
  // summary.json that is a device in the folder is left alone, trace.csv written through.
  fs::remove(dir / "real" / "summary.json");
  null_device(dir / "real" / "summary.json");
  const Result again =
      run(fmt::format("run '{}' --out '{}' --force", cfg.string(), (dir / "real").string()), dir);
  CHECK(again.status == 0);
  CHECK(is_char_device(dir / "real" / "summary.json"));
}

TEST_CASE("reliability: a read-only file system is refused before the work",
          "[experiments][reliability][output]") {
  const auto dir = scratch("read_only");
  fs::create_directories(dir / "ro");
  const auto times = fs::path(stragglersim::testing::source_dir()) /
                     "experiments/examples/persistent_stragglers.csv";
  // A private mount namespace: the read-only tmpfs disappears with the command.
  const std::string cmd = fmt::format(
      "unshare -m sh -c \"mount -t tmpfs -o ro tmpfs '{0}/ro' && exec {1} fit '{2}' --out "
      "'{0}/ro/x.json'\" > '{0}/out.txt' 2> '{0}/err.txt'",
      dir.string(),
      stragglersim::testing::cli_binary(),
      times.string());
  const int status = stragglersim::testing::exit_status(std::system(cmd.c_str()));
  const std::string err = slurp(dir / "err.txt");
  if (err.find("mount") != std::string::npos || err.find("unshare") != std::string::npos) {
    WARN("no mount namespace here: " + err);
    return;
  }
  CHECK(status == 2);
  CHECK(err == fmt::format("error: --out: {0}/ro is not writable (Read-only file system); got "
                           "\"{0}/ro/x.json\"; expected a folder this user may write\n",
                           dir.string()));
  CHECK(slurp(dir / "out.txt").empty());
}

TEST_CASE("reliability: a sweep folder in use by another sweep is refused",
          "[experiments][reliability]") {
  const auto dir = scratch("sweep_lock");
  const auto sweep = write_json(
      dir, "s.json", nlohmann::json{{"base", delay_only(4, 3)}, {"grid", {{"/seed", {1, 2}}}}});
  const auto out = dir / "out";
  fs::create_directories(out);
  {
    // Another sweep holding the folder, as a second process would.
    const stragglersim::experiments::FolderLock held(out, /*exclusive=*/true);
    const Result r = run(fmt::format("sweep '{}' --out '{}'", sweep.string(), out.string()), dir);
    CHECK(r.status == 2);
    CHECK(r.err.find(fmt::format(
              "error: --out: folder in use by another sweep; got \"{}\"; expected a folder no "
              "other sweep is writing now (wait for it to end, or give another --out; shards of "
              "one sweep share a folder with --shard)\n",
              out.string())) != std::string::npos);
    CHECK(fs::is_empty(out));
    // Shards share the folder among themselves, not with a whole sweep.
    const Result shard =
        run(fmt::format("sweep '{}' --out '{}' --shard 1/2", sweep.string(), out.string()), dir);
    CHECK(shard.status == 2);
  }
  // Released: the same sweep runs.
  CHECK(run(fmt::format("sweep '{}' --out '{}'", sweep.string(), out.string()), dir).status == 0);
  CHECK(fs::exists(out / "index.csv"));
}

TEST_CASE("reliability: a sweep run whose write fails ends the sweep with status 2",
          "[experiments][reliability]") {
  // A full disk under one run: its trace.csv is a link to /dev/full (written through, as a
  // device), so the write fails with ENOSPC after the run has started.
  const auto dir = scratch("sweep_full_disk");
  const auto sweep = write_json(
      dir, "s.json", nlohmann::json{{"base", logistic(0.1)}, {"grid", {{"/seed", {1, 2}}}}});
  const auto out = dir / "out";
  REQUIRE(run(fmt::format("sweep '{}' --out '{}' -q", sweep.string(), out.string()), dir).status ==
          0);
  const fs::path folder = out / "runs" / "seed=1_rep0";
  REQUIRE(fs::is_directory(folder));
  for (const auto& entry : fs::directory_iterator(folder)) {
    fs::remove(entry.path());
  }
  fs::remove(out / "index.csv");
  fs::create_symlink("/dev/full", folder / "trace.csv");
  const Result r = run(fmt::format("sweep '{}' --out '{}' -q", sweep.string(), out.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}: {}: cannot write file (No space left on device); got "
                             "\"{}\"; expected a writable file system with free space\n",
                             folder.string(),
                             (folder / "trace.csv").string(),
                             (folder / "trace.csv").string()));
}

TEST_CASE("reliability: configs are read from regular files of bounded size",
          "[experiments][reliability]") {
  const auto dir = scratch("config_files");
  const auto out = (dir / "out").string();
  Result r = run(fmt::format("run /dev/zero --out '{}'", out), dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: /dev/zero: cannot open config file: not a regular file; expected a JSON file\n");
  REQUIRE(::mkfifo((dir / "fifo.json").c_str(), 0666) == 0);
  r = run(fmt::format("theory '{}'", (dir / "fifo.json").string()), dir);  // no writer: no wait
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}: cannot open config file: not a regular file; expected a "
                             "JSON file\n",
                             (dir / "fifo.json").string()));
  // One byte over the cap (a sparse file: nothing is written to disk).
  const auto big = dir / "big.json";
  std::ofstream(big) << "{}";
  fs::resize_file(big, (std::size_t{16} << 20) + 1);
  r = run(fmt::format("run '{}' --out '{}'", big.string(), out), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}: config file too large; got 16777217 bytes; expected at "
                             "most 16777216 bytes (data belongs in a data file named by "
                             "/data/path)\n",
                             big.string()));
  // The same reader for advise, whose config must be an object like run's and theory's.
  const auto array = write(dir, "a.json", "[1, 2]");
  r = run(fmt::format("advise '{}'", array.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err ==
        fmt::format("error: {}:/: wrong type; got [1,2]; expected an object\n", array.string()));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("reliability: syntax errors name file line and column and say error",
          "[experiments][reliability]") {
  const auto dir = scratch("syntax");
  const auto broken = write(dir, "b.json", "{\n  \"workers\": 8,\n  x\n}\n");
  Result r = run(fmt::format("theory '{}'", broken.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:3:3: invalid JSON: syntax error while parsing object key "
                             "- invalid literal; last read: '8,<U+000A>  x'; expected string "
                             "literal\n",
                             broken.string()));
  // Command-line mistakes: CLI11's message behind the same prefix, exit 2.
  r = run("run", dir);
  CHECK(r.status == 2);
  CHECK(r.err == "error: config is required\nRun with --help for more information.\n");
  r = run("codes --workers x --code '{}'", dir);
  CHECK(r.status == 2);
  CHECK(r.err.rfind("error: --workers: ", 0) == 0);
}

TEST_CASE("reliability: nested sweep grid keys are refused with both keys",
          "[experiments][reliability]") {
  const auto dir = scratch("nested_grid");
  const auto sweep = write_json(
      dir,
      "s.json",
      nlohmann::json{
          {"base", delay_only(4, 3)},
          {"grid", {{"/code", {nlohmann::json::array()}}, {"/code/kind", {"uncoded"}}}}});
  const Result r =
      run(fmt::format("sweep '{}' --out '{}'", sweep.string(), (dir / "out").string()), dir);
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/grid/~1code~1kind: inside the value of grid key /code, "
                             "which replaces it; got \"/code/kind\"; expected grid keys that do "
                             "not nest: vary /code or the keys inside it, not both\n",
                             sweep.string()));
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("reliability: extreme delay parameters never reach an internal error",
          "[experiments][reliability]") {
  const auto dir = scratch("extreme_delays");
  const std::vector<nlohmann::json> delays = {
      {{"kind", "bimodal"}, {"rate", 1e-300}},
      {{"kind", "heterogeneous"}, {"rate", 1e-300}, {"factors", {1, 1, 1, 1}}},
      {{"kind", "markov"}, {"slow_rate", 1e-200}},
      {{"kind", "bimodal"}, {"slowdown", 1e300}},
  };
  for (const auto& delay : delays) {
    INFO(delay.dump());
    nlohmann::json c = delay_only(4, 2);
    c["delay"] = delay;
    const auto cfg = write_json(dir, "c.json", c);
    const auto out = dir / "out";
    fs::remove_all(out);
    const Result r = run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir);
    // The prediction in summary.json is skipped with its reason; the simulated times overflow
    // (numerical trouble, exit 3) or stay finite (exit 0).
    CHECK((r.status == 0 || r.status == 3));
    REQUIRE(fs::exists(out / "summary.json"));
    const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
    const std::string problem = summary["theory"]["iteration_time_problem"].get<std::string>();
    CHECK(problem.rfind("iteration-time integral ", 0) == 0);
    CHECK(problem.find("(delays too extreme for the quadrature)") != std::string::npos);
    const Result t = run(fmt::format("theory '{}'", cfg.string()), dir);
    CHECK(t.status == 0);
    CHECK(t.out.find("(delays too extreme for the quadrature)") != std::string::npos);
  }
}

TEST_CASE("reliability: fit leaves out families whose estimate overflows",
          "[experiments][reliability]") {
  const auto dir = scratch("fit_overflow");
  // Three times of 1e308: the exponential rate underflows to 0, which Boost.Math refuses. The
  // heavy-tailed families are fitted, with finite numbers, but their likelihood grows towards
  // the search bound of the shift (flagged): no family is eligible, and `fit` says so.
  const std::vector<std::vector<double>> times = {{1e308, 1e308, 1e308, 1.0, 2.0}};
  const stragglersim::sim::DelayFitReport report =
      stragglersim::sim::fit_delay_models(times, false);
  std::size_t refused = 0;
  for (const auto& f : report.fits) {
    if (f.family == "shifted_exponential" || f.family == "bimodal") {
      CHECK(f.problem ==
            "estimate not finite (times too large or too spread for double precision)");
      ++refused;
    }
    if (f.fitted()) {  // every family still ranked has finite numbers
      INFO(f.family);
      CHECK(std::isfinite(f.aic));
      CHECK(std::isfinite(f.ks.p_value));
      CHECK(f.degenerate());
    }
  }
  CHECK(refused == 2);
  CHECK_FALSE(report.best.has_value());
  const auto csv = write(dir, "t.csv", "worker,seconds\n0,1e308\n0,1e308\n0,1e308\n0,1\n0,2\n");
  const Result r = run(fmt::format("fit '{}' --json", csv.string()), dir);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(": no delay family could be fitted without a degenerate flag; got 5 times; the "
                   "fitted ones are all flagged: pareto, lognormal, weibull") != std::string::npos);
}

TEST_CASE("reliability: thread counts are capped by the machine", "[experiments][reliability]") {
  const auto dir = scratch("threads_cap");
  nlohmann::json c = logistic(0.1);
  c["threads"] = 1024;
  const auto cfg = write_json(dir, "c.json", c);
  const int cap =
      std::max(8, 4 * static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  const Result r = run(fmt::format("theory '{}'", cfg.string()), dir);
  if (cap >= 1024) {
    return;  // a machine this large accepts it
  }
  CHECK(r.status == 2);
  CHECK(r.err == fmt::format("error: {}:/threads: out of range; got 1024; expected an integer <= "
                             "{}\n",
                             cfg.string(),
                             cap));
}

TEST_CASE(
    "reliability: a process that may start no thread runs on one or refuses the threads "
    "backend",
    "[experiments][reliability]") {
  // RLIMIT_NPROC of 1 (for root, which the kernel exempts, under an unprivileged user): every
  // thread the process asks for fails with EAGAIN.
  const auto dir = scratch("no_threads");
  fs::permissions(dir, fs::perms::all);
  nlohmann::json c = logistic(0.1);
  c["threads"] = 8;
  const auto many = write_json(dir, "many.json", c);
  c["threads"] = 1;
  const auto one = write_json(dir, "one.json", c);
  c["backend"] = {{"kind", "threads"}, {"seconds_per_unit", 0.001}};
  const auto backend = write_json(dir, "backend.json", c);
  write(dir,
        "times.csv",
        "iteration,worker,seconds\n0,0,1.5\n0,1,2\n1,0,1.2\n1,1,2.5\n2,0,1.1\n2,1,3\n3,0,1.7\n"
        "3,1,2.2\n4,0,1.3\n4,1,2.9\n5,0,1.05\n5,1,2.4\n");
  const std::string user =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const auto limited = [&](const std::string& args) {
    // LeakSanitizer's exit check needs a thread of its own: off in the sanitizer build (the
    // variable is ignored elsewhere).
    const std::string cmd =
        fmt::format("{}env ASAN_OPTIONS=detect_leaks=0 prlimit --nproc=1:1 {} {} > '{}' 2> '{}'",
                    user,
                    stragglersim::testing::cli_binary(),
                    args,
                    (dir / "out.txt").string(),
                    (dir / "err.txt").string());
    Result r;
    r.status = stragglersim::testing::exit_status(std::system(cmd.c_str()));
    r.out = slurp(dir / "out.txt");
    r.err = slurp(dir / "err.txt");
    return r;
  };
  const Result starved =
      limited(fmt::format("run {} -o {} -q", many.string(), (dir / "a").string()));
  INFO(starved.err);
  CHECK(starved.status == 0);
  REQUIRE(run(fmt::format("run '{}' -o '{}' -q", one.string(), (dir / "b").string()), dir).status ==
          0);
  CHECK(slurp(dir / "a" / "trace.csv") == slurp(dir / "b" / "trace.csv"));
  CHECK(limited(fmt::format("fit {}", (dir / "times.csv").string())).status == 0);
  const Result refused =
      limited(fmt::format("run {} -o {} -q", backend.string(), (dir / "c").string()));
  CHECK(refused.status == 2);
  CHECK(refused.err ==
        "error: threads backend: cannot start a thread per worker (Resource "
        "temporarily unavailable); got 0 of 4 started; expected at most as many "
        "workers as this process may start threads\n");
}

TEST_CASE("reliability: a one-class test set leaves the AUC cells empty",
          "[experiments][reliability]") {
  const auto dir = scratch("one_class_auc");
  nlohmann::json c = logistic(0.1);
  c["data"]["rows"] = 10;
  c["data"]["test_fraction"] = 0.1;
  c["workers"] = 3;
  const auto cfg = write_json(dir, "c.json", c);
  const auto out = dir / "out";
  const Result r = run(fmt::format("run '{}' --out '{}'", cfg.string(), out.string()), dir);
  REQUIRE(r.status == 0);
  const std::string trace = slurp(out / "trace.csv");
  const std::string header = trace.substr(0, trace.find('\n'));
  REQUIRE(header.ends_with(",test_auc"));
  const auto rows = rows_of(trace);
  REQUIRE(rows.size() == 21);
  for (const auto& row : rows) {
    // The line ends with a comma: getline drops the empty last cell.
    CHECK(row.size() == 12);
  }
  CHECK(trace.find("nan") == std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  CHECK(summary["final_test_auc"].is_null());
}

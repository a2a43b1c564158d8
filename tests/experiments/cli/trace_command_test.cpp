// `stragglersim trace import` (experiments/cli/trace_command.cpp, docs/traces.md): the summary it
// prints, the file it writes, exit 2 with nothing written for bad files and options, and the
// shipped imported traces (data/traces/imported) re-created byte for byte by import_all.sh.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::run_stragglersim;
using testing::slurp;
using testing::TempDir;

/// Runs `trace import ARGS --out OUT` in `dir`; requires exit 0 and checks the file written.
testing::CommandResult import_ok(const TempDir& dir,
                                 const std::string& args,
                                 const std::string& out,
                                 const std::string& written) {
  const auto r = run_stragglersim("trace import " + args + " --out " + out, dir.path());
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  CHECK(slurp(out) == written);
  return r;
}

TEST_CASE("cli: trace import converts a csv table and says how", "[trace_import][cli]") {
  const TempDir dir("trace_cli");
  const std::string in = dir.write("t.csv",
                                   ",host,step,t_ms\n0,b,3,250\n1,a,3,500\n2,b,1,1000\n3,a,1,1500\n"
                                   "4,a,4,2000\n");
  const std::string out = (dir.path() / "times.csv").string();
  const std::string args =
      in + " --format csv --iteration step --worker host --seconds t_ms --scale 1e-3";
  // Iteration 4 has no time of worker b: dropped (the default), or censored.
  const auto r =
      import_ok(dir, args, out, "iteration,worker,seconds\n1,0,1.5\n1,1,1\n3,0,0.5\n3,1,0.25\n");
  CHECK(r.out == in + ": 2 workers, 2 iterations written to " + out +
                     "; 1 missing cells: 1 iterations dropped, 0 times censored\n"
                     "workers 0..1 are the source's worker ids in sorted order: 0=a 1=b\n"
                     "times written: median 0.75, mean 0.8125, max 1.5\n"
                     "iterations keep the source's numbers: 1..3\n");
  const auto c =
      import_ok(dir,
                args + " --missing censor",
                out,
                "iteration,worker,seconds\n1,0,1.5\n1,1,1\n3,0,0.5\n3,1,0.25\n4,0,2\n4,1,\n");
  CHECK(c.out == in + ": 2 workers, 3 iterations written to " + out +
                     "; 1 missing cells: 0 iterations dropped, 1 times censored\n"
                     "workers 0..1 are the source's worker ids in sorted order: 0=a 1=b\n"
                     "times written: median 1, mean 1.05, max 2\n"
                     "iterations keep the source's numbers: 1..4\n");
}

TEST_CASE("cli: trace import sums chrome events and lists the steps", "[trace_import][cli]") {
  const TempDir dir("trace_cli");
  const std::string in = dir.write("t.json",
                                   R"({"traceEvents": [
        {"name": "fwd", "ph": "X", "pid": 3, "tid": 1, "dur": 2000000, "args": {"step": 40}},
        {"name": "bwd", "ph": "X", "pid": 3, "tid": 2, "dur": 500000, "args": {"step": 40}},
        {"name": "fwd", "ph": "X", "pid": 1, "tid": 1, "dur": 1000000, "args": {"step": 40}},
        {"name": "fwd", "ph": "X", "pid": 1, "tid": 1, "dur": 250000, "args": {"step": 12}},
        {"name": "opt", "ph": "X", "pid": 3, "tid": 1, "dur": 7, "args": {"step": 12}}
      ]})");
  const std::string out = (dir.path() / "times.csv").string();
  const std::string args = in + " --format chrome --events fwd,bwd";
  // Step 12 → 0 (pid 3 has no fwd/bwd there: censored), step 40 → 1.
  const auto r = import_ok(dir,
                           args + " --missing censor",
                           out,
                           "iteration,worker,seconds\n0,0,0.25\n0,1,\n1,0,1\n1,1,2.5\n");
  CHECK(r.out == in + ": 2 workers, 2 iterations written to " + out +
                     "; 1 missing cells: 0 iterations dropped, 1 times censored\n"
                     "workers 0..1 are the source's pids in sorted order: 0=1 1=3\n"
                     "times written: median 1, mean 1.25, max 2.5\n"
                     "iterations 0..1 are the steps: 0=12 1=40\n");
  const auto ranks = import_ok(
      dir, args + " --group-by rank", out, "iteration,worker,seconds\n0,0,1\n0,1,2\n0,2,0.5\n");
  CHECK(ranks.out == in + ": 3 workers, 1 iterations written to " + out +
                         "; 2 missing cells: 1 iterations dropped, 0 times censored\n"
                         "workers 0..2 are the source's pid/tid pairs in sorted order: 0=1/1 "
                         "1=3/1 2=3/2\n"
                         "times written: median 1, mean 1.16667, max 2\n"
                         "iterations 0..0 are the steps: 0=40\n");
}

TEST_CASE("cli: trace import reads PyTorch profiler traces one file per rank",
          "[trace_import][cli]") {
  // tests/fit/pytorch_profiler: ranks 1, 0, 2 in this order, rank 2 without step 5 (the
  // durations are worked out in tests/fit/trace_import_test.cpp).
  const std::string fixture =
      std::string(stragglersim::testing::source_dir()) + "/tests/fit/pytorch_profiler/";
  const std::string files = fixture + "node-a_3977.1733561000119.pt.trace.json " + fixture +
                            "node-b_4120.1733561000123.pt.trace.json " + fixture +
                            "node-c_4415.1733561000131.pt.trace.json";
  const TempDir dir("trace_cli_profiler");
  const std::string out = (dir.path() / "times.csv").string();
  const auto r = import_ok(dir,
                           files + " --format chrome -q",
                           out,
                           "iteration,worker,seconds\n0,0,0.25\n0,1,0.251\n0,2,0.249\n"
                           "1,0,0.2625\n1,1,0.259\n1,2,0.263\n");
  CHECK(r.out == fixture +
                     "node-a_3977.1733561000119.pt.trace.json and 2 more: 3 workers, 2 "
                     "iterations written to " +
                     out +
                     "; 1 missing cells: 1 iterations dropped, 0 times censored\n"
                     "workers 0..2 are the source's ranks (one file each) in sorted order: 0=0 "
                     "1=1 2=2\n"
                     "times written: median 0.255, mean 0.25575, max 0.263\n"
                     "iterations 0..1 are the steps: 0=3 1=4\n");
  const auto csv =
      run_stragglersim("trace import " + files + " --format csv --out " + out, dir.path());
  CHECK(csv.status == 2);
  CHECK(csv.err ==
        "error: FILE: more than one file; got \"3\"; expected one CSV file (several "
        "files are chrome traces, one per rank)\n");
}

TEST_CASE("cli: trace import refuses bad files and options with exit 2", "[trace_import][cli]") {
  const TempDir dir("trace_cli");
  const std::string csv = dir.write("t.csv", "iteration,worker,seconds\n1,0,1\n1,1,x\n");
  const std::string json = dir.write("t.json", R"([{"name": "a", "ph": "X", "pid": 0}])");
  const std::string out = (dir.path() / "times.csv").string();
  const auto check = [&](const std::string& args, const std::string& message) {
    const auto r = run_stragglersim("trace import " + args + " --out " + out, dir.path());
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + message + "\n");
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(out));
  };
  check(csv + " --format csv",
        csv +
            ":3: malformed time in column 'seconds'; got 'x' (expected a number ≥ 0, or an "
            "empty field for a missing time)");
  check(json + " --format chrome --events a",
        json + ": event 0: no 'dur' (expected a duration ≥ 0 in microseconds)");
  check(csv + " --format tsv",
        "--format: unknown format; got \"tsv\"; expected one of: chrome, csv");
  check(csv + " --format csv --events a",
        "--events: not an option of --format csv; got \"--events\"; expected --format chrome");
  check(json + " --format chrome --scale 2",
        "--scale: not an option of --format chrome; got \"--scale\"; expected --format csv");
  check(csv + " --format csv --scale 0",
        "--scale: out of range; got \"0\"; expected a finite number > 0");
  check(csv + " --format csv --worker ''",
        "--worker: empty column name; got \"\"; expected the name of a header column");
  check(json + " --format chrome --group-by host",
        "--group-by: unknown grouping; got \"host\"; expected one of: dp_rank, rank");
  check(csv + " --format csv --missing keep",
        "--missing: unknown rule; got \"keep\"; expected one of: censor, drop");
  const std::string folder = dir.path().string();
  const auto r =
      run_stragglersim("trace import " + csv + " --format csv --out " + folder, dir.path());
  CHECK(r.status == 2);
  CHECK(r.err == "error: --out: is a folder; got \"" + folder + "\"; expected a file name\n");
}

TEST_CASE("cli: import_all.sh re-creates the shipped imported traces byte for byte",
          "[trace_import][cli][heavy]") {
  const TempDir dir("trace_cli_all");
  const std::filesystem::path source(stragglersim::testing::source_dir());
  const auto r = run_stragglersim("--version", dir.path());  // the binary exists and runs
  REQUIRE(r.status == 0);
  const std::string command = "bash '" + (source / "data/traces/import_all.sh").string() + "' '" +
                              stragglersim::testing::cli_binary() + "' '" + dir.path().string() +
                              "' > '" + (dir.path() / "log.txt").string() + "' 2>&1";
  REQUIRE(testing::exit_status(std::system(command.c_str())) == 0);
  const std::vector<std::string> files = {"pai_job1.csv",
                                          "pai_job2.csv",
                                          "pai_job3.csv",
                                          "pai_job4.csv",
                                          "bytedance_ar.csv",
                                          "bytedance_se.csv",
                                          "bytedance_st.csv"};
  for (const auto& f : files) {
    INFO(f);
    const std::string shipped = slurp(source / "data/traces/imported" / f);
    REQUIRE_FALSE(shipped.empty());
    CHECK(slurp(dir.path() / f) == shipped);
  }
}

}  // namespace
}  // namespace stragglersim::experiments

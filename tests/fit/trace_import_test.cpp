// The importers of fit/trace_import.h: a small hand-made file per format with its output worked
// out by hand, both missing-cell rules, every malformed row and event with its exact message,
// gzip and plain alike, and the shipped real traces (data/traces) with counts taken
// independently of this code.

#include "fit/trace_import.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "fit/delay_trace.h"
#include "tests/idx_fixture.h"
#include "tests/test_support.h"

namespace stragglersim::sim {
namespace {

using testing::message_of;
using testing::TempDir;

const std::string kData = std::string(stragglersim::testing::source_dir()) + "/data/traces/";

std::string csv_of(const TimeTable& table, MissingCells missing = MissingCells::kDrop) {
  return write_imported_trace(table, missing).csv;
}

void write_gzip(const std::string& path, const std::string& text) {
  testing::write_idx_file(path, testing::IdxByteVector(text.begin(), text.end()), true);
}

CsvImportOptions hand_csv_options() {
  CsvImportOptions o;
  o.iteration_column = "step";
  o.worker_column = "host";
  o.seconds_column = "t_ms";
  o.scale = 1e-3;
  return o;
}

TEST_CASE("trace_import: csv columns chosen by name and scaled", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  // An unnamed index column, named workers, rows out of order, an extra column, a quoted field.
  const std::string path = dir.write("t.csv",
                                     ",host,step,t_ms,note\n"
                                     "0,b,3,250,x\n"
                                     "1,a,3,500,\"y,z\"\n"
                                     "2,b,1,1000,\n"
                                     "3,a,1,1500,w\n");
  const TimeTable t = import_csv_times(path, hand_csv_options());
  CHECK(t.worker_ids == std::vector<std::string>{"a", "b"});
  CHECK(t.source_iterations == std::vector<std::int64_t>{1, 3});
  CHECK_FALSE(t.renumbered);
  // 1500·10⁻³ = 1.5 and so on: workers a → 0, b → 1, iterations keep their numbers.
  const ImportedTrace out = write_imported_trace(t, MissingCells::kDrop);
  CHECK(out.csv == "iteration,worker,seconds\n1,0,1.5\n1,1,1\n3,0,0.5\n3,1,0.25\n");
  CHECK(out.workers == 2);
  CHECK(out.iterations == 2);
  CHECK(out.missing_cells == 0);
  CHECK(out.dropped_iterations == 0);
  CHECK(out.censored_cells == 0);
  CHECK(out.source_iterations == std::vector<std::int64_t>{1, 3});
  // Of 0.25, 0.5, 1, 1.5.
  CHECK(out.median == 0.75);
  CHECK(out.mean == 0.8125);
  CHECK(out.max == 1.5);
}

TEST_CASE("trace_import: milliseconds scaled by 1e-3 are written as their shortest decimal",
          "[fit][trace_import]") {
  // Every time from 1 to 20000 ms, plus fractional and exponent forms: the written seconds are
  // the double nearest the decimal quotient, printed shortest (691 ms is 0.691, where 691 · 0.001
  // in floating point is 0.6910000000000001).
  const TempDir dir("trace_import");
  constexpr int kMilliseconds = 20000;
  std::string text = "iteration,worker,seconds\n";
  std::string expected = "iteration,worker,seconds\n";
  for (int i = 1; i <= kMilliseconds; ++i) {
    text += fmt::format("{},0,{}\n", i, i);
    const std::string decimal = fmt::format("{}.{:03}", i / 1000, i % 1000);
    expected += fmt::format("{},0,{}\n", i, std::stod(decimal));
  }
  text += fmt::format("{},0,12.5\n{},0,1.5e3\n{},0,+0.25\n",
                      kMilliseconds + 1,
                      kMilliseconds + 2,
                      kMilliseconds + 3);
  expected += fmt::format("{},0,0.0125\n{},0,1.5\n{},0,0.00025\n",
                          kMilliseconds + 1,
                          kMilliseconds + 2,
                          kMilliseconds + 3);
  CsvImportOptions ms;
  ms.scale = 1e-3;
  CHECK(csv_of(import_csv_times(dir.write("ms.csv", text), ms)) == expected);
  // Microseconds alike; a scale that is no power of ten multiplies.
  CsvImportOptions us;
  us.scale = 1e-6;
  CHECK(csv_of(import_csv_times(dir.write("us.csv", "iteration,worker,seconds\n0,0,691\n"), us)) ==
        "iteration,worker,seconds\n0,0,0.000691\n");
  CsvImportOptions minutes;
  minutes.scale = 60.0;
  CHECK(csv_of(import_csv_times(dir.write("min.csv", "iteration,worker,seconds\n0,0,0.7\n"),
                                minutes)) ==
        fmt::format("iteration,worker,seconds\n0,0,{}\n", 0.7 * 60.0));
}

TEST_CASE("trace_import: csv worker ids sorted numerically or as text", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const std::string numeric =
      dir.write("n.csv", "iteration,worker,seconds\n0,10,1\n0,9,2\n0,-2,3\n0,007,4\n");
  CHECK(import_csv_times(numeric).worker_ids == std::vector<std::string>{"-2", "007", "9", "10"});
  const std::string text =
      dir.write("s.csv", "iteration,worker,seconds\n0,w10,1\n0,w9,2\n0,10,3\n");
  const TimeTable t = import_csv_times(text);
  CHECK(t.worker_ids == std::vector<std::string>{"10", "w10", "w9"});
  CHECK(csv_of(t) == "iteration,worker,seconds\n0,0,3\n0,1,1\n0,2,2\n");
}

TEST_CASE("trace_import: csv repeated rows with the same time are merged", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const std::string path =
      dir.write("r.csv", "iteration,worker,seconds\n1,0,2\n1,1,3\n1,0,2\n1,1,3.0\n");
  const TimeTable t = import_csv_times(path);
  CHECK(t.repeated_rows == 2);
  CHECK(csv_of(t) == "iteration,worker,seconds\n1,0,2\n1,1,3\n");
}

TEST_CASE("trace_import: missing cells dropped or censored", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  // Iteration 2 has no row for worker 1; iteration 3 an empty time for worker 0.
  const std::string path = dir.write(
      "m.csv", "iteration,worker,seconds\n1,0,1\n1,1,2\n2,0,3\n3,0,\n3,1,4\n5,0,6\n5,1,7\n");
  const TimeTable t = import_csv_times(path);
  CHECK(t.missing_cells() == 2);
  const ImportedTrace dropped = write_imported_trace(t, MissingCells::kDrop);
  CHECK(dropped.csv == "iteration,worker,seconds\n1,0,1\n1,1,2\n5,0,6\n5,1,7\n");
  CHECK(dropped.missing_cells == 2);
  CHECK(dropped.dropped_iterations == 2);
  CHECK(dropped.censored_cells == 0);
  CHECK(dropped.source_iterations == std::vector<std::int64_t>{1, 5});
  const ImportedTrace censored = write_imported_trace(t, MissingCells::kCensor);
  CHECK(censored.csv ==
        "iteration,worker,seconds\n1,0,1\n1,1,2\n2,0,3\n2,1,\n3,0,\n3,1,4\n5,0,6\n5,1,7\n");
  CHECK(censored.dropped_iterations == 0);
  CHECK(censored.censored_cells == 2);
  CHECK(censored.iterations == 4);
  // Of 1, 2, 3, 4, 6, 7 (the censored cells left out).
  CHECK(censored.median == 3.5);
  CHECK(censored.mean == 23.0 / 6.0);
  CHECK(censored.max == 7.0);
  // The trace reader takes the censored cells as +∞ on the lines written.
  const std::string written = dir.write("out.csv", censored.csv);
  const DelayTrace back = read_delay_trace(written);
  CHECK(back.workers == 2);
  CHECK(back.iterations == std::vector<std::int64_t>{1, 2, 3, 5});
  CHECK(back.censored_lines == std::vector<std::int64_t>{5, 6});
  CHECK(std::isinf(back.per_iteration[1][1]));
  CHECK(back.per_iteration[2][1] == 4.0);
  // Nothing complete under drop.
  const std::string none = dir.write("none.csv", "iteration,worker,seconds\n1,0,1\n2,1,2\n");
  CHECK(message_of<TraceFileError>([&] {
          (void)write_imported_trace(import_csv_times(none), MissingCells::kDrop);
        }) == none +
                  ": no iteration has a time for every worker; got 2 iterations, 2 missing "
                  "cells (expected at least one complete iteration, or --missing censor)");
}

TEST_CASE("trace_import: malformed csv names file:line and what was expected",
          "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const auto check = [&](const std::string& contents,
                         const std::string& message,
                         const CsvImportOptions& options = {}) {
    const std::string path = dir.write("bad.csv", contents);
    CHECK(message_of<TraceFileError>([&] { (void)import_csv_times(path, options); }) ==
          path + message);
  };
  const std::string absent = (dir.path() / "absent.csv").string();
  CHECK(message_of<TraceFileError>([&] { (void)import_csv_times(absent); }) ==
        absent + ":0: cannot open file (expected a readable CSV file of measured times)");
  check("\n \n", ":1: empty file (expected a header naming the columns)");
  check(",worker,gpu,time\n",
        ":1: header has no column 'iteration'; got ',worker,gpu,time' (expected a header naming "
        "the --iteration column)");
  check("iteration,worker,worker,seconds\n",
        ":1: header names column 'worker' twice (expected one column of each name chosen)");
  check("iteration,worker,seconds\n",
        ":1: no data rows after the header (expected at least one row)");
  check("iteration,worker,seconds\n\n1,0,1\n1,1\n",
        ":4: too few fields; got 2 (expected at least 3, as the header names)");
  check("iteration,worker,seconds\n1.5,0,1\n",
        ":2: malformed iteration in column 'iteration'; got '1.5' (expected an integer ≥ 0)");
  check("iteration,worker,seconds\n-1,0,1\n",
        ":2: malformed iteration in column 'iteration'; got '-1' (expected an integer ≥ 0)");
  check("iteration,worker,seconds\n1, ,1\n",
        ":2: empty worker id in column 'worker' (expected an integer or a name)");
  check("iteration,worker,seconds\n1,0,1s\n",
        ":2: malformed time in column 'seconds'; got '1s' (expected a number ≥ 0, or an empty "
        "field for a missing time)");
  check("iteration,worker,seconds\n1,0,-2\n",
        ":2: time in column 'seconds' must be finite and ≥ 0; got -2 (expected a measured time)");
  check("iteration,worker,seconds\n1,0,inf\n",
        ":2: time in column 'seconds' must be finite and ≥ 0; got inf (expected a measured time)");
  CsvImportOptions scaled;
  scaled.scale = 1e300;
  check("iteration,worker,seconds\n1,0,1e10\n",
        ":2: time in column 'seconds' must be finite and ≥ 0 after --scale 1e+300; got 1e10 "
        "(expected a measured time)",
        scaled);
  check("iteration,worker,seconds\n1,0,1\n1,1,2\n1,0,1.5\n",
        ":4: iteration 1 of worker '0' has another time on line 2; got 1.5 here and 1 there "
        "(expected one time per worker per iteration; repeated rows with the same time are "
        "merged)");
  check("iteration,worker,seconds\n1,0,\n1,0,1\n",
        ":3: iteration 1 of worker '0' has another time on line 2; got 1 here and an empty field "
        "there (expected one time per worker per iteration; repeated rows with the same time are "
        "merged)");
}

// Four selected events of data-parallel rank 1 in step 7 (two on tid 5, one on tid 6) and
// others that must be skipped: metadata, a begin event, a name not selected.
const std::string kHandEvents = R"([
  {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute"}},
  {"name": "forward-compute", "ph": "X", "pid": 1, "tid": 5, "ts": 0, "dur": 1500, "args": {"step": 7}},
  {"name": "backward-compute", "ph": "X", "pid": 1, "tid": 5, "ts": 9, "dur": 2500, "args": {"step": 7}},
  {"name": "forward-compute", "ph": "X", "pid": 1, "tid": 6, "ts": 1, "dur": 250, "args": {"step": 7}},
  {"name": "optimizer", "ph": "X", "pid": 0, "tid": 0, "ts": 2, "dur": 99999, "args": {"step": 7}},
  {"name": "forward-compute", "ph": "X", "pid": 0, "tid": 0, "ts": 3, "dur": 1000, "args": {"step": 7}},
  {"name": "forward-compute", "ph": "X", "pid": 0, "tid": 0, "ts": 4, "dur": 3000.0, "args": {"step": 2}},
  {"name": "forward-compute", "ph": "B", "pid": 1, "tid": 5, "ts": 5, "args": {"step": 2}},
  {"name": "backward-compute", "ph": "X", "pid": 1, "tid": 6, "ts": 6, "dur": 500, "args": {"step": 2}}
])";

TEST_CASE("trace_import: chrome sums per step and data-parallel rank", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const std::string list = dir.write("list.json", kHandEvents);
  const std::string object = dir.write("object.json", "{\"traceEvents\": " + kHandEvents + "}");
  const std::string gzipped = (dir.path() / "object.json.gz").string();
  write_gzip(gzipped, "{\"traceEvents\": " + kHandEvents + ", \"displayTimeUnit\": \"ms\"}");
  // Step 2 → 0: pid 0 3000 µs, pid 1 500 µs; step 7 → 1: pid 0 1000 µs, pid 1
  // 1500 + 2500 + 250 = 4250 µs.
  const std::string expected =
      "iteration,worker,seconds\n0,0,0.003\n0,1,0.0005\n1,0,0.001\n1,1,0.00425\n";
  for (const std::string& path : {list, object, gzipped}) {
    const TimeTable t = import_chrome_times(path);
    CHECK(t.worker_ids == std::vector<std::string>{"0", "1"});
    CHECK(t.source_iterations == std::vector<std::int64_t>{2, 7});
    CHECK(t.renumbered);
    CHECK(csv_of(t) == expected);
  }
  ChromeImportOptions optimizer;
  optimizer.events = {"optimizer"};
  const TimeTable o = import_chrome_times(list, optimizer);
  CHECK(o.worker_ids == std::vector<std::string>{"0"});
  CHECK(csv_of(o) == "iteration,worker,seconds\n0,0,0.099999\n");
}

TEST_CASE("trace_import: chrome grouped by rank with a missing cell", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const std::string path = dir.write("list.json", kHandEvents);
  ChromeImportOptions by_rank;
  by_rank.group_by = TraceGrouping::kRank;
  const TimeTable t = import_chrome_times(path, by_rank);
  CHECK(t.worker_ids == std::vector<std::string>{"0/0", "1/5", "1/6"});
  // Step 2 has nothing on (1, 5) (its event there is a begin event).
  CHECK(t.missing_cells() == 1);
  const ImportedTrace dropped = write_imported_trace(t, MissingCells::kDrop);
  CHECK(dropped.csv == "iteration,worker,seconds\n0,0,0.001\n0,1,0.004\n0,2,0.00025\n");
  CHECK(dropped.source_iterations == std::vector<std::int64_t>{7});
  CHECK(dropped.dropped_iterations == 1);
  const ImportedTrace censored = write_imported_trace(t, MissingCells::kCensor);
  CHECK(
      censored.csv ==
      "iteration,worker,seconds\n0,0,0.003\n0,1,\n0,2,0.0005\n1,0,0.001\n1,1,0.004\n1,2,0.00025\n");
  CHECK(censored.source_iterations == std::vector<std::int64_t>{2, 7});
  CHECK(censored.censored_cells == 1);
}

// Three ranks of a PyTorch profiler export (torch.profiler's export_chrome_trace): complete
// ProfilerStep#3..5 events, aten:: ops and GPU kernels inside them, a warm-up op before the first
// step, distributedInfo naming the rank. Named by host (node-a is rank 1, node-b rank 0, node-c
// rank 2); rank 2's trace ends after step 4. The fixture's numbers, by hand:
//   ProfilerStep durations (µs)  rank 0: 250000, 262500, 248000; rank 1: 251000, 259000, 300500;
//                                rank 2: 249000, 263000
//   aten::mm per step (µs)       rank 0: 30000 + 45000, 31000 + 44000, 29500 + 45500;
//                                rank 1: 30500 + 45500, 30000 + 46000, 60000 + 45000;
//                                rank 2: 29000 + 47000, 31500 + 44500
const std::string kProfiler =
    std::string(stragglersim::testing::source_dir()) + "/tests/fit/pytorch_profiler/";
const std::vector<std::string> kProfilerFiles = {
    kProfiler + "node-a_3977.1733561000119.pt.trace.json",
    kProfiler + "node-b_4120.1733561000123.pt.trace.json",
    kProfiler + "node-c_4415.1733561000131.pt.trace.json"};

TEST_CASE("trace_import: PyTorch profiler traces one file per rank with steps from ProfilerStep",
          "[fit][trace_import]") {
  // The default events are absent: each step's time is its ProfilerStep#N duration.
  const TimeTable steps = import_chrome_times(kProfilerFiles);
  CHECK(steps.worker_ids == std::vector<std::string>{"0", "1", "2"});
  CHECK(steps.ranks_by_file);
  CHECK(steps.source_iterations == std::vector<std::int64_t>{3, 4, 5});
  CHECK(steps.missing_cells() == 1);
  CHECK(csv_of(steps) ==
        "iteration,worker,seconds\n0,0,0.25\n0,1,0.251\n0,2,0.249\n"
        "1,0,0.2625\n1,1,0.259\n1,2,0.263\n");
  CHECK(csv_of(steps, MissingCells::kCensor).ends_with("2,0,0.248\n2,1,0.3005\n2,2,\n"));
  // Ops by name: each takes the step enclosing its ts; the warm-up op before step 3 is left out.
  ChromeImportOptions mm;
  mm.events = {"aten::mm"};
  CHECK(csv_of(import_chrome_times(kProfilerFiles, mm), MissingCells::kCensor) ==
        "iteration,worker,seconds\n0,0,0.075\n0,1,0.076\n0,2,0.076\n"
        "1,0,0.075\n1,1,0.076\n1,2,0.076\n2,0,0.075\n2,1,0.105\n2,2,\n");
  // The file order does not matter: ranks come from distributedInfo.
  const std::vector<std::string> reversed(kProfilerFiles.rbegin(), kProfilerFiles.rend());
  CHECK(csv_of(import_chrome_times(reversed)) == csv_of(steps));
  // One file alone is its rank's worker.
  const TimeTable one = import_chrome_times(kProfilerFiles[0]);
  CHECK(one.worker_ids == std::vector<std::string>{"1"});
  CHECK(csv_of(one) == "iteration,worker,seconds\n0,0,0.251\n1,0,0.259\n2,0,0.3005\n");
}

TEST_CASE("trace_import: a file rank comes from distributedInfo or its name or its place",
          "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const auto trace = [](double step_us, const std::string& info) {
    return R"({"traceEvents": [{"ph": "X", "name": "ProfilerStep#0", "pid": 9, "tid": 9, "ts": 10,
      "dur": )" +
           fmt::format("{}", step_us) + "}]" + info + "}";
  };
  const std::string named = dir.write("trace_rank3.json", trace(3000, ""));
  const std::string placed = dir.write("host.json", trace(1000, ""));
  const std::string told =
      dir.write("other_rank3.json", trace(2000, R"(, "distributedInfo": {"rank": 7})"));
  // Ranks 3 (name), 1 (second in the list), 7 (distributedInfo): workers in rank order.
  const TimeTable t = import_chrome_times(std::vector<std::string>{named, placed, told});
  CHECK(t.worker_ids == std::vector<std::string>{"1", "3", "7"});
  CHECK(csv_of(t) == "iteration,worker,seconds\n0,0,0.001\n0,1,0.003\n0,2,0.002\n");
  const std::string twin = dir.write("copy_rank-3.json", trace(500, ""));
  CHECK(message_of<TraceFileError>([&] {
          (void)import_chrome_times(std::vector<std::string>{named, twin});
        }) == twin + ": rank 3 is also the rank of " + named + " (expected one file per rank)");
  const std::string bad = dir.write("bad.json", trace(1, R"(, "distributedInfo": {"rank": -1})"));
  CHECK(message_of<TraceFileError>([&] { (void)import_chrome_times(bad); }) ==
        bad + ": 'distributedInfo.rank' is not an integer ≥ 0; got -1 (expected the file's rank)");
  const std::string no_ts =
      dir.write("no_ts.json",
                R"([{"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 9},
          {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "dur": 2}])");
  ChromeImportOptions mm;
  mm.events = {"aten::mm"};
  CHECK(message_of<TraceFileError>([&] { (void)import_chrome_times(no_ts, mm); }) ==
        no_ts +
            ": event 1: 'ts' is not a number; got nothing (expected a timestamp in "
            "microseconds, to find the ProfilerStep#N event enclosing it)");
}

TEST_CASE("trace_import: malformed chrome traces name the event", "[fit][trace_import]") {
  const TempDir dir("trace_import");
  const auto check = [&](const std::string& contents,
                         const std::string& message,
                         TraceGrouping group_by = TraceGrouping::kDataParallelRank) {
    const std::string path = dir.write("bad.json", contents);
    ChromeImportOptions options;
    options.group_by = group_by;
    CHECK(message_of<TraceFileError>([&] { (void)import_chrome_times(path, options); }) ==
          path + message);
  };
  const std::string absent = (dir.path() / "absent.json").string();
  CHECK(message_of<TraceFileError>([&] { (void)import_chrome_times(absent); }) ==
        absent +
            ": cannot open file (expected a readable Chrome trace-event JSON file, plain or "
            "gzip)");
  const std::string fc = R"({"name": "forward-compute", "ph": "X", )";
  check(R"({"traceEvents": 3})",
        ": not a Chrome trace; got a JSON object (expected a list of events or an object with a "
        "'traceEvents' list)");
  check("\"x\"",
        ": not a Chrome trace; got a JSON string (expected a list of events or an object with a "
        "'traceEvents' list)");
  check("[]",
        ": no complete events named forward-compute, backward-compute (expected events with "
        "\"ph\": \"X\" and one of these names)");
  check(R"([{"ph": "M"}, 7])", ": event 1: not an object; got 7 (expected a trace event object)");
  check("[{}, " + fc + R"("dur": 1, "args": {"step": 1}}])",
        ": event 1: no 'pid' (expected an integer process id)");
  check("[" + fc + R"("pid": "0", "dur": 1, "args": {"step": 1}}])",
        ": event 0: 'pid' is not an integer; got \"0\" (expected an integer process id)");
  check("[" + fc + R"("pid": 1.5, "dur": 1, "args": {"step": 1}}])",
        ": event 0: 'pid' is not an integer; got 1.5 (expected an integer process id)");
  check("[" + fc + R"("pid": 18446744073709551615, "dur": 1, "args": {"step": 1}}])",
        ": event 0: 'pid' is not an integer; got 18446744073709551615 (expected an integer "
        "process id)");
  check("[" + fc + R"("pid": 0, "dur": 1, "args": {"step": 1}}])",
        ": event 0: no 'tid' (expected an integer thread id)",
        TraceGrouping::kRank);
  check("[" + fc + R"("pid": 0, "args": {"step": 1}}])",
        ": event 0: no 'dur' (expected a duration ≥ 0 in microseconds)");
  check("[" + fc + R"("pid": 0, "dur": -1, "args": {"step": 1}}])",
        ": event 0: 'dur' is not a number ≥ 0; got -1 (expected a duration ≥ 0 in microseconds)");
  check("[" + fc + R"("pid": 0, "dur": [1], "args": {"step": 1}}])",
        ": event 0: 'dur' is not a number ≥ 0; got a JSON array (expected a duration ≥ 0 in "
        "microseconds)");
  check("[" + fc + R"("pid": 0, "dur": 1}])",
        ": event 0: no 'args' object (expected args.step, the integer step number)");
  check("[" + fc + R"("pid": 0, "dur": 1, "args": {"mb_id": 0}}])",
        ": event 0: no 'args.step' (expected the integer step number)");
  check("[" + fc + R"("pid": 0, "dur": 1, "args": {"step": "1"}}])",
        ": event 0: 'args.step' is not an integer; got \"1\" (expected the integer step number)");
  check("[1, 2",
        ": invalid JSON: [json.exception.parse_error.101] parse error at line 1, column 6: "
        "syntax error while parsing array - unexpected end of input; expected ']' (expected "
        "Chrome trace-event JSON)");
  check(std::string(65, '[') + std::string(65, ']'),
        ": nesting too deep; got more than 64 levels (expected Chrome trace-event JSON)");
  // 64 levels are parsed (and are not a trace).
  check(std::string(64, '[') + std::string(64, ']'),
        ": event 0: not an object; got a JSON array (expected a trace event object)");
  // A gzip stream cut short.
  const std::string whole = (dir.path() / "whole.json.gz").string();
  write_gzip(whole, kHandEvents);
  const std::string bytes = testing::slurp(whole);
  const std::string cut = dir.write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  CHECK(message_of<TraceFileError>([&] { (void)import_chrome_times(cut); }) ==
        cut + ": gzip error: unexpected end of file (expected a complete gzip stream)");
}

// The shipped traces. Every constant below was computed from the source files by a separate
// Python 3 script (csv and gzip+json modules; cells as dicts keyed by (iteration, worker),
// missing = the workers absent from an iteration any worker has, repeated = a key seen again
// with the same time), not by this code.

struct PaiCounts {
  const char* file;
  std::size_t iterations_written;
  std::size_t missing;
  std::size_t dropped;
  std::size_t repeated;
  std::int64_t first;
  std::int64_t last;
  double total;  ///< Σ of the times written
  double median;
  double mean;
};

TEST_CASE("trace_import: the Alibaba PAI jobs import with the verified counts",
          "[fit][trace_import]") {
  const std::vector<PaiCounts> jobs = {
      {"job_1_norm.csv", 300, 0, 0, 0, 1, 2988, 1331016.0, 438.0, 443.672},
      {"job_2_norm.csv", 238, 139, 16, 1, 1, 2371, 1922585.0, 831.0, 807.8088235294117},
      {"job_3_norm.csv", 248, 1, 1, 0, 11, 2481, 1791993.0, 709.0, 722.5778225806451},
      {"job_4_norm.csv", 2182, 1, 1, 0, 1, 21811, 3648205.0, 135.0, 167.19546287809348},
  };
  CsvImportOptions pai;
  pai.iteration_column = "time";
  pai.worker_column = "worker";
  pai.seconds_column = "batch_time_norm";
  for (const auto& job : jobs) {
    INFO(job.file);
    const TimeTable t = import_csv_times(kData + "alibaba-pai/" + job.file, pai);
    CHECK(t.worker_ids ==
          std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
    CHECK(t.repeated_rows == job.repeated);
    const ImportedTrace out = write_imported_trace(t, MissingCells::kDrop);
    CHECK(out.workers == 10);
    CHECK(out.iterations == job.iterations_written);
    CHECK(out.missing_cells == job.missing);
    CHECK(out.dropped_iterations == job.dropped);
    CHECK(out.source_iterations.front() == job.first);
    CHECK(out.source_iterations.back() == job.last);
    CHECK(out.median == job.median);
    CHECK(out.mean == Approx(job.mean).epsilon(1e-12));
    CHECK(out.max == 1000.0);  // the normalisation's top
    const ImportedTrace censored = write_imported_trace(t, MissingCells::kCensor);
    CHECK(censored.iterations == job.iterations_written + job.dropped);
    CHECK(censored.censored_cells == job.missing);
    const TempDir dir("trace_import_pai");
    const DelayTrace back = read_delay_trace(dir.write("t.csv", out.csv));
    double total = 0.0;
    for (const auto& row : back.per_iteration)
      total = std::accumulate(row.begin(), row.end(), total);
    CHECK(total == job.total);  // integers: exact
  }
}

struct TimelineCounts {
  const char* file;
  int dp_ranks;
  std::size_t steps;
  std::int64_t first;
  std::int64_t last;
  double first_time;  ///< iteration 0, worker 0
  double total;
  double median;
  double mean;
  double max;
};

TEST_CASE("trace_import: the ByteDance timelines import with the verified counts",
          "[fit][trace_import][heavy]") {
  // clang-format off
  const std::vector<TimelineCounts> jobs = {
      {"timeline-AR.json.gz", 4, 44, 16, 1238, 102.64763715863228, 14823.769266858697,
       78.02893958240747, 84.22596174351533, 104.96016812324524},
      {"timeline-SE.json.gz", 32, 45, 16, 838, 9.225612312555313, 14658.804075039923,
       10.051912255585194, 10.179725052111058, 17.452501982450485},
      {"timeline-ST.json.gz", 2, 32, 23, 1048, 3.7559402361512184, 249.54091626033187,
       3.9260800629854202, 3.8990768165676855, 3.9831017777323723},
  };
  // clang-format on
  for (const auto& job : jobs) {
    INFO(job.file);
    const std::string path = kData + "bytedance/" + job.file;
    const ImportedTrace out = write_imported_trace(import_chrome_times(path), MissingCells::kDrop);
    CHECK(out.workers == job.dp_ranks);
    CHECK(out.iterations == job.steps);
    CHECK(out.missing_cells == 0);
    CHECK(out.source_iterations.front() == job.first);
    CHECK(out.source_iterations.back() == job.last);
    CHECK(out.median == job.median);
    CHECK(out.mean == Approx(job.mean).epsilon(1e-12));
    CHECK(out.max == job.max);
    const TempDir dir("trace_import_bd");
    const DelayTrace back = read_delay_trace(dir.write("t.csv", out.csv));
    CHECK(back.per_iteration[0][0] == job.first_time);
    double total = 0.0;
    for (const auto& row : back.per_iteration)
      total = std::accumulate(row.begin(), row.end(), total);
    CHECK(total == Approx(job.total).epsilon(1e-12));
  }
}

TEST_CASE("trace_import: the ST timeline by rank has one worker per GPU", "[fit][trace_import]") {
  // World size 8 (meta-ST.yaml: dp 2 x pp 4), each rank's compute thread a (pid, tid) pair.
  ChromeImportOptions by_rank;
  by_rank.group_by = TraceGrouping::kRank;
  const TimeTable t = import_chrome_times(kData + "bytedance/timeline-ST.json.gz", by_rank);
  CHECK(t.worker_ids ==
        std::vector<std::string>{"0/0", "0/10", "0/20", "0/30", "1/5", "1/15", "1/25", "1/35"});
  CHECK(t.source_iterations.size() == 32);
  CHECK(t.missing_cells() == 0);
  // Iteration 0 (step 23), rank (0, 0): the Python script's value.
  CHECK(t.seconds[0][0] == 0.8126910328865051);
}

}  // namespace
}  // namespace stragglersim::sim

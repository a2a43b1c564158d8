// The trace file reader (fit/delay_trace.h): both forms and every malformed input with its exact
// file:line message (the MPI backend's worker_times.csv: tests/experiments/trace_delay_test.cpp).

#include "fit/delay_trace.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace stragglersim::sim {
namespace {

using testing::message_of;
using testing::TempDir;

std::string error_of(const std::string& path) {
  return message_of<TraceFileError>([&] { (void)read_delay_trace(path); });
}

TEST_CASE("delay_trace: iteration form in any row and column order", "[sim][trace]") {
  const TempDir dir("delay_trace");
  // Columns reordered, an extra column, rows shuffled, a blank line, CRLF, quotes, '+'.
  const std::string path = dir.write("t.csv",
                                     "host,seconds,worker,iteration\r\n"
                                     "a,2.5,1,7\r\n"
                                     "b,0.5,0,3\r\n"
                                     "\r\n"
                                     "\"c,d\",+1.25,0,7\r\n"
                                     "e,3e-1,1,3\r\n");
  const DelayTrace t = read_delay_trace(path);
  CHECK(t.path == path);
  CHECK(t.workers == 2);
  CHECK(t.has_iterations);
  CHECK(t.iterations == std::vector<std::int64_t>{3, 7});
  CHECK(t.per_iteration == std::vector<std::vector<double>>{{0.5, 0.3}, {1.25, 2.5}});
  // File order within each worker.
  CHECK(t.per_worker == std::vector<std::vector<double>>{{0.5, 1.25}, {2.5, 0.3}});
  CHECK(t.censored_lines.empty());
}

TEST_CASE("delay_trace: per-worker pool form", "[sim][trace]") {
  const TempDir dir("delay_trace");
  const std::string path =
      dir.write("pool.csv", "worker,seconds\n2,1.0\n0,0.25\n1,0.5\n0,0.75\n2,3\n2,2\n");
  const DelayTrace t = read_delay_trace(path);
  CHECK(t.workers == 3);
  CHECK_FALSE(t.has_iterations);
  CHECK(t.per_iteration.empty());
  CHECK(t.iterations.empty());
  CHECK(t.per_worker == std::vector<std::vector<double>>{{0.25, 0.75}, {0.5}, {1.0, 3.0, 2.0}});
}

TEST_CASE("delay_trace: malformed files name file:line and what was expected", "[sim][trace]") {
  const TempDir dir("delay_trace");
  const auto check = [&](const std::string& contents, const std::string& message) {
    const std::string path = dir.write("bad.csv", contents);
    CHECK(error_of(path) == path + message);
  };
  const std::string missing = (dir.path() / "absent.csv").string();
  CHECK(error_of(missing) ==
        missing + ": cannot open file (expected a readable CSV file of measured times)");
  check("",
        ":1: empty file (expected a header with columns iteration,worker,seconds or "
        "worker,seconds)");
  check("\n  \n",
        ":1: empty file (expected a header with columns iteration,worker,seconds or "
        "worker,seconds)");
  check("iteration,worker,time\n1,0,2\n",
        ":1: header has no 'seconds' column; got 'iteration,worker,time' (expected a header "
        "with columns iteration,worker,seconds or worker,seconds)");
  check("iteration,seconds\n1,2\n",
        ":1: header has no 'worker' column; got 'iteration,seconds' (expected a header with "
        "columns iteration,worker,seconds or worker,seconds)");
  check("iteration,worker,seconds\n",
        ":1: no data rows after the header (expected at least one row per worker)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1\n",
        ":3: too few fields; got 2 (expected at least 3, as the header names)");
  check("iteration,worker,seconds\n1,0,0.5\n1,1,0.5x\n",
        ":3: malformed seconds; got '0.5x' (expected a number ≥ 0, or an empty field for a "
        "censored time)");
  check("iteration,worker,seconds\n1,0,-0.5\n",
        ":2: seconds must be finite and ≥ 0; got -0.5 (expected a measured time)");
  check("iteration,worker,seconds\n1,0,inf\n",
        ":2: seconds must be finite and ≥ 0; got inf (expected a measured time)");
  check("iteration,worker,seconds\n1,0,nan\n",
        ":2: seconds must be finite and ≥ 0; got nan (expected a measured time)");
  check("iteration,worker,seconds\n1.5,0,1\n",
        ":2: malformed iteration; got '1.5' (expected an integer ≥ 0)");
  check("iteration,worker,seconds\n1,-1,1\n",
        ":2: malformed worker; got '-1' (expected an integer ≥ 0 numbering workers from 0)");
  check("iteration,worker,seconds\n1,0,1\n1,1,1\n2,0,1\n3,0,1\n3,1,1\n",
        ":4: iteration 2 (first row on this line) has no row for worker 1 (expected one row for "
        "each worker 0..1)");
  check("iteration,worker,seconds\n1,0,1\n1,1,1\n1,0,2\n",
        ":4: duplicate row for iteration 1 and worker 0, first on line 2 (expected one row per "
        "worker per iteration)");
  // 1-based worker numbering leaves worker 0 out.
  check("worker,seconds\n1,0.5\n2,0.5\n",
        ":3: no row for worker 0 below worker 2 on this line (expected workers numbered 0..n-1 "
        "without gaps)");
  check("iteration,worker,seconds\n1,0,1\n1,3,1\n",
        ":3: no row for worker 1 below worker 3 on this line (expected workers numbered 0..n-1 "
        "without gaps)");
}

}  // namespace
}  // namespace stragglersim::sim

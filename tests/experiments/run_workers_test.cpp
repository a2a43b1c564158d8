// The per-worker files of a run (experiments/run_workers.cpp): workers.csv from hand-made rows,
// worker_times.csv with its censored cells, heard.csv of real backend records, each against text
// written out here.

#include "experiments/run_workers.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "experiments/run_output.h"

namespace stragglersim::experiments {
namespace {

sim::TraceRow workers_row(std::vector<int> heard,
                          std::vector<int> used,
                          std::vector<std::uint64_t> staleness,
                          std::vector<std::int64_t> rows) {
  sim::TraceRow row;
  row.heard = std::move(heard);
  row.used = std::move(used);
  row.used_staleness = std::move(staleness);
  row.worker_rows = std::move(rows);
  return row;
}

}  // namespace

TEST_CASE("run workers: the tally counts heard workers, used messages, rows and staleness",
          "[experiments][run_workers]") {
  WorkerTally tally;
  tally.resize(3);
  // Worker 0 heard twice and used three times (once twice in one update, staleness 0, 2, 4),
  // worker 2 heard once and used once (staleness 1), worker 1 never used.
  tally.add(workers_row({0, 2}, {0, 0, 2}, {0, 2, 1}, {5, 0, 3}));
  tally.add(workers_row({0}, {0}, {4}, {7, 1, 0}));
  CHECK(tally.heard == std::vector<std::uint64_t>{2, 0, 1});
  CHECK(tally.used == std::vector<std::uint64_t>{3, 0, 1});
  CHECK(tally.total_used() == 4);
  CHECK(tally.csv(false, false, false) ==
        "worker,heard,used,share\n"
        "0,2,3,0.75\n"
        "1,0,0,0\n"
        "2,1,1,0.25\n");
  // Mean staleness of worker 0: (0 + 2 + 4) / 3 = 2, largest 4; worker 1 used nothing: empty.
  CHECK(tally.csv(true, true, false) ==
        "worker,heard,used,share,rows,staleness_mean,staleness_max\n"
        "0,2,3,0.75,12,2,4\n"
        "1,0,0,0,1,,\n"
        "2,1,1,0.25,3,1,1\n");
}

TEST_CASE("run workers: before any message is used every share cell is empty",
          "[experiments][run_workers]") {
  WorkerTally tally;
  tally.resize(2);
  tally.add(workers_row({1}, {}, {}, {}));
  CHECK(tally.total_used() == 0);
  CHECK(tally.csv(false, true, false) ==
        "worker,heard,used,share,staleness_mean,staleness_max\n"
        "0,0,0,,,\n"
        "1,1,0,,,\n");
}

TEST_CASE("run workers: a collective adds each worker's mean all-reduce time and last arrivals",
          "[experiments][run_workers]") {
  WorkerTally tally;
  tally.resize(2);
  sim::TraceRow first = workers_row({0, 1}, {0, 1}, {}, {});
  first.collective_seconds = {0.5, 0.25};
  first.arrived_last = 1;
  sim::TraceRow second = workers_row({0, 1}, {0, 1}, {}, {});
  second.collective_seconds = {1.5, 0.75};
  second.arrived_last = 1;
  tally.add(first);
  tally.add(second);
  // Means (0.5 + 1.5) / 2 = 1 and (0.25 + 0.75) / 2 = 0.5; worker 1 arrived last twice.
  CHECK(tally.csv(false, false, true) ==
        "worker,heard,used,share,collective_seconds_mean,arrived_last\n"
        "0,2,2,0.5,1,0\n"
        "1,2,2,0.5,0.5,2\n");
}

TEST_CASE("run workers: worker_times.csv has one row per iteration and worker, empty when censored",
          "[experiments][run_workers]") {
  // Iteration 3 is past the run's end and dropped; worker 1 of iteration 1 never finished.
  const std::vector<sim::WorkerTime> times = {
      {.iteration = 2, .worker = 1, .seconds = 0.5},
      {.iteration = 1, .worker = 0, .seconds = 0.25},
      {.iteration = 2, .worker = 0, .seconds = 1.0},
      {.iteration = 3, .worker = 0, .seconds = 9.0},
  };
  CHECK(worker_times_csv(times, 2, 2) ==
        "iteration,worker,seconds\n"
        "1,0,0.25\n"
        "1,1,\n"
        "2,0,1\n"
        "2,1,0.5\n");
}

TEST_CASE("run workers: heard.csv lists the real and simulated heard sets of each iteration",
          "[experiments][run_workers]") {
  sim::ThreadedIterationRecord same;
  same.iteration = 1;
  same.real_stop_seconds = 0.125;
  same.simulated_stop = 2.5;
  same.heard = {2, 0};
  same.simulated_heard = {0, 2};
  same.same_set = true;
  same.near_tie_gap = 0.75;
  sim::ThreadedIterationRecord other = same;
  other.iteration = 2;
  other.heard = {1};
  other.same_set = false;
  CHECK(heard_csv({same, other}) ==
        "iteration,same_set,near_tie_gap,real_iteration_time,iteration_time,heard,"
        "simulated_heard\n"
        "1,1,0.75,0.125,2.5,2 0,0 2\n"
        "2,0,0.75,0.125,2.5,1,0 2\n");
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("run workers: collective.csv has every rank's compute and collective seconds",
          "[experiments][run_workers]") {
  sim::ThreadedIterationRecord a;
  a.iteration = 1;
  a.compute_seconds = {0.25, std::numeric_limits<double>::quiet_NaN()};
  a.collective_seconds = {0.5, 0.125};
  sim::ThreadedIterationRecord b;
  b.iteration = 2;
  b.compute_seconds = {1.5, 0.75};
  b.collective_seconds = {0.0625, 2.0};
  CHECK(collective_csv({a, b}) ==
        "iteration,rank,compute_seconds,collective_seconds\n"
        "1,0,0.25,0.5\n"
        "1,1,,0.125\n"
        "2,0,1.5,0.0625\n"
        "2,1,0.75,2\n");
  // A parameter-server run's records hold no collective: no file.
  sim::ThreadedIterationRecord ps;
  ps.iteration = 1;
  CHECK(collective_csv({ps}).empty());
  CHECK(collective_csv({}).empty());
}

}  // namespace stragglersim::experiments

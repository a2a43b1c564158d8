// The dependency graph and its replay (sim/replay/op_graph.h) on the shipped ST timeline
// (data × pipeline 2 × 4, 1F1B): with the launch delays put back the replay is the recording;
// without them each step is within a few percent (docs/whatif.md "Fidelity"); collectives wait
// for their last member.

#include "sim/replay/op_graph.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/test_paths.h"

namespace stragglersim::replay {
namespace {

OpTimeline st_timeline() {
  const std::string dir = std::string(testing::source_dir()) + "/data/traces/bytedance/";
  return read_op_timeline(
      dir + "timeline-ST.json.gz", read_job_layout(dir + "meta-ST.yaml"), bytedance_op_names());
}

TEST_CASE("replay: with launch delays the replay reproduces every recorded op",
          "[replay][op_graph]") {
  const OpTimeline t = st_timeline();
  const OpGraph graph(t);
  REQUIRE(graph.steps() == 32);
  const auto measured = graph.recorded_durations();
  const auto delays = graph.launch_delays();
  OpGraph::Options options;
  options.launch_delays = delays;
  const auto r = graph.replay(measured, options);
  std::size_t moved = 0;
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    if (!graph.in_group(v) && std::abs(r.end[v] - r.start[v] - t.ops[v].duration) > 1e-9) ++moved;
  }
  CHECK(moved == 0);
  for (std::size_t s = 0; s < graph.steps(); ++s) {
    CHECK(r.step_time[s] == Approx(graph.recorded_step_times()[s]).epsilon(1e-4));
  }
}

TEST_CASE("replay: without launch delays each ST step is within 2.1 % of the recording",
          "[replay][op_graph]") {
  const OpTimeline t = st_timeline();
  const OpGraph graph(t);
  const auto r = graph.replay(graph.recorded_durations());
  for (std::size_t s = 0; s < graph.steps(); ++s) {
    const double recorded = graph.recorded_step_times()[s];
    CHECK(r.step_time[s] <= recorded * (1 + 1e-9));  // removing delays never slows a step
    CHECK(r.step_time[s] >= recorded * 0.979);
  }
}

TEST_CASE("replay: a data-parallel collective waits for its last replica unless left out",
          "[replay][op_graph]") {
  const OpTimeline t = st_timeline();
  const OpGraph graph(t);
  auto d = graph.recorded_durations();
  // Replica 1's first forward of the first step 10 s longer: the step waits for it; replayed
  // alone, replica 0 does not.
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    if (graph.step_of(v) == 0 && t.ops[v].dp == 1 && t.ops[v].stage == 0 &&
        t.ops[v].type == OpType::kForwardCompute && t.ops[v].micro_batch == 0) {
      d[v] += 10.0;
    }
  }
  const auto base = graph.replay(graph.recorded_durations());
  const auto slow = graph.replay(d);
  // A longest path grows by at most the 10 s added, and here by nearly all of it (the pipeline
  // absorbs a few ms of slack).
  CHECK(slow.step_time[0] <= base.step_time[0] + 10.0 + 1e-9);
  CHECK(slow.step_time[0] >= base.step_time[0] + 9.99);
  OpGraph::Options alone;
  alone.replica_local = true;
  const auto solo = graph.replay(d, alone);
  CHECK(solo.replica_end[1] == Approx(slow.step_time[0]).epsilon(1e-6));
  CHECK(solo.replica_end[0] < base.step_time[0] + 1e-9);
  std::vector<std::uint8_t> dropped(graph.steps() * 2, 0);
  dropped[1] = 1;  // step 0, replica 1
  OpGraph::Options without;
  without.dropped_replicas = dropped;
  CHECK(graph.replay(d, without).step_time[0] == Approx(solo.replica_end[0]).epsilon(1e-9));
}

}  // namespace
}  // namespace stragglersim::replay

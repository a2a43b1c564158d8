// The dependency graph and its replay (sim/replay/op_graph.h) on the shipped ST timeline
// (data × pipeline 2 × 4, 1F1B): with the launch delays put back the replay is the recording;
// without them each step is within a few percent (docs/whatif.md "Fidelity"); collectives wait
// for their last member. Two small hand-built timelines check the layouts the ST timeline lacks
// against step times derived by hand from the documented rules: interleaved model chunks
// (vpp 2) and context-parallel groups (dsp 2 with one data-parallel rank).

#include "sim/replay/op_graph.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "tests/test_paths.h"
#include "tests/test_support.h"

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

/// One recorded op of a hand-built timeline: seconds, dp rank 0, step 3; mb −1 for ops without a
/// micro-batch.
struct OpGraphHandOp {
  const char* name;
  int stage;
  double ts;
  double dur;
  int mb;
  int chunk;
};

/// The ops as an inline Chrome trace (args carry the ranks; microseconds).
std::string op_graph_hand_json(std::initializer_list<OpGraphHandOp> ops) {
  std::string out = "[";
  for (const OpGraphHandOp& op : ops) {
    if (out.size() > 1) out += ",\n";
    out += R"({"name": ")" + std::string(op.name) + R"(", "ph": "X", "pid": 0, "tid": )" +
           std::to_string(op.stage) + R"(, "ts": )" + std::to_string(std::llround(op.ts * 1e6)) +
           R"(, "dur": )" + std::to_string(std::llround(op.dur * 1e6)) +
           R"(, "args": {"step": 3, "dp_rank": 0, "stage": )" + std::to_string(op.stage);
    if (op.mb >= 0) out += R"(, "mb_id": )" + std::to_string(op.mb);
    out += R"(, "model_chunk": )" + std::to_string(op.chunk) + "}}";
  }
  return out + "]";
}

/// The replayed end of the op of `type` on `stage` (micro-batch `mb`, chunk `chunk`).
double op_graph_hand_end(
    const OpTimeline& t, const OpGraph::Result& r, OpType type, int stage, int mb, int chunk) {
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    const Op& op = t.ops[v];
    if (op.type == type && op.stage == stage && op.micro_batch == mb && op.chunk == chunk) {
      return r.end[v];
    }
  }
  return -1.0;
}

TEST_CASE("replay: interleaved chunks (vpp 2) pair each chunk with chunk · pp + stage ± 1",
          "[replay][op_graph]") {
  // dp 1, pp 2, vpp 2, one step, micro-batches 0 and 1: virtual chunks S0c0 = 0, S1c0 = 1,
  // S0c1 = 2, S1c1 = 3. Each stage runs F(c0,m0) F(c0,m1) F(c1,m0) F(c1,m1) B(c1,m0) B(c1,m1)
  // B(c0,m0) B(c0,m1) (a0..a7 on stage 0: F 1 s, B 2 s; b0..b7 on stage 1: F 2 s, B 3 s).
  // Pipeline transfers take 0 s (a pair ends at its later arrival); sends/recvs whose peer chunk
  // lies outside 0..3 are recorded with 0 s (so whether they feed a compute does not matter
  // here) and complete alone: stage 1's forward sends of c1
  // (peer 4), stage 0's forward recvs of c0 (peer −1), stage 0's backward sends of c0 (peer −1),
  // stage 1's backward recvs of c1 (peer 4). So stage 0's 4 forward sends pair with stage 1's 4
  // forward recvs, stage 1's 2 c0 forward sends with stage 0's 2 c1 forward recvs, stage 1's
  // 4 backward sends with stage 0's 4 backward recvs, stage 0's 2 c1 backward sends with stage
  // 1's 2 c0 backward recvs. A recv feeds the k-th compute of its direction and follows the
  // (k−1)-th, a send follows the k-th; the first backward send/recv also waits for a2 / b2.
  // Forward (pair end = max(send start, recv start)):
  //   a0 0–1, a1 1–2; send(a0) 1 ∥ recv(b0) 0 → 1: b0 1–3; send(a1) 2 ∥ recv(b1) ≥ b0 3 → 3:
  //   b1 3–5; stage 1 send(b0) 3 ∥ stage 0 recv(a2) ≥ a1 2 → 3: a2 3–4; send(a2) 4 ∥ recv(b2)
  //   ≥ b1 5 → 5: b2 5–7; send(b1) 5 ∥ recv(a3) ≥ a2 4 → 5: a3 5–6; send(a3) 6 ∥ recv(b3) ≥ b2
  //   7 → 7: b3 7–9.
  // Backward: b4 after b3 (its recv is alone, 7): 9–12; send(b4) 12 ∥ recv(a4) ≥ a2 4 → 12:
  //   a4 12–14; b5 12–15; send(b5) 15 ∥ recv(a5) ≥ a4 14 → 15: a5 15–17; send(a4) 14 ∥
  //   recv(b6) ≥ b5 15 → 15: b6 15–18; send(b6) 18 ∥ recv(a6) ≥ a5 17 → 18: a6 18–20;
  //   send(a5) 17 ∥ recv(b7) ≥ b6 18 → 18: b7 18–21; send(b7) 21 ∥ recv(a7) ≥ a6 20 → 21:
  //   a7 21–23.
  // Post-compute: embedding all-reduce of the first and last stage arrives at max(23, 21) = 23,
  // transfer 1 → 24; clip all-reduce over both stages, transfer 0.5 → 24.5; optimizer 1 s →
  // step time 25.5. The recording below is this replay, so no op has a launch delay.
  constexpr const char* kF = "forward-compute";
  constexpr const char* kB = "backward-compute";
  constexpr const char* kFs = "forward-send";
  constexpr const char* kFr = "forward-recv";
  constexpr const char* kBs = "backward-send";
  constexpr const char* kBr = "backward-recv";
  const std::string json = op_graph_hand_json({
      {kF, 0, 0, 1, 0, 0},
      {kF, 0, 1, 1, 1, 0},
      {kF, 0, 3, 1, 0, 1},
      {kF, 0, 5, 1, 1, 1},
      {kB, 0, 12, 2, 0, 1},
      {kB, 0, 15, 2, 1, 1},
      {kB, 0, 18, 2, 0, 0},
      {kB, 0, 21, 2, 1, 0},
      {kF, 1, 1, 2, 0, 0},
      {kF, 1, 3, 2, 1, 0},
      {kF, 1, 5, 2, 0, 1},
      {kF, 1, 7, 2, 1, 1},
      {kB, 1, 9, 3, 0, 1},
      {kB, 1, 12, 3, 1, 1},
      {kB, 1, 15, 3, 0, 0},
      {kB, 1, 18, 3, 1, 0},
      {kFs, 0, 1, 0, 0, 0},
      {kFs, 0, 2, 1, 1, 0},
      {kFs, 0, 4, 1, 0, 1},
      {kFs, 0, 6, 1, 1, 1},
      {kFr, 1, 0, 1, 0, 0},
      {kFr, 1, 3, 0, 1, 0},
      {kFr, 1, 5, 0, 0, 1},
      {kFr, 1, 7, 0, 1, 1},
      {kFs, 1, 3, 0, 0, 0},
      {kFs, 1, 5, 0, 1, 0},
      {kFs, 1, 7, 0, 0, 1},
      {kFs, 1, 9, 0, 1, 1},
      {kFr, 0, 0, 0, 0, 0},
      {kFr, 0, 1, 0, 1, 0},
      {kFr, 0, 2, 1, 0, 1},
      {kFr, 0, 4, 1, 1, 1},
      {kBs, 1, 12, 0, 0, 1},
      {kBs, 1, 15, 0, 1, 1},
      {kBs, 1, 18, 0, 0, 0},
      {kBs, 1, 21, 0, 1, 0},
      {kBr, 0, 4, 8, 0, 1},
      {kBr, 0, 14, 1, 1, 1},
      {kBr, 0, 17, 1, 0, 0},
      {kBr, 0, 20, 1, 1, 0},
      {kBs, 0, 14, 1, 0, 1},
      {kBs, 0, 17, 1, 1, 1},
      {kBs, 0, 20, 0, 0, 0},
      {kBs, 0, 23, 0, 1, 0},
      {kBr, 1, 7, 0, 0, 1},
      {kBr, 1, 12, 0, 1, 1},
      {kBr, 1, 15, 0, 0, 0},
      {kBr, 1, 18, 0, 1, 0},
      {"embedding-grads-all-reduce", 0, 23, 1, -1, 0},
      {"embedding-grads-all-reduce", 1, 21, 3, -1, 0},
      {"optimizer-clip-main-grad", 0, 24, 0.5, -1, 0},
      {"optimizer-clip-main-grad", 1, 24, 0.5, -1, 0},
      {"optimizer", 0, 24.5, 1, -1, 0},
      {"optimizer", 1, 24.5, 1, -1, 0},
  });
  const testing::TempDir dir("op_graph");
  const JobLayout layout = read_job_layout(dir.write(
      "m.yaml", "dp_size: 1\ndsp_size: 1\npp_size: 2\ntp_size: 1\nvpp_size: 2\nworld_size: 2\n"));
  const OpTimeline t = read_op_timeline(dir.write("t.json", json), layout, bytedance_op_names());
  REQUIRE(t.ops.size() == 54);
  const OpGraph graph(t);
  const auto r = graph.replay(graph.recorded_durations());
  CHECK(r.step_time[0] == Approx(25.5).margin(1e-9));
  CHECK(graph.recorded_step_times()[0] == Approx(25.5).margin(1e-9));
  const double stage0[8] = {1, 2, 4, 6, 14, 17, 20, 23};
  const double stage1[8] = {3, 5, 7, 9, 12, 15, 18, 21};
  for (int k = 0; k < 8; ++k) {
    const OpType type = k < 4 ? OpType::kForwardCompute : OpType::kBackwardCompute;
    const int mb = k % 2;
    const int chunk = (k < 4) == (k % 4 < 2) ? 0 : 1;  // F: c0 c0 c1 c1; B: c1 c1 c0 c0
    CAPTURE(k);
    CHECK(op_graph_hand_end(t, r, type, 0, mb, chunk) == Approx(stage0[k]).margin(1e-9));
    CHECK(op_graph_hand_end(t, r, type, 1, mb, chunk) == Approx(stage1[k]).margin(1e-9));
  }
  double delay = 0.0;
  for (const double d : graph.launch_delays()) delay += d;
  CHECK(delay == Approx(0.0).margin(1e-9));
}

TEST_CASE("replay: context-parallel groups (dsp 2) synchronise gradients with one replica",
          "[replay][op_graph]") {
  // dp 1, dsp 2, pp 1, one step: params all-gather 1 s, F(m0) F(m1) 2 s each, B(m0) B(m1) 3 s
  // each, grads reduce-scatter 1.5 s, clip 0.5 s, optimizer 1 s.
  // dp · dsp = 2 > 1, so the data-parallel collectives are in the graph: the all-gather → the
  // first forward, the reduce-scatter after the last backward (not overlapped) → clip:
  //   all-gather 0–1, F 1–3, 3–5, B 5–8, 8–11, reduce-scatter 11–12.5, clip 12.5–13,
  //   optimizer 13–14: step time 14.
  // The same ops under dsp 1 (dp · dsp = 1): the collectives hang off nothing and nothing waits
  // for them: F 0–2, 2–4, B 4–7, 7–10, clip 10–10.5, optimizer 10.5–11.5: step time 11.5.
  const std::string json = op_graph_hand_json({
      {"params-all-gather", 0, 0, 1, -1, 0},
      {"forward-compute", 0, 1, 2, 0, 0},
      {"forward-compute", 0, 3, 2, 1, 0},
      {"backward-compute", 0, 5, 3, 0, 0},
      {"backward-compute", 0, 8, 3, 1, 0},
      {"grads-reduce-scatter", 0, 11, 1.5, -1, 0},
      {"optimizer-clip-main-grad", 0, 12.5, 0.5, -1, 0},
      {"optimizer", 0, 13, 1, -1, 0},
  });
  const testing::TempDir dir("op_graph");
  const JobLayout dsp2 = read_job_layout(dir.write(
      "m.yaml", "dp_size: 1\ndsp_size: 2\npp_size: 1\ntp_size: 1\nvpp_size: 1\nworld_size: 2\n"));
  const std::string path = dir.write("t.json", json);
  const OpTimeline t = read_op_timeline(path, dsp2, bytedance_op_names());
  const OpGraph graph(t);
  const auto r = graph.replay(graph.recorded_durations());
  CHECK(r.step_time[0] == Approx(14.0).margin(1e-9));
  CHECK(op_graph_hand_end(t, r, OpType::kParamsAllGather, 0, -1, 0) == Approx(1.0).margin(1e-9));
  CHECK(op_graph_hand_end(t, r, OpType::kForwardCompute, 0, 0, 0) == Approx(3.0).margin(1e-9));
  CHECK(op_graph_hand_end(t, r, OpType::kBackwardCompute, 0, 1, 0) == Approx(11.0).margin(1e-9));
  CHECK(op_graph_hand_end(t, r, OpType::kGradsReduceScatter, 0, -1, 0) ==
        Approx(12.5).margin(1e-9));
  JobLayout dsp1 = dsp2;
  dsp1.dsp_size = 1;
  dsp1.world_size = 1;
  const OpTimeline t1 = read_op_timeline(path, dsp1, bytedance_op_names());
  const OpGraph graph1(t1);
  const auto r1 = graph1.replay(graph1.recorded_durations());
  CHECK(r1.step_time[0] == Approx(11.5).margin(1e-9));
  CHECK(op_graph_hand_end(t1, r1, OpType::kForwardCompute, 0, 0, 0) == Approx(2.0).margin(1e-9));
}

}  // namespace
}  // namespace stragglersim::replay

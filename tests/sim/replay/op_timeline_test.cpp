// The op timeline reader (sim/replay/op_timeline.h): ranks from args or thread names, event-name
// maps, the meta layout, and every malformed input refused with its file and event index.

#include "sim/replay/op_timeline.h"

#include <catch2/catch.hpp>
#include <string>

#include "fit/delay_trace.h"
#include "tests/test_support.h"

namespace stragglersim::replay {
namespace {

using testing::message_of;
using testing::slurp;
using testing::TempDir;

/// One rank (dp 0, stage 0), one step: forward, backward, optimizer; named by `thread_name`.
const char* kOneRank =
    R"([{"name": "thread_name", "ph": "M", "pid": 0, "tid": 5, "args": {"name": "PP rank 0, TP rank 0, compute"}},
{"name": "forward-compute", "ph": "X", "pid": 0, "tid": 5, "ts": 0, "dur": 1000000, "args": {"step": 7, "mb_id": 0, "model_chunk": 0}},
{"name": "backward-compute", "ph": "X", "pid": 0, "tid": 5, "ts": 1000000, "dur": 2000000, "args": {"step": 7, "mb_id": 0, "model_chunk": 0}},
{"name": "optimizer", "ph": "X", "pid": 0, "tid": 5, "ts": 3000000, "dur": 500000, "args": {"step": 7}}])";

std::string read_error(const std::string& path,
                       const std::optional<JobLayout>& layout = {},
                       const OpNameMap& names = bytedance_op_names()) {
  return message_of<sim::TraceFileError>(
      [&] { (void)read_op_timeline(path, layout, names, "meta.yaml"); });
}

TEST_CASE("replay: the reader takes ranks from thread names and seconds from microseconds",
          "[replay][op_timeline]") {
  const TempDir dir("op_timeline");
  const OpTimeline t =
      read_op_timeline(dir.write("t.json", kOneRank), std::nullopt, bytedance_op_names());
  REQUIRE(t.ops.size() == 3);
  CHECK(t.steps == std::vector<std::int64_t>{7});
  CHECK(t.layout.dp_size == 1);
  CHECK(t.layout.pp_size == 1);
  CHECK(t.ops[0].type == OpType::kForwardCompute);
  CHECK(t.ops[1].type == OpType::kBackwardCompute);
  CHECK(t.ops[1].start == 1.0);
  CHECK(t.ops[1].duration == 2.0);
  CHECK(t.ops[2].event == 3);
  CHECK(t.skipped_events == 1);
}

TEST_CASE("replay: an event-name map reads other exporters' names", "[replay][op_timeline]") {
  const TempDir dir("op_timeline");
  std::string text = kOneRank;
  text.replace(text.find("\"forward-compute\""), 17, "\"fwd_step\"");
  const std::string path = dir.write("k.json", text);
  // The default map skips the unknown name; a strict one refuses it; a map names it.
  CHECK(read_error(path) ==
        path +
            ": the layout does not match the events: step 7 has no forward-compute op on "
            "data-parallel rank 0, stage 0 (expected one per micro-batch on every rank)");
  OpNameMap strict = bytedance_op_names();
  strict.strict = true;
  CHECK(read_error(path, std::nullopt, strict) ==
        path +
            ": event 1: unknown op name 'fwd_step' under a strict map (expected one of the "
            "map's names)");
  const OpTimeline t = read_op_timeline(
      path, std::nullopt, op_names_from({{"fwd_step", "forward-compute"}}, "map.json", true));
  CHECK(t.ops[0].type == OpType::kForwardCompute);
  CHECK(message_of<sim::TraceFileError>([] {
          (void)op_names_from({{"fwd", "forwards"}}, "map.json", false);
        })
            .starts_with("map.json:/fwd: unknown op type 'forwards'; got forwards (expected one "
                         "of: forward-compute, "));
}

TEST_CASE("replay: malformed timelines and layouts are refused with file and event",
          "[replay][op_timeline]") {
  const TempDir dir("op_timeline");
  std::string no_dur = kOneRank;
  no_dur.replace(no_dur.find("\"dur\": 2000000, "), 15, "");
  const std::string p1 = dir.write("no_dur.json", no_dur);
  CHECK(read_error(p1) ==
        p1 + ": event 2: no 'dur' (expected a duration ≥ −10000 in microseconds)");
  std::string no_stage = kOneRank;
  no_stage.replace(no_stage.find("\"tid\": 5, \"ts\": 1000000"), 10, "\"tid\": 6, ");
  const std::string p2 = dir.write("no_stage.json", no_stage);
  CHECK(read_error(p2) ==
        p2 + ": event 2: no 'stage' (expected the pipeline stage (args.stage or a thread_name "
             "'PP rank N, TP rank M'))");
  const std::string gz =
      slurp(std::string(testing::source_dir()) + "/data/traces/bytedance/timeline-ST.json.gz");
  const std::string p3 = dir.write("cut.json.gz", gz.substr(0, gz.size() / 2));
  CHECK(read_error(p3) ==
        p3 + ": gzip error: unexpected end of file (expected a complete gzip stream)");
  // The layout says two replicas, the events have one.
  JobLayout two;
  two.dp_size = 2;
  two.world_size = 2;
  const std::string p4 = dir.write("t.json", kOneRank);
  CHECK(read_error(p4, two) ==
        p4 + ": the layout does not match the events: data-parallel ranks seen 1 ranks 0..0; got "
             "dp_size = 2 in meta.yaml (expected ranks 0..1 = dp_size − 1)");
  std::string no_optimizer = kOneRank;
  no_optimizer.replace(no_optimizer.find("\"optimizer\""), 11, "\"gc\"");
  const std::string p5 = dir.write("no_opt.json", no_optimizer);
  CHECK(read_error(p5) ==
        p5 + ": the layout does not match the events: step 7 has no optimizer op on "
             "data-parallel rank 0, stage 0 (expected one per step on every rank)");
}

TEST_CASE("replay: the meta file's sizes must multiply to the world size",
          "[replay][op_timeline]") {
  const TempDir dir("op_timeline");
  const std::string good = dir.write("m.yaml",
                                     "trial_name: X\nrun_id: 0\ndp_size: 4\ndsp_size: 1\npp_size: "
                                     "4\ntp_size: 4\nvpp_size: 1\nworld_size: 64\n");
  const JobLayout l = read_job_layout(good);
  CHECK(l.dp_size == 4);
  CHECK(l.tp_size == 4);
  CHECK(l.world_size == 64);
  const std::string bad = dir.write("b.yaml", "dp_size: 4\npp_size: 4\nworld_size: 64\n");
  CHECK(message_of<sim::TraceFileError>([&] { (void)read_job_layout(bad); }) ==
        bad +
            ": world_size is not dp_size · dsp_size · pp_size · tp_size; got 64 ≠ 4·1·4·1 = 16 "
            "(expected sizes that multiply to the world size)");
  const std::string typo = dir.write("t.yaml", "dp_sise: 4\n");
  CHECK(message_of<sim::TraceFileError>([&] { (void)read_job_layout(typo); }) ==
        typo +
            ":1: unknown key 'dp_sise' (expected one of: dp_size, dsp_size, pp_size, run_id, "
            "tp_size, trial_name, vpp_size, world_size)");
  const std::string zero = dir.write("z.yaml", "# layout\n\npp_size: 0\n");
  CHECK(message_of<sim::TraceFileError>([&] { (void)read_job_layout(zero); }) ==
        zero + ":3: pp_size is not an integer ≥ 1; got '0' (expected a size)");
}

}  // namespace
}  // namespace stragglersim::replay

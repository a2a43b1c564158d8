// The what-if analysis (sim/replay/whatif_analysis.h, docs/whatif.md) on a constructed timeline
// whose every number is worked out by hand in the comments, and on the shipped ByteDance
// timelines against the published values of Lin et al. (OSDI 2025).

#include "sim/replay/whatif_analysis.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/test_paths.h"

namespace stragglersim::replay {
namespace {

/// Two replicas (dp 2, pp 1), two steps, one micro-batch each: forward f, backward b, then the
/// gradient reduce-scatter (transfer 0.5 after the last replica arrives) and the optimizer (0.5).
/// Step 0: both replicas f = 1, b = 2. Step 1: replica 0 is slow, f = 3, b = 6.
OpTimeline two_replicas() {
  OpTimeline t;
  t.path = "two_replicas";
  t.layout.dp_size = 2;
  t.layout.world_size = 2;
  t.steps = {0, 1};
  const double f[2][2] = {{1, 1}, {3, 1}};
  const double b[2][2] = {{2, 2}, {6, 2}};
  std::size_t event = 0;
  for (int s = 0; s < 2; ++s) {
    const double base = 100.0 * s;
    const double arrival = std::max(f[s][0] + b[s][0], f[s][1] + b[s][1]);
    for (int r = 0; r < 2; ++r) {
      const auto add = [&](OpType type, double start, double dur, int mb) {
        t.ops.push_back({s, r, 0, type, mb, 0, base + start, dur, event++});
      };
      add(OpType::kForwardCompute, 0, f[s][r], 0);
      add(OpType::kBackwardCompute, f[s][r], b[s][r], 0);
      const double own = f[s][r] + b[s][r];
      add(OpType::kGradsReduceScatter, own, arrival + 0.5 - own, -1);
      add(OpType::kOptimizer, arrival + 0.5, 0.5, -1);
    }
  }
  std::sort(t.ops.begin(), t.ops.end(), [](const Op& a, const Op& c) {
    return std::tie(a.step, a.dp, a.stage, a.type, a.start) <
           std::tie(c.step, c.dp, c.stage, c.type, c.start);
  });
  return t;
}

double value_of(const std::vector<std::pair<std::string, double>>& m, const std::string& name) {
  for (const auto& [k, v] : m) {
    if (k == name) return v;
  }
  FAIL("no entry " << name);
  return 0.0;
}

const Mitigation& mitigation(const WhatIfReport& r, const std::string& name) {
  for (const auto& m : r.mitigations) {
    if (m.name == name) return m;
  }
  FAIL("no mitigation " << name);
  return r.mitigations.front();
}

TEST_CASE("replay: the constructed timeline's slowdowns are the hand-computed ones",
          "[replay][whatif]") {
  const OpTimeline t = two_replicas();
  const OpGraph graph(t);
  const WhatIfReport r = analyse_whatif(graph, WhatIfOptions{});
  // Recorded and replayed step times: max(f + b) + 0.5 + 0.5 = 4 and 10.
  REQUIRE(r.steps.size() == 2);
  CHECK(r.steps[0].recorded == Approx(4.0));
  CHECK(r.steps[1].recorded == Approx(10.0));
  CHECK(r.steps[0].replayed == Approx(4.0));
  CHECK(r.steps[1].replayed == Approx(10.0));
  CHECK(r.steps[1].with_launch == Approx(10.0));
  // Ideal: forward mean 1.5, backward mean 3, reduce-scatter median 0.5, optimizer 0.5: 5.5.
  CHECK(r.steps[0].ideal == Approx(5.5));
  CHECK(r.steps[1].ideal == Approx(5.5));
  const double s = 7.0 / 5.5;
  CHECK(r.slowdown == Approx(s));
  // Replica 0 measured, 1 ideal: max(3, 4.5) + 1 and max(9, 4.5) + 1 → 7.75 / 5.5.
  CHECK(r.by_dp_rank[0] == Approx(7.75 / 5.5));
  CHECK(r.by_dp_rank[1] == Approx(1.0));
  // Only forwards measured: max(1 + 3) + 1 = 5 and max(3 + 3, 1 + 3) + 1 = 7 → 6 / 5.5.
  CHECK(value_of(r.by_op_type, "forward-compute") == Approx(6.0 / 5.5));
  // Only backwards: 1.5 + 2 + 1 = 4.5 and 1.5 + 6 + 1 = 8.5 → 6.5 / 5.5.
  CHECK(value_of(r.by_op_type, "backward-compute") == Approx(6.5 / 5.5));
  CHECK(value_of(r.by_op_type, "grads-reduce-scatter") == Approx(1.0));
  CHECK(r.by_stage[0] == Approx(s));
  // M_W: ⌈0.03 · 2⌉ = 1 rank, (0, 0); with it ideal every step takes 5.5: all of S − 1.
  REQUIRE(r.m_w_ranks.size() == 1);
  CHECK(r.m_w_ranks[0] == std::pair{0, 0});
  CHECK(r.m_w == Approx(1.0));
  CHECK(r.m_s == Approx(1.0));  // the one stage is the last
  // (a) Without the replica that ends last alone (step 0: a tie, replica 0): 4 and 4.
  const Mitigation& a = mitigation(r, "backup_replicas");
  CHECK(a.mean_step_time == Approx(4.0));
  CHECK(a.recovered == Approx((s - 4.0 / 5.5) / (s - 1.0)));
  CHECK(a.cost == Approx(0.5));
  // (b) Deadline 1.1 × 4.5: step 1's replica 0 (backward ends at 9) drops its micro-batch: 4, 4.
  const Mitigation& b = mitigation(r, "drop_compute");
  CHECK(b.mean_step_time == Approx(4.0));
  CHECK(b.cost == Approx(0.25));
  // (c) One stage: nothing to move.
  const Mitigation& c = mitigation(r, "rebalance_stages");
  CHECK(c.mean_step_time == Approx(7.0));
  CHECK(c.recovered == Approx(0.0));
  // (d) Replica 0's computes take replica 1's times when smaller: 4 and 4.
  const Mitigation& d = mitigation(r, "replicate_slowest");
  CHECK(d.mean_step_time == Approx(4.0));
  CHECK(d.cost == Approx(0.5));
}

TEST_CASE("replay: the ideal duration is the mean or the median as chosen", "[replay][whatif]") {
  const OpTimeline t = two_replicas();
  const OpGraph graph(t);
  const auto measured = graph.recorded_durations();
  WhatIfOptions options;
  auto ideal = ideal_durations(graph, measured, options);
  // Ops sorted by (step, dp, type): step 0 replica 0's forward is op 0.
  CHECK(ideal[0] == Approx(1.5));
  options.compute = IdealStatistic::kMedian;
  ideal = ideal_durations(graph, measured, options);
  CHECK(ideal[0] == Approx(1.0));  // forwards 1, 1, 3, 1
  CHECK(ideal[1] == Approx(2.0));  // backwards 2, 2, 6, 2
  options.communication = IdealStatistic::kMean;
  ideal = ideal_durations(graph, measured, options);
  CHECK(ideal[2] == Approx(0.5));  // every transfer is 0.5
}

struct Published {
  const char* name;
  double s;
  int worst_dp;
  double worst_dp_value;
  int worst_stage;
  double worst_stage_value;
  double m_w;
  double m_s;
};

TEST_CASE("replay: the ByteDance timelines give the published slowdowns",
          "[replay][whatif][bytedance]") {
  // Lin et al., OSDI 2025, the artifact's result-*.json, ms-*.json and mw-*.json.
  const std::vector<Published> published = {
      {"ST", 1.1787, 1, 1.1779, 3, 1.2323, 0.0314, 1.2194},
      {"AR", 1.9730, 0, 1.9730, 0, 1.9792, 1.0017, -0.0012},
  };
  for (const auto& p : published) {
    DYNAMIC_SECTION(p.name) {
      const std::string dir = std::string(testing::source_dir()) + "/data/traces/bytedance/";
      const JobLayout layout = read_job_layout(dir + "meta-" + p.name + ".yaml");
      const OpTimeline t =
          read_op_timeline(dir + "timeline-" + p.name + ".json.gz", layout, bytedance_op_names());
      const OpGraph graph(t);
      const WhatIfReport r = analyse_whatif(graph, WhatIfOptions{});
      CHECK(std::abs(r.slowdown - p.s) < 0.02);
      const auto worst_dp = std::max_element(r.by_dp_rank.begin(), r.by_dp_rank.end());
      const auto worst_stage = std::max_element(r.by_stage.begin(), r.by_stage.end());
      CHECK(worst_dp - r.by_dp_rank.begin() == p.worst_dp);
      CHECK(std::abs(*worst_dp - p.worst_dp_value) < 0.03);
      CHECK(worst_stage - r.by_stage.begin() == p.worst_stage);
      CHECK(std::abs(*worst_stage - p.worst_stage_value) < 0.03);
      CHECK(std::abs(r.m_w - p.m_w) < 0.05);
      CHECK(std::abs(r.m_s - p.m_s) < 0.05);
      for (const auto& step : r.steps) {
        // The replay with the launch delays put back is the recording.
        CHECK(std::abs(step.with_launch / step.recorded - 1.0) < 1e-3);
      }
    }
  }
}

}  // namespace
}  // namespace stragglersim::replay

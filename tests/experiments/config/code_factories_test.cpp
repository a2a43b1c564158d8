// The code table's factories: a heterogeneity-aware code's factors estimated from the run's
// delay, and what each code needs in memory against its storage formulas. (Key errors:
// factories_test.cpp; the dynamic_frc row's requirements: tests/sim/regrouping_test.cpp.)
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/factories.h"
#include "experiments/config/run_plan.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
TEST_CASE("config: proportional estimates its factors from the run's delay",
          "[experiments][config]") {
  // "factors": "delay" takes a heterogeneous delay's own factors, and a trace's mean time per
  // worker over the fastest worker's: the same code as those factors written out.
  const testing::TempDir dir("proportional_delay_factors");
  const auto loads_of = [&](const nlohmann::json& code, const nlohmann::json& delay) {
    auto c = testing::four_worker_delay_only(delay);
    c["code"] = code;
    c["partitions"] = 8;
    return experiments::plan_run(c, "cfg.json", dir.path()).scheme.code->loads();
  };
  const nlohmann::json estimated = {{"kind", "proportional"}, {"d", 2}, {"factors", "delay"}};
  const auto written = [](const std::vector<double>& factors) {
    return nlohmann::json{{"kind", "proportional"}, {"d", 2}, {"factors", factors}};
  };
  const nlohmann::json heterogeneous = {{"kind", "heterogeneous"},
                                        {"factors", {1.6, 1.0, 1.0, 1.6}}};
  CHECK(loads_of(estimated, heterogeneous) ==
        loads_of(written({1.6, 1.0, 1.0, 1.6}), heterogeneous));
  CHECK(loads_of(estimated, heterogeneous) != std::vector<double>(4, 2.0));
  // Means 2, 1, 1.5, 3 (workers 0..3 over three iterations): factors 2, 1, 1.5, 3.
  (void)dir.write("times.csv",
                  "iteration,worker,seconds\n1,0,1\n1,1,1\n1,2,1\n1,3,3\n2,0,3\n2,1,0.5\n2,2,2\n"
                  "2,3,3\n3,0,2\n3,1,1.5\n3,2,1.5\n3,3,3\n");
  const nlohmann::json trace = {{"kind", "trace"}, {"path", "times.csv"}};
  CHECK(loads_of(estimated, trace) == loads_of(written({2.0, 1.0, 1.5, 3.0}), trace));
  CHECK(loads_of(estimated, trace) != loads_of(written({1.0, 1.0, 1.0, 1.0}), trace));

  auto c = testing::four_worker_delay_only({{"kind", "shifted_exponential"}});
  c["code"] = estimated;
  CHECK(testing::plan_error(c, dir.path()) ==
        "cfg.json:/code/factors: the delay 'shifted_exponential' has no per-worker factors; got "
        "\"delay\"; expected \"delay\" with a heterogeneous, heterogeneous_markov or trace delay, "
        "or an array of one slowdown factor per worker");
  c["code"]["factors"] = "fast";
  CHECK(testing::plan_error(c, dir.path()) ==
        "cfg.json:/code/factors: unknown value; got \"fast\"; expected \"delay\", or an array of "
        "4 numbers > 0");
  c = testing::four_worker_delay_only({{"kind", "trace"}, {"path", "missing.csv"}});
  c["code"] = estimated;
  CHECK(testing::plan_error(c, dir.path())
            .starts_with("cfg.json:/code/factors: the delay's trace cannot be read ("));
}

TEST_CASE("config: a code's footprint follows its storage", "[experiments][config]") {
  // Per-worker simulation vectors: 128 bytes a worker.
  const double n = 1000.0;
  const double k = 500.0;
  // Built compact, the group codes keep a few integers.
  CHECK(code_footprint("uncoded", n, k, 0.0, true).bytes == 0.0);
  CHECK(code_footprint("frc", n, k, 4.0, true).bytes == 0.0);
  CHECK(code_footprint("frc", n, k, 4.0, true).partitions == k);
  // Supports: 64 bytes a partition and 16 a held partition, plus a dense B while n·k <= 2^24.
  const double supports = 128.0 * n + 64.0 * k + 16.0 * n * 4.0;
  CHECK(code_footprint("frc", n, k, 4.0).bytes == supports + 8.0 * n * k);
  CHECK(code_footprint("dynamic_frc", n, k, 4.0).bytes == supports + 8.0 * n * k);
  CHECK(code_footprint("uncoded", n, k, 0.0).bytes ==
        128.0 * n + 64.0 * k + 16.0 * n + 8.0 * n * k);
  const double big = 1e5;  // n·k = 5·10^7 > 2^24: no dense B
  CHECK(code_footprint("frc", big, k, 4.0).bytes == 128.0 * big + 64.0 * k + 16.0 * big * 4.0);
  // Dense codes: B and a decode's two n × k matrices.
  CHECK(code_footprint("crc", n, k, 0.0).bytes == 128.0 * n + 24.0 * n * k);
  CHECK(code_footprint("crc", n, k, 0.0).partitions_formula.empty());
  // Expander codes fix k = 2n/d.
  const CodeFootprint expander = code_footprint("expander", n, k, 4.0);
  CHECK(expander.partitions == 500.0);
  CHECK(expander.partitions_formula == "2·workers/d");
  CHECK(expander.bytes == 128.0 * n + 24.0 * n * 500.0);
  CHECK(code_footprint("expander", n, 1000.0, 8.0).partitions == 250.0);
}

}  // namespace stragglersim::experiments

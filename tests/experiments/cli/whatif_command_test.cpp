// `stragglersim whatif` (experiments/cli/whatif_command.cpp, docs/whatif.md): the JSON keys on a
// shipped timeline, the ideal timeline written as Chrome trace JSON that the reader reads back,
// and exit 2 with nothing written for bad input.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::run_stragglersim;
using testing::slurp;
using testing::TempDir;

std::string shipped(const std::string& file) {
  return std::string(testing::source_dir()) + "/data/traces/bytedance/" + file;
}

TEST_CASE("cli: whatif prints the slowdowns as json and writes the ideal timeline",
          "[whatif][cli]") {
  const TempDir dir("whatif_cli");
  const std::string out = (dir.path() / "ideal.json").string();
  const auto r = run_stragglersim("whatif " + shipped("timeline-ST.json.gz") + " --meta " +
                                      shipped("meta-ST.yaml") + " --json --timeline-out " + out,
                                  dir.path());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(std::abs(j["slowdown"].get<double>() - 1.1787) < 1e-3);
  CHECK(j["by_dp_rank"].size() == 2);
  CHECK(j["by_stage"].size() == 4);
  CHECK(j["by_op_type"].contains("forward-pp-comm"));
  CHECK(j["steps"].size() == 32);
  CHECK(j["steps"]["23"].contains("recorded"));
  CHECK(j["steps"]["23"].contains("replayed"));
  CHECK(j["steps"]["23"].contains("ideal"));
  CHECK(j["mitigations"].size() == 4);
  CHECK(j.contains("m_w"));
  CHECK(j.contains("m_s"));
  // The ideal timeline, read back: every step takes the ideal time, so its slowdown is 1.
  const auto back = run_stragglersim("whatif " + out + " --json", dir.path());
  REQUIRE(back.status == 0);
  const auto k = nlohmann::json::parse(back.out);
  CHECK(k["slowdown"].get<double>() == Approx(1.0).margin(1e-6));
  for (const auto& [step, times] : k["steps"].items()) {
    CHECK(times["replayed"].get<double>() ==
          Approx(j["steps"][step]["ideal"].get<double>()).epsilon(1e-6));
  }
}

TEST_CASE("cli: whatif on SE without steps 31 and 32 gives the published values",
          "[whatif][cli][bytedance]") {
  // The artifact's result-SE.json covers 43 steps; the shipped timeline has 45 (31 and 32 extra).
  const TempDir dir("whatif_cli");
  const auto r = run_stragglersim("whatif " + shipped("timeline-SE.json.gz") + " --meta " +
                                      shipped("meta-SE.yaml") + " --json --drop-steps 31,32",
                                  dir.path());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["steps"].size() == 43);
  CHECK(std::abs(j["slowdown"].get<double>() - 1.5374) < 2e-4);
  CHECK(std::abs(j["by_dp_rank"]["8"].get<double>() - 1.2045) < 2e-4);
  for (const auto& [rank, value] : j["by_dp_rank"].items()) {
    CHECK(value.get<double>() <= j["by_dp_rank"]["8"].get<double>());
  }
  CHECK(std::abs(j["by_stage"]["1"].get<double>() - 1.4354) < 2e-4);
  CHECK(std::abs(j["by_stage"]["0"].get<double>() - 1.1678) < 2e-4);
  CHECK(std::abs(j["m_w"].get<double>() - 0.0251) < 2e-4);
  CHECK(std::abs(j["m_s"].get<double>() - 0.6877) < 2e-4);
}

TEST_CASE("cli: whatif refuses bad input with exit 2 and writes nothing", "[whatif][cli]") {
  const TempDir dir("whatif_cli");
  const std::string out = (dir.path() / "ideal.json").string();
  const std::string gz = slurp(shipped("timeline-ST.json.gz"));
  const std::string cut = dir.write("cut.json.gz", gz.substr(0, gz.size() / 3));
  const std::string bad_meta = dir.write("meta.yaml", "dp_size: 2\npp_size: 4\nworld_size: 16\n");
  const std::string unknown = dir.write(
      "u.json",
      R"([{"name": "fwd", "ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 1, "args": {"step": 1, "stage": 0}}])");
  struct Case {
    std::string args;
    std::string message;
  };
  std::vector<Case> cases = {
      {cut,
       "error: " + cut +
           ": gzip error: unexpected end of file (expected a complete gzip stream)\n"},
      {shipped("timeline-ST.json.gz") + " --meta " + bad_meta,
       "error: " + bad_meta +
           ": world_size is not dp_size · dsp_size · pp_size · tp_size; got 16 ≠ "
           "2·1·4·1 = 8 (expected sizes that multiply to the world size)\n"},
      {unknown + " --strict-names",
       "error: " + unknown +
           ": event 0: unknown op name 'fwd' under a strict map (expected one of "
           "the map's names)\n"},
  };
  cases.push_back({shipped("timeline-ST.json.gz") + " --drop-steps 24",
                   "error: --drop-steps: no step 24 in " + shipped("timeline-ST.json.gz") +
                       "; got 24; expected steps of the timeline\n"});
  for (const auto& c : cases) {
    const auto r = run_stragglersim("whatif " + c.args + " --timeline-out " + out, dir.path());
    CHECK(r.status == 2);
    CHECK(r.err == c.message);
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

}  // namespace
}  // namespace stragglersim::experiments

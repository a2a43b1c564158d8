// Fuzz target: config text -> run plan -> the first iterations of the run, into a scratch
// folder. The config target stops at the plan; this one also reaches the delay models, codes,
// decoders, optimisers and the output writer, where an assertion that input can trigger would
// surface as `internal error`. Every input must plan and run (status ok, failed or interrupted)
// or raise ConfigError; any other exception, crash, leak or sanitizer report is a finding.
// Real backends (threads, mpi) sleep on the wall clock and are left to their own tests.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "tests/fuzz/fuzz_support.h"

namespace {
/// Rows a fuzzed run may write before its stop hook ends it as "interrupted".
constexpr int kMaxRows = 3;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  fuzz::with_json_input(data, size, "fuzz.json", [](const nlohmann::json& config) {
    const auto& dir = fuzz::scratch();
    const auto plan = experiments::plan_run(config, "fuzz.json", dir);
    if (plan.backend.traits.real_time) {
      return;
    }
    int rows = 0;
    const auto out = dir / "run";
    std::filesystem::remove_all(out);
    (void)experiments::execute_run(plan, out, [&rows] { return ++rows >= kMaxRows; });
  });
  return 0;
}

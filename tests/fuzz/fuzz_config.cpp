// Fuzz target: config text -> run plan (parse_json + plan_run), the path of `stragglersim run`
// and `theory` before any compute. Every input must either plan or raise ConfigError; any other
// exception, crash, leak or sanitizer report is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  fuzz::with_json_input(data, size, "fuzz.json", [](const nlohmann::json& config) {
    (void)experiments::plan_run(config, "fuzz.json", fuzz::scratch());
  });
  return 0;
}

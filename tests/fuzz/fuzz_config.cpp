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
  const auto& dir = fuzz::scratch();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto config = experiments::parse_json(text, "fuzz.json");
    (void)experiments::plan_run(config, "fuzz.json", dir);
  } catch (const experiments::ConfigError&) {
  }
  return 0;
}

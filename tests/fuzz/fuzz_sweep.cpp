// Fuzz target: the sweep expander (parse_json + expand_sweep). Every input must expand or raise
// ConfigError; the runs' configs are not planned here (fuzz_config covers plan_run).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/sweep.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  const auto& dir = fuzz::scratch();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto sweep = experiments::parse_json(text, "sweep.json");
    (void)experiments::expand_sweep(sweep, "sweep.json", dir);
  } catch (const experiments::ConfigError&) {
  }
  return 0;
}

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
  fuzz::with_json_input(data, size, "sweep.json", [](const nlohmann::json& sweep) {
    (void)experiments::expand_sweep(sweep, "sweep.json", fuzz::scratch());
  });
  return 0;
}

// Fuzz target: the `codes` command line (CLI11 parsing, --code JSON, the code factories and the
// report). The input is split at newlines into arguments after "stragglersim codes". Any exit
// status is fine; a crash, an uncaught exception or a sanitizer report is a finding. The harness
// drops --csv (it writes files) and skips inputs asking for more than 48 workers or 500
// samples: up to 5 000 patterns are enumerated, each decoded three times, and at 200 workers a
// dense code took over the 20 s per-input limit under the sanitizers (a timeout found in CI).
// Sizes beyond are refused by the memory estimate, which the CLI tests cover.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/cli/cli.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

bool too_large(const std::string& value, long limit) {
  char* end = nullptr;
  // Base 0, as the option parser also reads hexadecimal and octal integers.
  const long v = std::strtol(value.c_str(), &end, 0);
  return v > limit || v < -limit;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)stragglersim::fuzz::scratch();
  std::vector<std::string> args = {"stragglersim", "codes"};
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string arg;
  while (std::getline(in, arg) && args.size() < 24) {
    args.push_back(arg);
  }
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string next = i + 1 < args.size() ? args[i + 1] : "";
    if (a.rfind("--csv", 0) == 0 || a.rfind("--max-memory", 0) == 0) return -1;
    for (const auto& [flag, limit] : {std::pair<std::string, long>{"--workers", 48},
                                      {"--partitions", 48},
                                      {"--samples", 500},
                                      {"--wait-for", 48},
                                      {"--stragglers", 48}}) {
      if (a == flag && too_large(next, limit)) return -1;
      if (a.rfind(flag + "=", 0) == 0 && too_large(a.substr(flag.size() + 1), limit)) return -1;
    }
  }
  // run_cli restores the default limit: keep the fuzzing one.
  std::ostringstream sink;
  auto* const out = std::cout.rdbuf(sink.rdbuf());
  auto* const err = std::cerr.rdbuf(sink.rdbuf());
  (void)stragglersim::experiments::run_cli(args);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  return 0;
}

#pragma once
// Shared by the libFuzzer targets (tests/fuzz/README.md): the readers take file paths, so each
// input is written to one scratch file per process; the memory limit is lowered so that inputs
// asking for huge data are refused by the estimate (the behaviour under test) rather than
// allocated.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"

namespace stragglersim::fuzz {

/// Memory the fuzzed code may plan for: inputs above it must be refused with ConfigError.
inline constexpr std::uint64_t kFuzzMemoryLimit = std::uint64_t{64} << 20;

/// A scratch folder of this process (created once).
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() /
             ("stragglersim_fuzz-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::create_directories(d);
    experiments::set_memory_limit(kFuzzMemoryLimit);
    return d;
  }();
  return dir;
}

/// Writes the input to scratch()/name and returns the path.
inline std::string write_input(const std::uint8_t* data, std::size_t size, const char* name) {
  const auto path = scratch() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

/// Calls `f`; an `E`, how the code under test refuses bad input, is no finding.
template <typename E, typename F>
void refused_as(F&& f) {
  try {
    f();
  } catch (const E&) {
  }
}

/// Calls `f` with the input parsed as a JSON file `name` (after scratch() set the memory limit);
/// a ConfigError, from the parse or from `f`, is no finding.
template <typename F>
void with_json_input(const std::uint8_t* data, std::size_t size, const char* name, F&& f) {
  (void)scratch();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  refused_as<experiments::ConfigError>([&] { f(experiments::parse_json(text, name)); });
}

}  // namespace stragglersim::fuzz

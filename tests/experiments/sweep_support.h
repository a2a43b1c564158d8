#pragma once
// Helpers the sweep tests share (sweep_test.cpp, sweep_expansion_test.cpp, sweep_folder_test.cpp,
// sweep_index_test.cpp): scratch folders, small base configs, a sweep folder's files, and the
// stragglersim binary. Header-only, tests only.

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_support.h"

namespace stragglersim::experiments {

inline std::filesystem::path sweep_scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("sweep_test", name);
}

/// Every file under `root` (hidden ones included) by relative path, with its bytes (the measured
/// wall_clock_seconds of a summary.json masked).
inline std::map<std::string, std::string> tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      const std::string text = stragglersim::testing::slurp(e.path());
      files[fs::relative(e.path(), root).string()] =
          e.path().filename() == "summary.json" ? stragglersim::testing::mask_wall_clock(text)
                                                : text;
    }
  }
  return files;
}

/// Delay-only: 12 workers, FRC d = 2, first 6, 20 iterations.
inline nlohmann::json delay_only_base() {
  return nlohmann::json::parse(R"({
    "seed": 11, "workers": 12, "data": null,
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 6},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"iterations": 20}
  })");
}

/// Logistic regression on 300 rows, 6 workers, FRC d = 2, first 3, 15 iterations.
inline nlohmann::json gradient_base() {
  return nlohmann::json::parse(R"({
    "seed": 5, "workers": 6,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 300, "features": 5},
    "loss": {"kind": "logistic", "l2": 0.001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 3},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 15},
    "target_loss": 0.6
  })");
}

/// The exit status of `stragglersim <args>` (its output discarded).
inline int run_binary(const std::string& args) {
  const std::string cmd =
      fmt::format("{} {} > /dev/null 2>&1", stragglersim::testing::cli_binary(), args);
  return stragglersim::testing::exit_status(std::system(cmd.c_str()));
}

inline std::filesystem::path write_sweep(const std::filesystem::path& path,
                                         const nlohmann::json& sweep) {
  std::ofstream(path) << sweep.dump(2);
  return path;
}

}  // namespace stragglersim::experiments

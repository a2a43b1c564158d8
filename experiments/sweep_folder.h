#pragma once
// The pieces of a sweep's output folder that the sweep's files share (experiments/sweep.h has the
// sweep's own interface): run folder names and the folder's identity hash, a run's config.json
// text, whole-file reads and the clean-up of a killed process's temporaries.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/sweep.h"

namespace stragglersim::experiments {

/// A run's folder name (docs/sweeps.md "Folder names") from its scheme (when `with_scheme`), the
/// values of `parameters` and its repetition.
std::string run_slug(bool with_scheme,
                     const std::vector<std::string>& parameters,
                     const std::string& scheme,
                     const std::vector<nlohmann::json>& values,
                     int repetition);
/// Expected cost of a run from its config alone: iterations × workers × data entries.
double expected_cost(const nlohmann::json& config);

/// FNV-1a of `text` as 16 hex digits (models/base/fnv1a.h): run folder names and the folder's
/// identity.
std::string hash_hex(std::string_view text);
/// The file's bytes ("" when it cannot be read).
std::string read_whole_file(const std::filesystem::path& path);
/// A run's config.json: the config as indented JSON and a newline.
std::string config_text(const SweepRun& run);
/// Removes the temporary files a killed process left behind in `folder` (write_file_atomically
/// names them ".<name>.tmp-<pid>"); the completed files they were meant to replace are untouched.
void remove_stale_temporaries(const std::filesystem::path& folder);

}  // namespace stragglersim::experiments

// A sweep's output folder (experiments/sweep.h, sweep_folder.h): its identity (sweep_spec.json)
// and lock, the runs already complete, and the merge of a folder the shards completed.

#include "experiments/sweep_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/output_file.h"
#include "experiments/sweep.h"
#include "models/base/fnv1a.h"

namespace stragglersim::experiments {
namespace {
namespace fs = std::filesystem;
}  // namespace

std::string hash_hex(std::string_view text) { return fmt::format("{:016x}", models::fnv1a(text)); }

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string config_text(const SweepRun& run) { return run.config.dump(2) + "\n"; }

void remove_stale_temporaries(const std::filesystem::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return;
  }
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.front() == '.' && name.find(".tmp-") != std::string::npos) {
      remove_regular_file(entry.path());
    }
  }
}

namespace {

constexpr const char* kIdentityFile = "sweep_spec.json";

/// The folder's identity: the sweep's name, a hash of every expanded config in index order, and
/// each run's folder with the hash of its config (to tell an extension from another sweep).
nlohmann::json identity_of(const SweepSpec& spec) {
  nlohmann::json runs = nlohmann::json::object();
  std::string all;
  for (const auto& run : spec.runs) {
    const std::string text = config_text(run);
    runs[run.folder] = hash_hex(text);
    all += text;
  }
  return {{"name", spec.name}, {"spec_hash", hash_hex(all)}, {"runs", runs}};
}

[[noreturn]] void refuse_folder(const SweepSpec& spec,
                                const fs::path& out_dir,
                                const std::string& problem) {
  throw ConfigError(fmt::format(
      "{}: {}; got {}; expected the same sweep or one that extends its grid or repetitions; to "
      "proceed, give another --out folder or delete {} to start over",
      out_dir.string(),
      problem,
      spec.file,
      out_dir.string()));
}

}  // namespace

std::vector<std::string> check_sweep_folder(const SweepSpec& spec,
                                            const std::filesystem::path& out_dir) {
  check_output_folder(out_dir, "--out");
  const fs::path marker = out_dir / kIdentityFile;
  std::error_code ec;
  if (!fs::exists(marker, ec)) {
    // A tuned sweep's evaluation starts in a folder that holds its tuning only (and the f* cache
    // its tuning runs filled).
    const auto tuning_only = [&] {
      return std::ranges::all_of(
          fs::directory_iterator(out_dir, ec), [](const fs::directory_entry& entry) {
            const std::string name = entry.path().filename().string();
            return name == "tuning" || name == "tuning.csv" || name == "f_star_cache";
          });
    };
    const bool evaluation = spec.tuning && spec.tuning->stage == SweepTuning::Stage::kEvaluation;
    if (fs::is_directory(out_dir, ec) && !fs::is_empty(out_dir, ec) &&
        !(evaluation && tuning_only())) {
      refuse_folder(spec, out_dir, fmt::format("not empty and holds no {}", kIdentityFile));
    }
    return {};
  }
  nlohmann::json old;
  try {
    old = nlohmann::json::parse(read_whole_file(marker));
  } catch (const nlohmann::json::exception&) {
    refuse_folder(spec, out_dir, fmt::format("{} is not valid JSON", kIdentityFile));
  }
  const nlohmann::json now = identity_of(spec);
  if (old.value("spec_hash", nlohmann::json()) == now["spec_hash"]) {
    return {};
  }
  // An extension shares runs with the earlier sweep, every one of them with the same config.
  std::size_t shared = 0;
  std::size_t differ = 0;
  std::vector<std::string> stale;
  const nlohmann::json& old_runs = old.contains("runs") ? old["runs"] : nlohmann::json::object();
  for (const auto& [folder, hash] : old_runs.items()) {
    if (!now["runs"].contains(folder)) {
      if (fs::exists(out_dir / folder, ec)) {
        stale.push_back(folder);
      }
    } else if (now["runs"][folder] == hash) {
      ++shared;
    } else {
      ++differ;
    }
  }
  if (shared == 0 || differ > 0) {
    refuse_folder(spec,
                  out_dir,
                  fmt::format("holds sweep {} of {} runs ({} with the same config as here, {} "
                              "with another)",
                              nlohmann::json(old.value("name", "")).dump(),
                              old_runs.size(),
                              shared,
                              differ));
  }
  return stale;
}

FolderLock lock_existing_sweep_folder(const std::filesystem::path& out_dir, bool sole_writer) {
  std::error_code ec;
  return fs::is_directory(out_dir, ec) ? FolderLock(out_dir, sole_writer) : FolderLock();
}

void record_sweep_folder(const SweepSpec& spec,
                         const std::filesystem::path& out_dir,
                         bool sole_writer,
                         FolderLock& lock) {
  fs::create_directories(out_dir / "runs");
  if (!lock.held()) {
    lock = FolderLock(out_dir, sole_writer);
  }
  if (sole_writer) {
    remove_stale_temporaries(out_dir);
  }
  const fs::path marker = out_dir / kIdentityFile;
  const std::string text = identity_of(spec).dump(1) + "\n";
  std::error_code ec;
  if (!fs::exists(marker, ec) || read_whole_file(marker) != text) {
    // index.csv means "this sweep is complete": an earlier sweep's must not outlive its identity.
    remove_regular_file(out_dir / "index.csv");
    remove_regular_file(out_dir / "summary.csv");
    remove_regular_file(out_dir / "traces.csv");
    write_file_atomically(marker, text);
  }
}

std::vector<std::size_t> pending_runs(const SweepSpec& spec,
                                      const std::filesystem::path& out_dir,
                                      const SweepShard& shard,
                                      std::size_t* skipped) {
  std::vector<std::size_t> todo;
  for (const auto& run : spec.runs) {
    if (!shard.owns(run.index)) {
      continue;
    }
    const fs::path dir = out_dir / run.folder;
    const fs::path config = dir / "config.json";
    if (fs::exists(config) && read_whole_file(config) != config_text(run)) {
      throw ConfigError(fmt::format(
          "{}: holds a different config than run {} of {}; got another sweep's output; expected "
          "a fresh --out folder or the same sweep file",
          config.string(),
          run.index,
          spec.file));
    }
    if (fs::exists(dir / "summary.json")) {
      ++*skipped;
    } else {
      todo.push_back(run.index);
    }
  }
  return todo;
}

SweepResult merge_sweep(const SweepSpec& spec, const std::filesystem::path& out_dir) {
  if (needs_tuning(spec)) {
    throw ConfigError(fmt::format(
        "{}:/tune: a tuned sweep runs its tuning before its evaluation; got --merge; expected the "
        "sweep without --shard and --merge (or --jobs N)",
        spec.file));
  }
  SweepResult result;
  result.total = spec.runs.size();
  if (!fs::exists(out_dir / kIdentityFile)) {
    refuse_folder(spec, out_dir, fmt::format("holds no {} to merge", kIdentityFile));
  }
  FolderLock lock = lock_existing_sweep_folder(out_dir, /*sole_writer=*/true);
  result.stale = check_sweep_folder(spec, out_dir);
  const std::vector<std::size_t> todo = pending_runs(spec, out_dir, SweepShard{}, &result.skipped);
  if (todo.empty()) {
    record_sweep_folder(spec, out_dir, /*sole_writer=*/true, lock);
  } else {
    throw ConfigError(fmt::format(
        "{}: {} of {} runs are not complete (the first is {}); got --merge; expected every "
        "shard finished: rerun the missing shards, or the sweep without --shard to run the rest",
        out_dir.string(),
        todo.size(),
        result.total,
        spec.runs[todo.front()].folder));
  }
  result.failed = write_sweep_index(spec, out_dir);
  return result;
}

}  // namespace stragglersim::experiments

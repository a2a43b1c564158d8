#include "experiments/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxRuns = 10'000'000;
constexpr std::size_t kMaxSlugValue = 24;

/// Config seeds are integers < 2^63 (plan_run reads them as int64).
constexpr std::uint64_t kSeedMask = (std::uint64_t{1} << 63U) - 1U;

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string slug_of(const std::vector<std::string>& parameters,
                    const std::vector<nlohmann::json>& values,
                    int repetition,
                    int repetitions) {
  auto clean = [](std::string_view text, std::size_t limit) {
    std::string out;
    for (const char c : text) {
      const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+';
      if (keep) {
        out += c;
      } else if (!out.empty() && out.back() != '_') {
        out += '_';
      }
      if (out.size() >= limit) {
        break;
      }
    }
    while (!out.empty() && out.back() == '_') {
      out.pop_back();
    }
    return out;
  };
  std::string slug;
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    std::string key = parameters[p].substr(1);
    std::replace(key.begin(), key.end(), '/', '.');
    if (!slug.empty()) {
      slug += '_';
    }
    slug += clean(key, 64) + "=" + clean(value_text(values[p]), kMaxSlugValue);
  }
  if (repetitions > 1) {
    slug += fmt::format("{}rep{}", slug.empty() ? "" : "_", repetition);
  }
  return slug.empty() ? "base" : slug;
}

/// Checks one grid key and its values against the base config.
nlohmann::json::json_pointer check_grid_key(const JsonReader& grid,
                                            const std::string& key,
                                            const nlohmann::json& values,
                                            const nlohmann::json& base) {
  if (key.empty() || key.front() != '/') {
    grid.fail_value(
        key, "not a JSON pointer", key, "a pointer into the base config such as \"/code/d\"");
  }
  std::optional<nlohmann::json::json_pointer> pointer;
  try {
    pointer.emplace(key);
  } catch (const nlohmann::json::exception&) {
    grid.fail_value(
        key, "not a JSON pointer", key, "a pointer into the base config such as \"/code/d\"");
  }
  bool exists = false;
  bool parent_is_object = false;
  try {
    exists = base.contains(*pointer);
    const auto parent = pointer->parent_pointer();
    parent_is_object = base.contains(parent) && base.at(parent).is_object();
  } catch (const nlohmann::json::exception&) {
    exists = false;
  }
  if (!exists && !parent_is_object) {
    grid.fail_value(key,
                    "no such place in the base config",
                    key,
                    "a pointer to an existing value or to a new key of an existing object");
  }
  if (!values.is_array() || values.empty()) {
    grid.fail_value(key, "wrong type", values, "a non-empty array of values, such as [2, 3, 5]");
  }
  return *pointer;
}

}  // namespace

SweepSpec expand_sweep(const nlohmann::json& sweep,
                       const std::string& file,
                       const std::filesystem::path& base_dir) {
  JsonReader root(sweep, file, "");
  SweepSpec spec;
  spec.file = file;
  spec.name = root.string("name", fs::path(file).stem().string());
  spec.base_dir = base_dir;

  nlohmann::json base;
  if (root.has("base") && root.has("base_file")) {
    root.fail("base_file", "give either base or base_file, not both");
  }
  if (root.has("base")) {
    base = root.raw("base");
    (void)JsonReader(base, file, "/base");  // type check: an object
  } else if (root.has("base_file")) {
    const std::string name = root.string("base_file", std::nullopt);
    const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : base_dir / name;
    if (!fs::is_regular_file(path)) {
      root.fail_value("base_file", "cannot open base config", name, "an existing JSON file");
    }
    base = read_json_file(path);
    (void)JsonReader(base, path.string(), "");
    spec.base_dir = path.parent_path();
  } else {
    root.fail("base", "missing required key; expected a run config object (or \"base_file\")");
  }
  spec.repetitions = static_cast<int>(root.integer("repetitions", 1, 1, 1'000'000));

  std::vector<nlohmann::json::json_pointer> pointers;
  std::vector<const nlohmann::json*> grid_values;
  nlohmann::json empty_grid = nlohmann::json::object();
  const nlohmann::json& grid_json = root.has("grid") ? root.raw("grid") : empty_grid;
  const JsonReader grid(grid_json, file, "/grid");
  // nlohmann::json keeps object keys sorted bytewise: this is the documented grid order.
  std::size_t combinations = 1;
  for (const auto& [key, values] : grid_json.items()) {
    pointers.push_back(check_grid_key(grid, key, values, base));
    spec.parameters.push_back(key);
    grid_values.push_back(&values);
    combinations *= values.size();
    if (combinations > kMaxRuns) {
      grid.fail_value(
          key, "too many runs", combinations, fmt::format("at most {} runs per sweep", kMaxRuns));
    }
  }
  root.finish();
  const std::size_t total = combinations * static_cast<std::size_t>(spec.repetitions);
  if (total > kMaxRuns) {
    root.fail_value(
        "repetitions", "too many runs", total, fmt::format("at most {} runs per sweep", kMaxRuns));
  }

  const std::size_t width = fmt::format("{}", total > 0 ? total - 1 : 0).size();
  spec.runs.reserve(total);
  std::vector<std::size_t> digit(pointers.size(), 0);
  for (std::size_t c = 0; c < combinations; ++c) {
    // Mixed-radix digits of c, the last parameter fastest.
    std::size_t rest = c;
    for (std::size_t p = pointers.size(); p-- > 0;) {
      digit[p] = rest % grid_values[p]->size();
      rest /= grid_values[p]->size();
    }
    nlohmann::json config = base;
    std::vector<nlohmann::json> values;
    for (std::size_t p = 0; p < pointers.size(); ++p) {
      values.push_back((*grid_values[p])[digit[p]]);
      config[pointers[p]] = values.back();
    }
    // A malformed seed is left for plan_run to report.
    std::optional<std::uint64_t> seed = std::uint64_t{1};
    if (config.contains("seed")) {
      const auto& s = config["seed"];
      seed = s.is_number_unsigned() ? std::optional(s.get<std::uint64_t>()) : std::nullopt;
    }
    for (int k = 0; k < spec.repetitions; ++k) {
      SweepRun run;
      run.index = spec.runs.size();
      run.repetition = k;
      run.values = values;
      run.config = config;
      if (seed) {
        run.seed = k == 0 ? *seed : (derive_seed(*seed, static_cast<std::uint64_t>(k)) & kSeedMask);
        run.config["seed"] = run.seed;
      }
      run.folder = fmt::format("runs/{:0{}}-{}",
                               run.index,
                               width,
                               slug_of(spec.parameters, values, k, spec.repetitions));
      run.config["name"] =
          fmt::format("{}/{}", spec.name, fs::path(run.folder).filename().string());
      spec.runs.push_back(std::move(run));
    }
  }
  return spec;
}

SweepSpec expand_sweep_file(const std::filesystem::path& path) {
  const nlohmann::json sweep = read_json_file(path);
  return expand_sweep(sweep, path.string(), path.parent_path());
}

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string config_text(const SweepRun& run) { return run.config.dump(2) + "\n"; }

/// Label naming a run in its config errors: "<sweep file> run 3 (/code/d = 4, repetition 0)".
std::string run_label(const SweepSpec& spec, const SweepRun& run) {
  std::string what;
  for (std::size_t p = 0; p < spec.parameters.size(); ++p) {
    what += fmt::format("{} = {}, ", spec.parameters[p], run.values[p].dump());
  }
  return fmt::format("{} run {} ({}repetition {})", spec.file, run.index, what, run.repetition);
}

/// Removes the temporary files a killed process left behind (write_file_atomically names them
/// ".<name>.tmp-<pid>"); the completed files they were meant to replace are untouched.
void remove_stale_temporaries(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return;
  }
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.front() == '.' && name.find(".tmp-") != std::string::npos) {
      fs::remove(entry.path(), ec);
    }
  }
}

/// Objectives shared between runs over the same data, loss, seed and partitions: one read-only
/// copy of each data set in memory, safe to read from many threads. Entries are weak: a data set
/// lives as long as some plan holds it. Validated plans are kept for execution only for the
/// first `max_kept` distinct data sets (a sweep over codes keeps all its plans); the others are
/// planned again when they run, so memory stays bounded when repetitions change the data.
class ObjectiveCache {
 public:
  explicit ObjectiveCache(std::size_t max_kept) : max_kept_(max_kept) {}

  /// Points `plan` at an equal objective already alive, if any. Returns whether the plan may be
  /// kept until it runs.
  bool share(RunPlan& plan, const fs::path& base_dir) {
    if (plan.delay_only()) {
      return true;
    }
    const std::string key = nlohmann::json{plan.resolved.value("data", nlohmann::json()),
                                           plan.resolved.value("loss", nlohmann::json()),
                                           plan.seed,
                                           plan.partitions,
                                           base_dir.string()}
                                .dump();
    const std::lock_guard lock(mutex_);
    Entry& entry = entries_[key];
    if (auto train = entry.train.lock()) {
      plan.objective = std::move(train);
      plan.test_objective = entry.test.lock();
    } else {
      entry.train = plan.objective;
      entry.test = plan.test_objective;
    }
    if (kept_.contains(key)) {
      return true;
    }
    if (kept_.size() < max_kept_) {
      kept_.insert(key);
      return true;
    }
    return false;
  }

 private:
  struct Entry {
    std::weak_ptr<const models::Objective> train;
    std::weak_ptr<const models::Objective> test;
  };
  std::size_t max_kept_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::set<std::string> kept_;
};

/// Runs `body(i)` for i in [0, count) on `jobs` threads, in increasing i per claim.
template <typename Body>
void parallel_for(std::size_t count, int jobs, Body body) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      if (!body(i)) {
        return;
      }
    }
  };
  const auto threads = static_cast<std::size_t>(std::max(1, jobs));
  if (threads == 1 || count <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(std::min(threads, count));
  for (std::size_t t = 0; t < std::min(threads, count); ++t) {
    pool.emplace_back(worker);
  }
  for (auto& t : pool) {
    t.join();
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) {
    return text;
  }
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::string number_field(const nlohmann::json& v) {
  if (v.is_number_float()) {
    return fmt::format("{}", v.get<double>());
  }
  if (v.is_null()) {
    return "";
  }
  return csv_field(value_text(v));
}

}  // namespace

namespace {

std::string build_index(const SweepSpec& spec, const fs::path& out_dir, std::size_t* failed) {
  std::vector<nlohmann::json> summaries;
  summaries.reserve(spec.runs.size());
  bool has_target = false;
  bool has_test = false;
  for (const auto& run : spec.runs) {
    const fs::path path = out_dir / run.folder / "summary.json";
    summaries.push_back(nlohmann::json::parse(slurp(path)));
    has_target = has_target || summaries.back().contains("time_to_target");
    has_test = has_test || summaries.back().contains("final_test_metric");
    if (failed != nullptr && summaries.back().value("status", "") != "ok") {
      ++*failed;
    }
  }
  std::vector<std::string> columns = {
      "status", "iterations", "total_time", "mean_iteration_time", "final_loss", "best_loss"};
  if (has_target) {
    columns.emplace_back("time_to_target");
  }
  if (has_test) {
    columns.emplace_back("final_test_metric");
  }
  std::string csv = "index,repetition,seed";
  for (const auto& p : spec.parameters) {
    csv += ',';
    csv += csv_field(p);
  }
  for (const auto& c : columns) {
    csv += ',';
    csv += c;
  }
  csv += ",folder\n";
  for (std::size_t i = 0; i < spec.runs.size(); ++i) {
    const auto& run = spec.runs[i];
    const auto& s = summaries[i];
    csv += fmt::format("{},{},{}", run.index, run.repetition, s.value("seed", run.seed));
    for (const auto& v : run.values) {
      csv += ',';
      csv += csv_field(value_text(v));
    }
    for (const auto& c : columns) {
      csv += ',';
      if (s.contains(c)) {
        csv += number_field(s[c]);
      }
    }
    csv += ',';
    csv += run.folder;
    csv += '\n';
  }
  return csv;
}

}  // namespace

std::string index_csv(const SweepSpec& spec, const std::filesystem::path& out_dir) {
  return build_index(spec, out_dir, nullptr);
}

SweepResult run_sweep(const SweepSpec& spec,
                      const std::filesystem::path& out_dir,
                      const SweepOptions& options) {
  SweepResult result;
  result.total = spec.runs.size();
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };

  // Which runs are complete; a folder holding another config means the wrong --out folder.
  std::vector<std::size_t> todo;
  for (const auto& run : spec.runs) {
    const fs::path dir = out_dir / run.folder;
    const fs::path config = dir / "config.json";
    if (fs::exists(config) && slurp(config) != config_text(run)) {
      throw ConfigError(fmt::format(
          "{}: holds a different config than run {} of {}; got another sweep's output; expected "
          "a fresh --out folder or the same sweep file",
          config.string(),
          run.index,
          spec.file));
    }
    if (fs::exists(dir / "summary.json")) {
      ++result.skipped;
    } else {
      todo.push_back(run.index);
    }
  }

  // Validate every remaining run before anything is written; report the first bad run.
  std::vector<std::unique_ptr<RunPlan>> plans(spec.runs.size());
  std::vector<std::string> errors(todo.size());
  std::vector<char> config_error(todo.size(), 0);
  std::atomic<std::size_t> first_error{todo.size()};
  ObjectiveCache cache(static_cast<std::size_t>(std::max(2, options.jobs)));
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (stopped()) {
      return false;
    }
    if (t > first_error.load()) {
      return true;
    }
    const SweepRun& run = spec.runs[todo[t]];
    try {
      auto plan =
          std::make_unique<RunPlan>(plan_run(run.config, run_label(spec, run), spec.base_dir));
      if (cache.share(*plan, spec.base_dir)) {
        plans[run.index] = std::move(plan);
      }
    } catch (const std::exception& e) {
      // A thread must not throw; the error is reported from here, lowest run index first.
      errors[t] = e.what();
      config_error[t] = dynamic_cast<const ConfigError*>(&e) != nullptr ? 1 : 0;
      std::size_t seen = first_error.load();
      while (t < seen && !first_error.compare_exchange_weak(seen, t)) {
      }
    }
    return true;
  });
  if (const std::size_t bad = first_error.load(); bad < todo.size()) {
    if (config_error[bad] != 0) {
      throw ConfigError(errors[bad]);
    }
    throw std::runtime_error(
        fmt::format("{}: {}", run_label(spec, spec.runs[todo[bad]]), errors[bad]));
  }
  if (stopped()) {
    result.interrupted = true;
    return result;
  }

  fs::create_directories(out_dir / "runs");
  remove_stale_temporaries(out_dir);
  for (const auto& run : spec.runs) {
    remove_stale_temporaries(out_dir / run.folder);
  }

  std::mutex mutex;
  std::size_t done = result.skipped;
  std::optional<std::string> failure;
  if (options.progress) {
    options.progress(done, result.skipped, result.total);
  }
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (stopped()) {
      return false;
    }
    {
      const std::lock_guard lock(mutex);
      if (failure) {
        return false;
      }
    }
    const SweepRun& run = spec.runs[todo[t]];
    const fs::path dir = out_dir / run.folder;
    try {
      fs::create_directories(dir);
      write_file_atomically(dir / "config.json", config_text(run));
      if (!plans[run.index]) {  // validated, not kept: plan it again (same config, same result)
        auto plan =
            std::make_unique<RunPlan>(plan_run(run.config, run_label(spec, run), spec.base_dir));
        (void)cache.share(*plan, spec.base_dir);
        plans[run.index] = std::move(plan);
      }
      (void)execute_run(*plans[run.index], dir);
      plans[run.index].reset();
      const std::lock_guard lock(mutex);
      ++result.ran;
      ++done;
      if (options.progress) {
        options.progress(done, result.skipped, result.total);
      }
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex);
      if (!failure) {
        failure = fmt::format("{}: {}", dir.string(), e.what());
      }
      return false;
    }
    return true;
  });
  if (failure) {
    throw std::runtime_error(*failure);
  }
  if (done < result.total) {
    result.interrupted = true;
    return result;
  }
  write_file_atomically(out_dir / "index.csv", build_index(spec, out_dir, &result.failed));
  return result;
}

}  // namespace stragglersim::experiments

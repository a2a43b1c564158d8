#include "experiments/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "experiments/run_diagnostics.h"
#include "experiments/run_output.h"
#include "models/base/fnv1a.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxRuns = 10'000'000;
constexpr std::size_t kMaxSlugValue = 24;

/// Config seeds are integers < 2^63 (plan_run reads them as int64).
constexpr std::uint64_t kSeedMask = (std::uint64_t{1} << 63U) - 1U;

/// Slug characters kept from a value's text; every other run of characters becomes one '_'.
std::string clean_text(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '+';
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
}

/// FNV-1a (models/base/fnv1a.h): folder names and the folder's identity.
using models::fnv1a;

std::string hex(std::uint64_t h) { return fmt::format("{:016x}", h); }

/// The folder name of a grid point and repetition: independent of the point's index, so
/// extending the grid or the repetitions keeps every earlier run's folder.
std::string slug_of(const SweepSpec& spec,
                    const std::string& scheme,
                    const std::vector<nlohmann::json>& values,
                    int repetition) {
  std::string slug;
  bool lossy = false;
  if (!spec.schemes.empty()) {
    const std::string name = clean_text(scheme, kMaxSlugValue);
    lossy = name != scheme;
    slug += fmt::format("scheme={}_", name);
  }
  for (std::size_t p = 0; p < spec.parameters.size(); ++p) {
    const std::string key = plain_name(spec.parameters[p]);
    const std::string text = value_text(values[p]);
    const std::string value = clean_text(text, kMaxSlugValue);
    // The string "2" and the number 2 share a text: strings that read as JSON are lossy too.
    lossy = lossy || clean_text(key, 64) != key || value != text ||
            (values[p].is_string() && nlohmann::json::accept(text));
    slug += fmt::format("{}={}_", clean_text(key, 64), value);
  }
  slug += fmt::format("rep{}", repetition);
  if (lossy) {
    nlohmann::json point(values);
    if (!spec.schemes.empty()) {
      point.insert(point.begin(), scheme);
    }
    slug += "-h" + hex(fnv1a(point.dump())).substr(0, 8);
  }
  return slug;
}

/// Expected cost of a run from its config alone (before planning): iterations × workers ×
/// data entries (rows × features of a synthetic source; 1 for delay-only runs).
double expected_cost(const nlohmann::json& config) {
  auto number = [](const nlohmann::json& v, const char* key, double fallback) {
    return v.is_object() && v.contains(key) && v[key].is_number() ? v[key].get<double>() : fallback;
  };
  const nlohmann::json& data = config.contains("data") ? config["data"] : nlohmann::json();
  const double entries =
      data.is_object() ? number(data, "rows", 1e4) * number(data, "features", 10.0) : 1.0;
  const double iterations = number(
      config.contains("optimizer") ? config["optimizer"] : nlohmann::json(), "iterations", 100.0);
  return iterations * number(config, "workers", 1.0) * entries;
}

/// Checks that `key` is a JSON pointer to a value of the base config or to a new key of one of
/// its objects (`reader` names the place of the key in the sweep file).
nlohmann::json::json_pointer check_pointer(const JsonReader& reader,
                                           const std::string& key,
                                           const nlohmann::json& base) {
  if (key.empty() || key.front() != '/') {
    reader.fail_value(
        key, "not a JSON pointer", key, "a pointer into the base config such as \"/code/d\"");
  }
  std::optional<nlohmann::json::json_pointer> pointer;
  try {
    pointer.emplace(key);
  } catch (const nlohmann::json::exception&) {
    reader.fail_value(
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
    reader.fail_value(key,
                      "no such place in the base config",
                      key,
                      "a pointer to an existing value or to a new key of an existing object");
  }
  return *pointer;
}

/// Checks one grid key and its values against the base config.
nlohmann::json::json_pointer check_grid_key(const JsonReader& grid,
                                            const std::string& key,
                                            const nlohmann::json& values,
                                            const nlohmann::json& base) {
  auto pointer = check_pointer(grid, key, base);
  if (!values.is_array() || values.empty()) {
    grid.fail_value(key, "wrong type", values, "a non-empty array of values, such as [2, 3, 5]");
  }
  return pointer;
}

/// A grid key inside the value another grid key replaces ("/code" and "/code/kind") would point
/// into a value that is not there in some runs ([] has no /kind): refused with both keys.
void refuse_nested_keys(const JsonReader& grid, const std::vector<std::string>& keys) {
  for (const auto& outer : keys) {
    for (const auto& inner : keys) {
      if (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/') {
        grid.fail_value(inner,
                        fmt::format("inside the value of grid key {}, which replaces it", outer),
                        inner,
                        fmt::format("grid keys that do not nest: vary {} or the keys inside it, "
                                    "not both",
                                    outer));
      }
    }
  }
}

/// The base config of a sweep file ("base" or "base_file"); sets spec.base_dir for a file.
nlohmann::json read_base(JsonReader& root, const std::string& file, SweepSpec& spec) {
  if (root.has("base") && root.has("base_file")) {
    root.fail("base_file", "give either base or base_file, not both");
  }
  if (root.has("base")) {
    nlohmann::json base = root.raw("base");
    (void)JsonReader(base, file, "/base");  // type check: an object
    return base;
  }
  if (!root.has("base_file")) {
    root.fail("base", "missing required key; expected a run config object (or \"base_file\")");
  }
  const std::string name = root.string("base_file", std::nullopt);
  const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : spec.base_dir / name;
  if (!fs::is_regular_file(path)) {
    root.fail_value("base_file", "cannot open base config", name, "an existing JSON file");
  }
  nlohmann::json base = read_json_file(path);
  (void)JsonReader(base, path.string(), "");
  spec.base_dir = path.parent_path();
  return base;
}

/// The checked grid: pointers and value arrays in key order, and the number of combinations.
struct Grid {
  std::vector<nlohmann::json::json_pointer> pointers;
  std::vector<const nlohmann::json*> values;
  std::size_t combinations = 1;
  /// Per parameter, the position of the baseline's value in its values; nullopt where the
  /// baseline keeps the run's own value.
  std::vector<std::optional<std::size_t>> baseline;
  /// The "schemes" tuples (empty without): each sets its pointers to its values.
  std::vector<std::vector<std::pair<nlohmann::json::json_pointer, nlohmann::json>>> schemes;
  /// The baseline scheme ("baseline": "<scheme name>").
  std::optional<std::size_t> baseline_scheme;
};

/// "schemes": [{"name": "...", "<pointer>": <value>, ...}, ...]: named tuples of values, one
/// point each along a `scheme` axis that is crossed with the grid (docs/sweeps.md).
void read_schemes(JsonReader& root,
                  const std::string& file,
                  const nlohmann::json& base,
                  Grid& grid,
                  SweepSpec& spec) {
  if (!root.has("schemes")) {
    root.allow("schemes");
    return;
  }
  const nlohmann::json& schemes = root.raw("schemes");
  if (!schemes.is_array() || schemes.empty()) {
    root.fail_value("schemes",
                    "wrong type",
                    schemes,
                    "a non-empty array of objects such as {\"name\": \"uncoded\", \"/code\": "
                    "{\"kind\": \"uncoded\"}}");
  }
  for (std::size_t i = 0; i < schemes.size(); ++i) {
    const std::string at = fmt::format("/schemes/{}", i);
    JsonReader reader(schemes[i], file, at);
    const std::string name = reader.string("name", std::nullopt);
    if (name.empty() ||
        std::find(spec.schemes.begin(), spec.schemes.end(), name) != spec.schemes.end()) {
      reader.fail_value("name", "not a new scheme name", name, "a non-empty name unique here");
    }
    std::vector<std::pair<nlohmann::json::json_pointer, nlohmann::json>> sets;
    for (const auto& [key, value] : schemes[i].items()) {
      if (key == "name") {
        continue;
      }
      if (std::find(spec.parameters.begin(), spec.parameters.end(), key) != spec.parameters.end()) {
        reader.fail_value(key, "also a grid key", key, "a pointer the grid does not vary");
      }
      sets.emplace_back(check_pointer(reader, key, base), value);
    }
    spec.schemes.push_back(name);
    grid.schemes.push_back(std::move(sets));
  }
}

/// "baseline": "<scheme name>": the baseline of a run is the run of that scheme at the same
/// grid point and repetition.
void read_baseline_scheme(const JsonReader& reader,
                          const nlohmann::json& name,
                          Grid& grid,
                          const SweepSpec& spec) {
  const auto at = std::find(spec.schemes.begin(), spec.schemes.end(), name.get<std::string>());
  if (at == spec.schemes.end()) {
    reader.fail_value("baseline",
                      "not a scheme name",
                      name,
                      spec.schemes.empty()
                          ? std::string("a \"schemes\" list naming it")
                          : fmt::format("one of the schemes: {}", fmt::join(spec.schemes, ", ")));
  }
  grid.baseline_scheme = static_cast<std::size_t>(at - spec.schemes.begin());
}

/// "baseline": {"<grid key>": <one of its values>, ...}: the baseline of a run is the run of
/// the same repetition with the named keys at these values and every other key at its own.
void read_baseline(JsonReader& root, const std::string& file, Grid& grid, const SweepSpec& spec) {
  grid.baseline.assign(spec.parameters.size(), std::nullopt);
  if (!root.has("baseline")) {
    root.allow("baseline");
    return;
  }
  const nlohmann::json& baseline = root.raw("baseline");
  if (baseline.is_string()) {
    read_baseline_scheme(root, baseline, grid, spec);
    return;
  }
  const JsonReader reader(baseline, file, "/baseline");
  if (baseline.empty()) {
    root.fail_value("baseline",
                    "empty baseline",
                    baseline,
                    "an object naming at least one grid key and its baseline value");
  }
  for (const auto& [key, value] : baseline.items()) {
    const auto p = std::find(spec.parameters.begin(), spec.parameters.end(), key);
    if (p == spec.parameters.end()) {
      reader.fail_value(key,
                        "not a grid key",
                        key,
                        fmt::format("one of the grid keys: {}", fmt::join(spec.parameters, ", ")));
    }
    const auto index = static_cast<std::size_t>(p - spec.parameters.begin());
    const nlohmann::json& values = *grid.values[index];
    const auto at = std::find(values.begin(), values.end(), value);
    if (at == values.end()) {
      reader.fail_value(key,
                        "not one of the grid's values for this key",
                        value,
                        fmt::format("one of {}", values.dump()));
    }
    grid.baseline[index] = static_cast<std::size_t>(at - values.begin());
  }
}

Grid read_grid(JsonReader& root,
               const nlohmann::json& grid_json,
               const std::string& file,
               const nlohmann::json& base,
               SweepSpec& spec) {
  Grid grid;
  const JsonReader reader(grid_json, file, "/grid");
  // nlohmann::json keeps object keys sorted bytewise: this is the documented grid order.
  for (const auto& [key, values] : grid_json.items()) {
    grid.pointers.push_back(check_grid_key(reader, key, values, base));
    spec.parameters.push_back(key);
    grid.values.push_back(&values);
    grid.combinations *= values.size();
    if (grid.combinations > kMaxRuns) {
      reader.fail_value(key,
                        "too many runs",
                        grid.combinations,
                        fmt::format("at most {} runs per sweep", kMaxRuns));
    }
  }
  refuse_nested_keys(reader, spec.parameters);
  read_schemes(root, file, base, grid, spec);
  read_baseline(root, file, grid, spec);
  spec.has_baseline = grid.baseline_scheme.has_value() ||
                      std::any_of(grid.baseline.begin(), grid.baseline.end(), [](const auto& b) {
                        return b.has_value();
                      });
  spec.vary_data_seed = root.boolean("vary_data_seed", false);
  root.finish();
  const std::size_t total = grid.combinations * std::max<std::size_t>(1, grid.schemes.size()) *
                            static_cast<std::size_t>(spec.repetitions);
  if (total > kMaxRuns) {
    root.fail_value(
        "repetitions", "too many runs", total, fmt::format("at most {} runs per sweep", kMaxRuns));
  }
  return grid;
}

/// The seeds of repetition k of a point whose config is `config` (docs/sweeps.md "Runs"); a
/// malformed seed is left for plan_run to report (nullopt).
struct RepetitionSeeds {
  std::optional<std::uint64_t> seed;
  std::optional<std::uint64_t> data_seed;
};

RepetitionSeeds repetition_seeds(const nlohmann::json& config, int k, bool vary_data_seed) {
  const auto read = [&](const char* key, std::optional<std::uint64_t> fallback) {
    if (!config.contains(key)) {
      return fallback;
    }
    const auto& v = config[key];
    return v.is_number_unsigned() ? std::optional(v.get<std::uint64_t>()) : std::nullopt;
  };
  const auto repeat = [k](std::optional<std::uint64_t> s) {
    return s && k > 0 ? std::optional(derive_seed(*s, static_cast<std::uint64_t>(k)) & kSeedMask)
                      : s;
  };
  const std::optional<std::uint64_t> seed = read("seed", std::uint64_t{1});
  const std::optional<std::uint64_t> data_seed = read("data_seed", seed);
  return {repeat(seed), vary_data_seed ? repeat(data_seed) : data_seed};
}

/// The scheme's values, then the grid's, of combination `c` (the scheme slowest, the last grid
/// key fastest): its config, grid values and digits.
struct Point {
  nlohmann::json config;
  std::vector<nlohmann::json> values;
  std::size_t scheme = 0;
  std::vector<std::size_t> digit;
};

Point point_of(const Grid& grid, const nlohmann::json& base, std::size_t c) {
  Point point{base, {}, c / grid.combinations, std::vector<std::size_t>(grid.pointers.size(), 0)};
  std::size_t rest = c % grid.combinations;
  for (std::size_t p = grid.pointers.size(); p-- > 0;) {
    point.digit[p] = rest % grid.values[p]->size();
    rest /= grid.values[p]->size();
  }
  if (!grid.schemes.empty()) {
    for (const auto& [pointer, value] : grid.schemes[point.scheme]) {
      point.config[pointer] = value;
    }
  }
  for (std::size_t p = 0; p < grid.pointers.size(); ++p) {
    point.values.push_back((*grid.values[p])[point.digit[p]]);
    point.config[grid.pointers[p]] = point.values.back();
  }
  return point;
}

/// Appends the repetitions of combination `c` to spec.runs.
void add_combination(const Grid& grid, const nlohmann::json& base, std::size_t c, SweepSpec& spec) {
  const Point point = point_of(grid, base, c);
  // The baseline's combination: the same digits but the baseline's where it names one.
  std::size_t baseline = grid.baseline_scheme.value_or(point.scheme);
  for (std::size_t p = 0; p < grid.pointers.size(); ++p) {
    baseline = baseline * grid.values[p]->size() + grid.baseline[p].value_or(point.digit[p]);
  }
  const std::string scheme = grid.schemes.empty() ? std::string() : spec.schemes[point.scheme];
  for (int k = 0; k < spec.repetitions; ++k) {
    SweepRun run;
    run.index = spec.runs.size();
    run.repetition = k;
    run.baseline =
        baseline * static_cast<std::size_t>(spec.repetitions) + static_cast<std::size_t>(k);
    run.scheme = scheme;
    run.values = point.values;
    run.config = point.config;
    const RepetitionSeeds seeds = repetition_seeds(point.config, k, spec.vary_data_seed);
    if (seeds.seed) {
      run.seed = *seeds.seed;
      run.config["seed"] = run.seed;
    }
    // Written when it differs from the seed (or the config gives it): a config that never
    // names data_seed keeps its bytes where the two agree.
    if (seeds.data_seed && (point.config.contains("data_seed") || seeds.data_seed != seeds.seed)) {
      run.config["data_seed"] = *seeds.data_seed;
    }
    const std::string slug = slug_of(spec, run.scheme, run.values, k);
    run.folder = "runs/" + slug;
    run.config["name"] = fmt::format("{}/{}", spec.name, slug);
    run.cost = expected_cost(run.config);
    spec.runs.push_back(std::move(run));
  }
}

}  // namespace

std::string plain_name(const std::string& pointer) {
  std::string key = pointer.empty() ? pointer : pointer.substr(1);
  std::replace(key.begin(), key.end(), '/', '.');
  return key;
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
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

SweepSpec expand_sweep(const nlohmann::json& sweep,
                       const std::string& file,
                       const std::filesystem::path& base_dir) {
  JsonReader root(sweep, file, "");
  SweepSpec spec;
  spec.file = file;
  spec.name = root.string("name", fs::path(file).stem().string());
  spec.base_dir = base_dir;
  const nlohmann::json base = read_base(root, file, spec);
  spec.repetitions = static_cast<int>(root.integer("repetitions", 1, 1, 1'000'000));
  const nlohmann::json empty_grid = nlohmann::json::object();
  const nlohmann::json& grid_json = root.has("grid") ? root.raw("grid") : empty_grid;
  const Grid grid = read_grid(root, grid_json, file, base, spec);
  const std::size_t combinations =
      grid.combinations * std::max<std::size_t>(1, spec.schemes.size());
  spec.runs.reserve(combinations * static_cast<std::size_t>(spec.repetitions));
  for (std::size_t c = 0; c < combinations; ++c) {
    add_combination(grid, base, c, spec);
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
  std::string what = run.scheme.empty() ? std::string() : fmt::format("scheme {}, ", run.scheme);
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
      remove_regular_file(entry.path());
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
                                           plan.data_seed,
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

  /// Data sets and β shared by plan_run itself, so a run over a data set already alive pays
  /// no set-up (docs/sweeps.md).
  SetupCache setup;

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

/// A summary number, or nullopt when absent, null or not positive (a ratio needs both > 0).
std::optional<double> positive_field(const nlohmann::json& s,
                                     const nlohmann::json::json_pointer& at) {
  if (!s.contains(at) || !s.at(at).is_number()) {
    return std::nullopt;
  }
  const double v = s.at(at).get<double>();
  return v > 0.0 ? std::optional(v) : std::nullopt;
}

/// The speedup columns of index.csv: name and the summary field whose baseline/run ratio it is.
std::vector<std::pair<std::string, nlohmann::json::json_pointer>> speedup_columns(
    bool suboptimality, bool target) {
  std::vector<std::pair<std::string, nlohmann::json::json_pointer>> out = {
      {"speedup_mean_iteration_time", nlohmann::json::json_pointer("/mean_iteration_time")}};
  if (suboptimality) {
    for (const char* level : kSuboptimalityKeys) {
      out.emplace_back(
          fmt::format("speedup_time_to_{}", level),
          nlohmann::json::json_pointer(fmt::format("/time_to_relative_suboptimality/{}", level)));
    }
  }
  if (target) {
    out.emplace_back("speedup_time_to_target", nlohmann::json::json_pointer("/time_to_target"));
  }
  return out;
}

using IndexColumns = std::vector<std::pair<std::string, nlohmann::json::json_pointer>>;

/// The summary columns of index.csv (name and where the value is in the summary): the fixed
/// ones, then those some run has; and the speedup columns that go with them.
struct IndexLayout {
  IndexColumns columns;
  IndexColumns speedups;
};

IndexLayout index_layout(const std::vector<nlohmann::json>& summaries) {
  bool has_target = false;
  bool has_test = false;
  bool has_optimum = false;
  for (const auto& s : summaries) {
    has_target = has_target || s.contains("time_to_target");
    has_test = has_test || s.contains("final_test_metric");
    has_optimum = has_optimum || s.contains("time_to_relative_suboptimality");
  }
  IndexColumns columns;
  for (const char* c :
       {"status", "iterations", "total_time", "mean_iteration_time", "final_loss", "best_loss"}) {
    columns.emplace_back(c, nlohmann::json::json_pointer(std::string("/") + c));
  }
  if (has_target) {
    columns.emplace_back("time_to_target", nlohmann::json::json_pointer("/time_to_target"));
  }
  if (has_test) {
    columns.emplace_back("final_test_metric", nlohmann::json::json_pointer("/final_test_metric"));
  }
  if (has_optimum) {
    columns.emplace_back("f_star", nlohmann::json::json_pointer("/f_star"));
    columns.emplace_back("final_suboptimality",
                         nlohmann::json::json_pointer("/final_suboptimality"));
    for (const char* level : kSuboptimalityKeys) {
      columns.emplace_back(
          fmt::format("time_to_{}", level),
          nlohmann::json::json_pointer(fmt::format("/time_to_relative_suboptimality/{}", level)));
    }
  }
  return {std::move(columns), speedup_columns(has_optimum, has_target)};
}

std::string index_header(const SweepSpec& spec, const IndexLayout& layout) {
  std::string csv = spec.schemes.empty() ? "index,repetition,seed" : "index,repetition,seed,scheme";
  for (const auto& p : spec.parameters) {
    csv += ',';
    csv += csv_field(p);
  }
  for (const auto& c : layout.columns) {
    csv += ',';
    csv += c.first;
  }
  if (spec.has_baseline) {
    csv += ",baseline_index";
    for (const auto& c : layout.speedups) {
      csv += ',';
      csv += c.first;
    }
  }
  csv += ",folder\n";
  return csv;
}

/// Run i's line of index.csv.
std::string index_row(const SweepSpec& spec,
                      std::size_t i,
                      const std::vector<nlohmann::json>& summaries,
                      const IndexLayout& layout) {
  const auto& run = spec.runs[i];
  const auto& s = summaries[i];
  std::string csv = fmt::format("{},{},{}", run.index, run.repetition, s.value("seed", run.seed));
  if (!spec.schemes.empty()) {
    csv += ',';
    csv += csv_field(run.scheme);
  }
  for (const auto& v : run.values) {
    csv += ',';
    csv += csv_field(value_text(v));
  }
  for (const auto& c : layout.columns) {
    csv += ',';
    if (s.contains(c.second)) {
      csv += number_field(s.at(c.second));
    }
  }
  if (spec.has_baseline) {
    csv += fmt::format(",{}", run.baseline);
    const auto& b = summaries[run.baseline];
    for (const auto& c : layout.speedups) {
      csv += ',';
      // Baseline's time over the run's: > 1 when the run is faster. Empty when either run
      // has no positive value (not reached, failed, or absent).
      const auto mine = positive_field(s, c.second);
      const auto theirs = positive_field(b, c.second);
      if (mine && theirs) {
        csv += fmt::format("{}", *theirs / *mine);
      }
    }
  }
  csv += ',';
  csv += run.folder;
  csv += '\n';
  return csv;
}

std::string build_index(const SweepSpec& spec, const std::vector<nlohmann::json>& summaries) {
  const IndexLayout layout = index_layout(summaries);
  std::string csv = index_header(spec, layout);
  for (std::size_t i = 0; i < spec.runs.size(); ++i) {
    csv += index_row(spec, i, summaries, layout);
  }
  return csv;
}

}  // namespace

std::vector<nlohmann::json> read_sweep_summaries(const SweepSpec& spec,
                                                 const std::filesystem::path& out_dir) {
  std::vector<nlohmann::json> summaries;
  summaries.reserve(spec.runs.size());
  for (const auto& run : spec.runs) {
    summaries.push_back(nlohmann::json::parse(slurp(out_dir / run.folder / "summary.json")));
  }
  return summaries;
}

std::string index_csv(const SweepSpec& spec, const std::filesystem::path& out_dir) {
  return build_index(spec, read_sweep_summaries(spec, out_dir));
}

std::size_t write_sweep_index(const SweepSpec& spec, const std::filesystem::path& out_dir) {
  const std::vector<nlohmann::json> summaries = read_sweep_summaries(spec, out_dir);
  const auto failed = static_cast<std::size_t>(
      std::count_if(summaries.begin(), summaries.end(), [](const nlohmann::json& s) {
        return s.value("status", "") != "ok";
      }));
  // Every file is complete before index.csv, the mark of a finished sweep, appears.
  write_file_atomically(out_dir / "summary.csv", sweep_summary_csv(spec, summaries));
  write_file_atomically(out_dir / "traces.csv", sweep_traces_csv(spec, out_dir, summaries));
  write_file_atomically(out_dir / "index.csv", build_index(spec, summaries));
  return failed;
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
    runs[run.folder] = hex(fnv1a(text));
    all += text;
  }
  return {{"name", spec.name}, {"spec_hash", hex(fnv1a(all))}, {"runs", runs}};
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
    if (fs::is_directory(out_dir, ec) && !fs::is_empty(out_dir, ec)) {
      refuse_folder(spec, out_dir, fmt::format("not empty and holds no {}", kIdentityFile));
    }
    return {};
  }
  nlohmann::json old;
  try {
    old = nlohmann::json::parse(slurp(marker));
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
  if (!fs::exists(marker, ec) || slurp(marker) != text) {
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
    if (fs::exists(config) && slurp(config) != config_text(run)) {
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

namespace {

/// A backend that cannot run inside this sweep: one of its own mpirun (traits.mpi), or one timed
/// on real cores (shares_cores false) in an MPI sweep, whose ranks may share a node's cores.
void refuse_in_sweep(const SweepSpec& spec,
                     const SweepRun& run,
                     const BackendRow& backend,
                     int ranks) {
  const auto rows = backend_factories();
  const auto names = [&rows](bool shared_cores_only) {
    return quoted_names(rows, [shared_cores_only](const BackendRow& row) {
      return !row.traits.mpi && row.unavailable.empty() &&
             (row.traits.shares_cores || !shared_cores_only);
    });
  };
  if (backend.traits.mpi) {
    throw ConfigError(fmt::format(
        "{}:/backend/kind: the {} backend runs one process per worker under its own mpirun; got "
        "\"{}\" in a sweep; expected {}, or the run on its own (mpirun -np workers+1 stragglersim "
        "run)",
        run_label(spec, run),
        backend.name,
        backend.name,
        names(false)));
  }
  if (ranks > 1 && !backend.traits.shares_cores) {
    throw ConfigError(fmt::format(
        "{}:/backend/kind: {}-backend runs are timed on real cores that other ranks may "
        "share; got \"{}\" in an MPI sweep of {} ranks; expected {}, or the "
        "sweep without mpirun (--jobs runs them one at a time)",
        run_label(spec, run),
        backend.name,
        backend.name,
        ranks,
        names(true)));
  }
}

}  // namespace

RunCheck check_run(const SweepSpec& spec, const SweepRun& run, int ranks) {
  RunCheck check;
  try {
    const RunPlan plan =
        plan_run(run.config, run_label(spec, run), spec.base_dir, {.max_threads = 1});
    refuse_in_sweep(spec, run, plan.backend, ranks);
  } catch (const ConfigError& e) {
    check.error = e.what();
    check.config_error = true;
  } catch (const std::exception& e) {
    check.error = fmt::format("{}: {}", run_label(spec, run), e.what());
  }
  return check;
}

bool execute_sweep_run(const SweepSpec& spec,
                       const SweepRun& run,
                       const std::filesystem::path& out_dir,
                       const std::filesystem::path& f_star_cache) {
  const fs::path dir = out_dir / run.folder;
  fs::create_directories(dir);
  // Only the process running this run writes into its folder: temporaries are a killed one's.
  remove_stale_temporaries(dir);
  write_file_atomically(dir / "config.json", config_text(run));
  // Ranks may share a node's cores: each run computes on one thread, as --jobs N would.
  RunPlan plan = plan_run(run.config, run_label(spec, run), spec.base_dir, {.max_threads = 1});
  plan.f_star_cache = f_star_cache;
  const RunOutcome outcome = execute_run(plan, dir);
  print_warnings(outcome.summary, run.folder + ": ");
  return outcome.status != "ok";
}

namespace {

/// The cores one run may use (docs/sweeps.md): the machine's cores divided among the runs that
/// execute at once, min(jobs, runs), so that runs × threads never exceeds the cores; at least 1.
int threads_per_run(int jobs, std::size_t runs) {
  const auto at_once =
      std::max<std::size_t>(1, std::min(static_cast<std::size_t>(std::max(1, jobs)), runs));
  return std::max(1, hardware_cores() / static_cast<int>(at_once));
}

/// Validates the runs `todo` on `jobs` threads (plans kept in `plans` as the cache allows);
/// throws the error of the first bad run in index order.
void validate_runs(const SweepSpec& spec,
                   const std::vector<std::size_t>& todo,
                   const SweepOptions& options,
                   ObjectiveCache& cache,
                   std::vector<std::unique_ptr<RunPlan>>& plans) {
  const int threads = threads_per_run(options.jobs, todo.size());
  std::vector<std::string> errors(todo.size());
  std::vector<char> config_error(todo.size(), 0);
  std::atomic<std::size_t> first_error{todo.size()};
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (options.stop != nullptr && options.stop->load()) {
      return false;
    }
    if (t > first_error.load()) {
      return true;
    }
    const SweepRun& run = spec.runs[todo[t]];
    try {
      auto plan = std::make_unique<RunPlan>(
          plan_run(run.config, run_label(spec, run), spec.base_dir, {threads, &cache.setup}));
      refuse_in_sweep(spec, run, plan->backend, 1);
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
}

/// Runs `todo` on `jobs` threads; returns how many ran. Threads-backend runs take the lock
/// exclusively: they are timed on real cores and must not share them with other runs.
std::size_t execute_runs(const SweepSpec& spec,
                         const fs::path& out_dir,
                         const std::vector<std::size_t>& todo,
                         const SweepOptions& options,
                         ObjectiveCache& cache,
                         std::vector<std::unique_ptr<RunPlan>>& plans,
                         std::size_t skipped,
                         std::size_t total,
                         std::vector<WarningCount>& warnings) {
  const int threads = threads_per_run(options.jobs, todo.size());
  std::mutex mutex;
  std::shared_mutex cores;
  std::size_t ran = 0;
  std::optional<std::string> failure;
  parallel_for(todo.size(), options.jobs, [&](std::size_t t) {
    if (options.stop != nullptr && options.stop->load()) {
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
      remove_stale_temporaries(dir);
      write_file_atomically(dir / "config.json", config_text(run));
      if (!plans[run.index]) {  // validated, not kept: plan it again (same config, same result)
        auto plan = std::make_unique<RunPlan>(
            plan_run(run.config, run_label(spec, run), spec.base_dir, {threads, &cache.setup}));
        (void)cache.share(*plan, spec.base_dir);
        plans[run.index] = std::move(plan);
      }
      plans[run.index]->f_star_cache = options.f_star_cache;
      RunOutcome outcome;
      if (!plans[run.index]->backend.traits.shares_cores) {
        const std::unique_lock alone(cores);
        outcome = execute_run(*plans[run.index], dir);
      } else {
        const std::shared_lock shared(cores);
        outcome = execute_run(*plans[run.index], dir);
      }
      plans[run.index].reset();
      const std::lock_guard lock(mutex);
      count_warnings(outcome.summary, run.folder, warnings);
      ++ran;
      if (options.progress) {
        options.progress(skipped + ran, skipped, total);
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
  return ran;
}

}  // namespace

SweepResult run_sweep(const SweepSpec& spec,
                      const std::filesystem::path& out_dir,
                      const SweepOptions& options) {
  SweepResult result;
  FolderLock lock = lock_existing_sweep_folder(out_dir, options.shard.count == 1);
  result.stale = check_sweep_folder(spec, out_dir);
  const std::vector<std::size_t> todo = pending_runs(spec, out_dir, options.shard, &result.skipped);
  const std::size_t share = todo.size() + result.skipped;
  result.total = spec.runs.size();

  // Validate every remaining run before anything is written; report the first bad run.
  std::vector<std::unique_ptr<RunPlan>> plans(spec.runs.size());
  ObjectiveCache cache(static_cast<std::size_t>(std::max(2, options.jobs)));
  validate_runs(spec, todo, options, cache, plans);
  if (options.stop != nullptr && options.stop->load()) {
    result.interrupted = true;
    return result;
  }
  // Shards may write into the folder at the same time: only a whole sweep removes temporaries.
  record_sweep_folder(spec, out_dir, options.shard.count == 1, lock);
  if (options.progress) {
    options.progress(result.skipped, result.skipped, share);
  }
  result.ran = execute_runs(
      spec, out_dir, todo, options, cache, plans, result.skipped, share, result.warnings);
  if (result.ran + result.skipped < share) {
    result.interrupted = true;
    return result;
  }
  if (options.shard.count == 1) {
    result.failed = write_sweep_index(spec, out_dir);
  }
  return result;
}

SweepResult merge_sweep(const SweepSpec& spec, const std::filesystem::path& out_dir) {
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

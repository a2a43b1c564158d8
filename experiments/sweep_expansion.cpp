// A sweep file read and expanded into its runs (experiments/sweep.h): the base config, the grid,
// the schemes and the baseline checked against it, each run's config, seeds and folder name.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/run_plan.h"
#include "experiments/sweep.h"
#include "experiments/sweep_folder.h"
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

}  // namespace

// Expected cost (sweep_folder.h): rows × features of a synthetic source, 1 for delay-only runs.
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

std::string run_slug(bool with_scheme,
                     const std::vector<std::string>& parameters,
                     const std::string& scheme,
                     const std::vector<nlohmann::json>& values,
                     int repetition) {
  std::string slug;
  bool lossy = false;
  if (with_scheme) {
    const std::string name = clean_text(scheme, kMaxSlugValue);
    lossy = name != scheme;
    slug += fmt::format("scheme={}_", name);
  }
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    const std::string key = plain_name(parameters[p]);
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
    if (with_scheme) {
      point.insert(point.begin(), scheme);
    }
    slug += "-h" + hash_hex(point.dump()).substr(0, 8);
  }
  return slug;
}

namespace {

/// The folder name of a grid point and repetition: independent of the point's index, so
/// extending the grid or the repetitions keeps every earlier run's folder.
std::string slug_of(const SweepSpec& spec,
                    const std::string& scheme,
                    const std::vector<nlohmann::json>& values,
                    int repetition) {
  return run_slug(!spec.schemes.empty(), spec.parameters, scheme, values, repetition);
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
  /// Per scheme, its own "tune" grid (nullopt: the sweep's).
  std::vector<std::optional<std::vector<TuneKey>>> scheme_tune;
};

constexpr std::size_t kMaxTuneCombinations = 10'000;
constexpr std::int64_t kMaxLogRangePoints = 1'000;
constexpr const char* kTuneValuesExpected =
    "a non-empty array of values, such as [0.5, 1, 2], or {\"log_range\": [lo, hi], \"points\": "
    "N} with 0 < lo < hi and N >= 2";

/// A tune key's values: its array, or N points spaced evenly in log between lo and hi (both
/// included exactly).
std::vector<nlohmann::json> tune_values(const JsonReader& reader,
                                        const std::string& key,
                                        const nlohmann::json& value) {
  if (value.is_array() && !value.empty()) {
    return {value.begin(), value.end()};
  }
  if (!value.is_object()) {
    reader.fail_value(key, "wrong type", value, kTuneValuesExpected);
  }
  JsonReader range(value, reader.file(), reader.pointer_of(key));
  if (!range.has("log_range")) {
    range.fail("log_range", "missing required key; expected [lo, hi] with 0 < lo < hi");
  }
  const nlohmann::json& bounds = range.raw("log_range");
  const auto points = range.integer("points", std::nullopt, 2, kMaxLogRangePoints);
  range.finish();
  const bool numbers =
      bounds.is_array() && bounds.size() == 2 && bounds[0].is_number() && bounds[1].is_number();
  const double lo = numbers ? bounds[0].get<double>() : 0.0;
  const double hi = numbers ? bounds[1].get<double>() : 0.0;
  if (!numbers || !(lo > 0.0 && hi > lo && std::isfinite(hi))) {
    range.fail_value("log_range", "not a range", bounds, "[lo, hi] with 0 < lo < hi");
  }
  std::vector<nlohmann::json> values;
  const double step = (std::log(hi) - std::log(lo)) / static_cast<double>(points - 1);
  for (std::int64_t i = 0; i < points; ++i) {
    // Inner points rounded to 12 significant digits: 4, not 3.999999999999999.
    const double v = std::exp(std::log(lo) + step * static_cast<double>(i));
    values.emplace_back(i == 0 ? lo : i == points - 1 ? hi : std::stod(fmt::format("{:.12g}", v)));
  }
  return values;
}

/// A tune key nested with a grid key (one replaces the value the other points into).
void refuse_tune_in_grid(const JsonReader& reader,
                         const std::string& key,
                         const std::vector<std::string>& grid_keys) {
  for (const auto& g : grid_keys) {
    const auto inside = [](const std::string& inner, const std::string& outer) {
      return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/';
    };
    if (g == key || inside(key, g) || inside(g, key)) {
      reader.fail_value(key,
                        g == key ? "also a grid key" : fmt::format("nested with grid key {}", g),
                        key,
                        "a pointer the grid does not vary");
    }
  }
}

/// A "tune" object at `at`: {"<pointer>": values, ...}, each pointer checked against `config`
/// (the base, or a scheme's config), none a grid key, none nested in another.
std::vector<TuneKey> read_tune_keys(const nlohmann::json& tune,
                                    const std::string& file,
                                    const std::string& at,
                                    const nlohmann::json& config,
                                    const SweepSpec& spec) {
  const JsonReader reader(tune, file, at);
  if (tune.empty()) {
    throw ConfigError(fmt::format(
        "{}:{}: empty tune grid; got {{}}; expected an object such as {{\"/optimizer/step\": "
        "[0.5, 1, 2]}}",
        file,
        at));
  }
  std::vector<TuneKey> keys;
  std::vector<std::string> pointers;
  std::size_t combinations = 1;
  // nlohmann::json keeps object keys sorted bytewise: the tune keys' order.
  for (const auto& [key, value] : tune.items()) {
    (void)check_pointer(reader, key, config);
    refuse_tune_in_grid(reader, key, spec.parameters);
    keys.push_back({key, tune_values(reader, key, value)});
    pointers.push_back(key);
    combinations *= keys.back().values.size();
    if (combinations > kMaxTuneCombinations) {
      reader.fail_value(key,
                        "too many tune combinations",
                        combinations,
                        fmt::format("at most {} per scheme", kMaxTuneCombinations));
    }
  }
  refuse_nested_keys(reader, pointers);
  return keys;
}

/// "tune_objective": {"suboptimality": S[, "sustained": true]} or {"time_budget": T}.
TuneObjective read_objective(const nlohmann::json& raw, const std::string& file) {
  JsonReader reader(raw, file, "/tune_objective");
  TuneObjective objective;
  const bool suboptimality = reader.has("suboptimality");
  if (suboptimality == reader.has("time_budget")) {
    throw ConfigError(fmt::format(
        "{}:/tune_objective: {}; got {}; expected {{\"suboptimality\": S}} with 0 < S < 1 or "
        "{{\"time_budget\": T}} with T > 0 (none: the runs' target_loss)",
        file,
        suboptimality ? "two objectives" : "no objective",
        raw.dump()));
  }
  if (suboptimality) {
    objective.kind = TuneObjective::Kind::kSuboptimality;
    objective.value = reader.number("suboptimality", std::nullopt);
    if (!(objective.value > 0.0 && objective.value < 1.0)) {
      reader.fail_value(
          "suboptimality", "out of range", objective.value, "a number with 0 < S < 1");
    }
    objective.sustained = reader.boolean("sustained", false);
  } else {
    objective.kind = TuneObjective::Kind::kTimeBudget;
    objective.value = reader.positive("time_budget", std::nullopt);
  }
  reader.finish();
  return objective;
}

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
      if (key == "name" || key == "tune") {
        continue;
      }
      if (std::find(spec.parameters.begin(), spec.parameters.end(), key) != spec.parameters.end()) {
        reader.fail_value(key, "also a grid key", key, "a pointer the grid does not vary");
      }
      sets.emplace_back(check_pointer(reader, key, base), value);
    }
    std::optional<std::vector<TuneKey>> tune;
    if (schemes[i].contains("tune")) {
      nlohmann::json config = base;
      for (const auto& [pointer, value] : sets) {
        config[pointer] = value;
      }
      // {} leaves the scheme untuned (the sweep's "tune" does not apply to it).
      const nlohmann::json& own = schemes[i]["tune"];
      tune = own.is_object() && own.empty() ? std::vector<TuneKey>()
                                            : read_tune_keys(own, file, at + "/tune", config, spec);
    }
    spec.schemes.push_back(name);
    grid.schemes.push_back(std::move(sets));
    grid.scheme_tune.push_back(std::move(tune));
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

/// "tune", "tune_objective", "tuning_repetitions" (docs/sweeps.md "Tuning").
void read_tuning(JsonReader& root,
                 const std::string& file,
                 const nlohmann::json& base,
                 const Grid& grid,
                 SweepSpec& spec) {
  const bool scheme_tune = std::any_of(grid.scheme_tune.begin(),
                                       grid.scheme_tune.end(),
                                       [](const auto& t) { return t.has_value(); });
  if (!root.has("tune") && !scheme_tune) {
    for (const char* key : {"tune_objective", "tuning_repetitions"}) {
      if (root.has(key)) {
        root.fail_value(key, "given without a tune grid", root.raw(key), "a \"tune\" object too");
      }
    }
    for (const char* key : {"tune", "tune_objective", "tuning_repetitions"}) {
      root.allow(key);
    }
    return;
  }
  SweepTuning tuning;
  std::vector<TuneKey> shared;
  if (root.has("tune")) {
    shared = read_tune_keys(root.raw("tune"), file, "/tune", base, spec);
  }
  root.allow("tune");
  const std::size_t schemes = std::max<std::size_t>(1, grid.schemes.size());
  for (std::size_t s = 0; s < schemes; ++s) {
    const bool own = s < grid.scheme_tune.size() && grid.scheme_tune[s].has_value();
    tuning.keys.push_back(own ? *grid.scheme_tune[s] : shared);
    for (const auto& key : tuning.keys.back()) {
      if (std::find(tuning.pointers.begin(), tuning.pointers.end(), key.pointer) ==
          tuning.pointers.end()) {
        tuning.pointers.push_back(key.pointer);
      }
    }
  }
  std::sort(tuning.pointers.begin(), tuning.pointers.end());
  tuning.repetitions = static_cast<int>(root.integer("tuning_repetitions", 2, 1, 1000));
  if (root.has("tune_objective")) {
    tuning.objective = read_objective(root.raw("tune_objective"), file);
  }
  root.allow("tune_objective");
  spec.tuning = std::move(tuning);
}

/// The target_loss objective needs a target in every tuned run.
void check_tuning_target(const SweepSpec& spec) {
  if (!spec.tuning || spec.tuning->objective.kind != TuneObjective::Kind::kTargetLoss) {
    return;
  }
  for (const auto& run : spec.runs) {
    const auto s = static_cast<std::size_t>(
        std::find(spec.schemes.begin(), spec.schemes.end(), run.scheme) - spec.schemes.begin());
    const bool tuned = !spec.tuning->keys[spec.schemes.empty() ? 0 : s].empty();
    if (tuned && !run.config.contains("target_loss")) {
      throw ConfigError(fmt::format(
          "{}:/tune_objective: missing required key; got a run without target_loss ({}); "
          "expected {{\"suboptimality\": S}} or {{\"time_budget\": T}}, or a target_loss in the "
          "base config",
          spec.file,
          run.folder));
    }
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
  read_tuning(root, file, base, grid, spec);
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
  spec.grid_parameters = spec.parameters.size();
  check_tuning_target(spec);
  return spec;
}

SweepSpec expand_sweep_file(const std::filesystem::path& path) {
  const nlohmann::json sweep = read_json_file(path);
  return expand_sweep(sweep, path.string(), path.parent_path());
}

}  // namespace stragglersim::experiments

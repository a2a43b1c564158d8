// Tuning in sweeps (experiments/sweep.h, docs/sweeps.md "Tuning"): every tune combination of a
// scheme run on tuning seeds into DIR/tuning, the choice made from those runs alone, tuning.csv,
// and the sweep's runs (the evaluation, on its own seeds) at the chosen values.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/output_file.h"
#include "experiments/sweep.h"
#include "experiments/sweep_folder.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {

namespace {

namespace fs = std::filesystem;

/// Config seeds are integers < 2^63 (plan_run reads them as int64).
constexpr std::uint64_t kTuneSeedMask = (std::uint64_t{1} << 63U) - 1U;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// A tuning run of a training config without its own divergence_bound ends once its loss rises
/// above this multiple of f(x₀) (docs/sweeps.md "Tuning").
constexpr double kTuningDivergenceBound = 10.0;

/// The scheme position of `run` in spec.tuning->keys (0 without schemes).
std::size_t scheme_of(const SweepSpec& spec, const SweepRun& run) {
  if (spec.schemes.empty()) {
    return 0;
  }
  return static_cast<std::size_t>(std::find(spec.schemes.begin(), spec.schemes.end(), run.scheme) -
                                  spec.schemes.begin());
}

/// The digits of tune combination `c` (mixed radix, the last key fastest).
std::vector<std::size_t> combination_digits(const std::vector<TuneKey>& keys, std::size_t c) {
  std::vector<std::size_t> digits(keys.size(), 0);
  for (std::size_t p = keys.size(); p-- > 0;) {
    digits[p] = c % keys[p].values.size();
    c /= keys[p].values.size();
  }
  return digits;
}

std::size_t combination_count(const std::vector<TuneKey>& keys) {
  std::size_t n = 1;
  for (const auto& k : keys) {
    n *= k.values.size();
  }
  return keys.empty() ? 0 : n;
}

/// Per tuned pointer of the sweep (spec.tuning->pointers), the combination's value, or null
/// where the scheme does not tune it.
std::vector<nlohmann::json> tuned_values(const SweepTuning& tuning,
                                         const std::vector<TuneKey>& keys,
                                         const std::vector<std::size_t>& digits) {
  std::vector<nlohmann::json> out(tuning.pointers.size());
  for (std::size_t p = 0; p < tuning.pointers.size(); ++p) {
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (keys[k].pointer == tuning.pointers[p]) {
        out[p] = keys[k].values[digits[k]];
      }
    }
  }
  return out;
}

/// The folder name of a run with its grid values and tuned values (the tuned pointers a scheme
/// does not tune left out of the name).
std::string tuned_slug(const SweepSpec& spec,
                       const SweepRun& run,
                       const std::vector<nlohmann::json>& tuned,
                       int repetition) {
  std::vector<std::string> parameters(
      spec.parameters.begin(),
      spec.parameters.begin() + static_cast<std::ptrdiff_t>(spec.grid_parameters));
  std::vector<nlohmann::json> values(
      run.values.begin(), run.values.begin() + static_cast<std::ptrdiff_t>(spec.grid_parameters));
  for (std::size_t p = 0; p < tuned.size(); ++p) {
    if (!tuned[p].is_null()) {
      parameters.push_back(spec.tuning->pointers[p]);
      values.push_back(tuned[p]);
    }
  }
  return run_slug(!spec.schemes.empty(), parameters, run.scheme, values, repetition);
}

/// A spec with the sweep's scheme and grid columns followed by the tuned pointers.
SweepSpec with_tuned_columns(const SweepSpec& spec, SweepTuning::Stage stage) {
  SweepSpec out;
  out.name = spec.name;
  out.file = spec.file;
  out.base_dir = spec.base_dir;
  out.parameters = spec.parameters;
  out.parameters.insert(
      out.parameters.end(), spec.tuning->pointers.begin(), spec.tuning->pointers.end());
  out.grid_parameters = spec.grid_parameters;
  out.schemes = spec.schemes;
  out.vary_data_seed = spec.vary_data_seed;
  out.tuning = spec.tuning;
  out.tuning->stage = stage;
  return out;
}

/// Appends the tuning runs of the point whose repetition-0 run is `point` to `out`.
void add_tuning_runs(const SweepSpec& spec, const SweepRun& point, SweepSpec& out) {
  const std::vector<TuneKey>& keys = spec.tuning->keys[scheme_of(spec, point)];
  const nlohmann::json& seed = point.config.contains("seed") ? point.config["seed"] : nullptr;
  if (!seed.is_number_unsigned()) {
    return;  // a malformed seed: the evaluation run's plan reports it
  }
  const auto s0 = seed.get<std::uint64_t>();
  const nlohmann::json data_seed = point.config.value("data_seed", nlohmann::json(s0));
  const std::uint64_t stream = derive_seed(s0, kSweepTuningStream);
  for (std::size_t c = 0; c < combination_count(keys); ++c) {
    const std::vector<std::size_t> digits = combination_digits(keys, c);
    const std::vector<nlohmann::json> tuned = tuned_values(*spec.tuning, keys, digits);
    for (int k = 0; k < spec.tuning->repetitions; ++k) {
      SweepRun run;
      run.index = out.runs.size();
      run.repetition = k;
      run.baseline = run.index;
      run.scheme = point.scheme;
      run.values = point.values;
      run.values.insert(run.values.end(), tuned.begin(), tuned.end());
      run.config = point.config;
      for (std::size_t p = 0; p < keys.size(); ++p) {
        run.config[nlohmann::json::json_pointer(keys[p].pointer)] = keys[p].values[digits[p]];
      }
      run.seed = derive_seed(stream, static_cast<std::uint64_t>(k)) & kTuneSeedMask;
      run.config["seed"] = run.seed;
      run.config["data_seed"] = data_seed;
      const bool training = run.config.contains("data") && !run.config["data"].is_null();
      if (training && !run.config.contains("divergence_bound")) {
        run.config["divergence_bound"] = kTuningDivergenceBound;
      }
      const std::string slug = tuned_slug(spec, point, tuned, k);
      run.folder = "runs/" + slug;
      run.config["name"] = fmt::format("{}/tuning/{}", spec.name, slug);
      run.cost = expected_cost(run.config);
      out.runs.push_back(std::move(run));
    }
  }
}

/// A number cell (empty when not finite).
std::string number_cell(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

/// The time and loss columns of a trace.csv text: (time, loss) per row with a loss.
std::vector<std::pair<double, double>> trace_losses(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::vector<std::pair<double, double>> rows;
  if (!std::getline(in, line)) {
    return rows;
  }
  const auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream s(text);
    std::string cell;
    while (std::getline(s, cell, ',')) {
      cells.push_back(cell);
    }
    return cells;
  };
  const std::vector<std::string> header = split(line);
  const auto column = [&](const char* name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t time = column("time");
  const std::size_t loss = column("loss");
  const auto parse = [](const std::string& cell, double& v) {
    return !cell.empty() &&
           std::from_chars(cell.data(), cell.data() + cell.size(), v).ec == std::errc();
  };
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split(line);
    double t = 0.0;
    double f = 0.0;
    if (time < cells.size() && loss < cells.size() && parse(cells[time], t) &&
        parse(cells[loss], f)) {
      rows.emplace_back(t, f);
    }
  }
  return rows;
}

/// One point's tuning: every combination's statistics and the choice.
struct PointTuning {
  std::vector<TuneCombination> combinations;
  std::size_t chosen = 0;
  std::vector<nlohmann::json> values;  // per tuned pointer of the sweep (null: not tuned)
  std::string edge;
};

/// Chooses the values of every point from the finished tuning runs (tuning spec `tuning`,
/// folder `dir`); points of untuned schemes get no values.
std::vector<PointTuning> choose_points(const SweepSpec& spec,
                                       const SweepSpec& tuning,
                                       const fs::path& dir) {
  std::vector<PointTuning> points;
  std::size_t next = 0;  // the next tuning run, in the order tuning_sweep made them
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  const auto tuning_reps = static_cast<std::size_t>(spec.tuning->repetitions);
  for (std::size_t first = 0; first < spec.runs.size(); first += reps) {
    const std::vector<TuneKey>& keys = spec.tuning->keys[scheme_of(spec, spec.runs[first])];
    PointTuning point;
    point.values.assign(spec.tuning->pointers.size(), nullptr);
    const std::size_t count = spec.runs[first].config.contains("seed") &&
                                      spec.runs[first].config["seed"].is_number_unsigned()
                                  ? combination_count(keys)
                                  : 0;
    for (std::size_t c = 0; c < count; ++c) {
      std::vector<TuneRunResult> results;
      for (std::size_t k = 0; k < tuning_reps; ++k, ++next) {
        const fs::path run_dir = dir / tuning.runs[next].folder;
        results.push_back(
            tune_run_result(nlohmann::json::parse(read_whole_file(run_dir / "summary.json")),
                            read_whole_file(run_dir / "trace.csv"),
                            spec.tuning->objective));
      }
      point.combinations.push_back(combine_tuning_runs(results));
    }
    if (count > 0) {
      point.chosen = choose_combination(point.combinations);
      const std::vector<std::size_t> digits = combination_digits(keys, point.chosen);
      point.values = tuned_values(*spec.tuning, keys, digits);
      point.edge = edge_pointers(keys, digits);
    }
    points.push_back(std::move(point));
  }
  return points;
}

/// tuning.csv: one row per point and tune combination (docs/sweeps.md "Tuning").
std::string tuning_csv(const SweepSpec& spec, const std::vector<PointTuning>& points) {
  const SweepSpec columns = with_tuned_columns(spec, SweepTuning::Stage::kTuning);
  std::vector<std::string> header;
  if (!spec.schemes.empty()) {
    header.emplace_back("scheme");
  }
  for (const auto& p : columns.parameters) {
    header.push_back(csv_field(plain_name(p)));
  }
  const bool budget = spec.tuning->objective.kind == TuneObjective::Kind::kTimeBudget;
  std::string csv = fmt::format("{},runs,reached,{},mean_final_loss,chosen,edge\n",
                                fmt::join(header, ","),
                                budget ? "mean_loss_at_budget" : "mean_time");
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const SweepRun& run = spec.runs[i * reps];
    const std::vector<TuneKey>& keys = spec.tuning->keys[scheme_of(spec, run)];
    for (std::size_t c = 0; c < points[i].combinations.size(); ++c) {
      std::vector<std::string> cells;
      if (!spec.schemes.empty()) {
        cells.push_back(csv_field(run.scheme));
      }
      for (std::size_t p = 0; p < spec.grid_parameters; ++p) {
        cells.push_back(csv_field(value_text(run.values[p])));
      }
      for (const auto& v : tuned_values(*spec.tuning, keys, combination_digits(keys, c))) {
        cells.push_back(csv_field(point_text(columns, v)));
      }
      const TuneCombination& t = points[i].combinations[c];
      const bool chosen = c == points[i].chosen;
      csv += fmt::format("{},{},{},{},{},{},{}\n",
                         fmt::join(cells, ","),
                         t.runs,
                         t.reached,
                         number_cell(t.mean_value),
                         number_cell(t.mean_final_loss),
                         chosen ? 1 : 0,
                         chosen ? csv_field(points[i].edge) : "");
    }
  }
  return csv;
}

/// The sweep's runs at the chosen values: their configs, folders (the chosen values in the
/// name) and edges.
SweepSpec evaluation_sweep(const SweepSpec& spec, const std::vector<PointTuning>& points) {
  SweepSpec out = with_tuned_columns(spec, SweepTuning::Stage::kEvaluation);
  out.repetitions = spec.repetitions;
  out.has_baseline = spec.has_baseline;
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  for (const auto& original : spec.runs) {
    const PointTuning& point = points[original.index / reps];
    SweepRun run = original;
    run.values.insert(run.values.end(), point.values.begin(), point.values.end());
    for (std::size_t p = 0; p < point.values.size(); ++p) {
      if (!point.values[p].is_null()) {
        run.config[nlohmann::json::json_pointer(spec.tuning->pointers[p])] = point.values[p];
      }
    }
    const std::string slug = tuned_slug(spec, original, point.values, original.repetition);
    run.folder = "runs/" + slug;
    run.config["name"] = fmt::format("{}/{}", spec.name, slug);
    run.edge = point.edge;
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace

SweepSpec tuning_sweep(const SweepSpec& spec) {
  SweepSpec out = with_tuned_columns(spec, SweepTuning::Stage::kTuning);
  out.name = spec.name + "/tuning";
  out.repetitions = spec.tuning->repetitions;
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  for (std::size_t first = 0; first < spec.runs.size(); first += reps) {
    add_tuning_runs(spec, spec.runs[first], out);
  }
  return out;
}

TuneRunResult tune_run_result(const nlohmann::json& summary,
                              const std::string& trace_csv,
                              const TuneObjective& objective) {
  TuneRunResult r;
  const bool ok = summary.value("status", "") == "ok";
  const auto number = [&summary](const char* key) -> std::optional<double> {
    if (!summary.contains(key) || !summary[key].is_number()) {
      return std::nullopt;
    }
    return summary[key].get<double>();
  };
  const std::optional<double> final_loss = number("final_loss");
  r.final_loss = ok && final_loss && std::isfinite(*final_loss) ? *final_loss : kInfinity;
  if (!ok) {
    return r;  // failed (diverged, non-finite) or interrupted: not reached
  }
  if (objective.kind == TuneObjective::Kind::kTargetLoss) {
    if (const auto t = number("time_to_target")) {
      r = {true, *t, r.final_loss};
    }
    return r;
  }
  const auto rows = trace_losses(trace_csv);
  if (rows.empty()) {
    return r;
  }
  if (objective.kind == TuneObjective::Kind::kTimeBudget) {
    double loss = rows.front().second;
    for (const auto& [t, f] : rows) {
      if (t <= objective.value) {
        loss = f;
      }
    }
    r.reached = std::isfinite(loss);
    r.value = loss;
    return r;
  }
  const std::optional<double> f_star = number("f_star");
  if (!f_star) {
    return r;
  }
  const double level = *f_star + objective.value * (rows.front().second - *f_star);
  if (objective.sustained) {
    // The first row of the run's last stretch at or below the level (none: the last row is
    // above it).
    for (auto row = rows.rbegin(); row != rows.rend() && row->second <= level; ++row) {
      r.reached = true;
      r.value = row->first;
    }
    return r;
  }
  for (const auto& [t, f] : rows) {
    if (f <= level) {
      r.reached = true;
      r.value = t;
      break;
    }
  }
  return r;
}

TuneCombination combine_tuning_runs(const std::vector<TuneRunResult>& runs) {
  TuneCombination c;
  c.runs = runs.size();
  double value_sum = 0.0;
  double loss_sum = 0.0;
  for (const auto& r : runs) {
    loss_sum += r.final_loss;
    if (r.reached) {
      ++c.reached;
      value_sum += r.value;
    }
  }
  c.mean_value = c.reached > 0 ? value_sum / static_cast<double>(c.reached)
                               : std::numeric_limits<double>::quiet_NaN();
  c.mean_final_loss = runs.empty() ? kInfinity : loss_sum / static_cast<double>(runs.size());
  return c;
}

std::size_t choose_combination(const std::vector<TuneCombination>& combinations) {
  std::optional<std::size_t> best;
  const auto complete = [](const TuneCombination& c) { return c.runs > 0 && c.reached == c.runs; };
  for (std::size_t i = 0; i < combinations.size(); ++i) {
    const TuneCombination& c = combinations[i];
    if (!best) {
      best = i;
      continue;
    }
    const TuneCombination& b = combinations[*best];
    bool better = false;
    if (complete(c) != complete(b)) {
      better = complete(c);
    } else if (complete(c)) {
      better = c.mean_value < b.mean_value;
    } else if (c.reached != b.reached) {
      better = c.reached > b.reached;
    } else {
      better = c.mean_final_loss < b.mean_final_loss;
    }
    if (better) {
      best = i;
    }
  }
  return best.value_or(0);
}

std::string edge_pointers(const std::vector<TuneKey>& keys,
                          const std::vector<std::size_t>& digits) {
  std::vector<std::string> edge;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::vector<nlohmann::json>& values = keys[k].values;
    if (values.size() < 2) {
      continue;
    }
    const nlohmann::json& chosen = values[digits[k]];
    const bool numbers = std::all_of(
        values.begin(), values.end(), [](const nlohmann::json& v) { return v.is_number(); });
    bool at_end = false;
    if (numbers) {
      const auto less = [](const nlohmann::json& a, const nlohmann::json& b) {
        return a.get<double>() < b.get<double>();
      };
      const double v = chosen.get<double>();
      at_end = v == std::min_element(values.begin(), values.end(), less)->get<double>() ||
               v == std::max_element(values.begin(), values.end(), less)->get<double>();
    } else {
      at_end = digits[k] == 0 || digits[k] + 1 == values.size();
    }
    if (at_end) {
      edge.push_back(keys[k].pointer);
    }
  }
  return fmt::format("{}", fmt::join(edge, " "));
}

SweepResult run_tuned_sweep(const SweepSpec& spec,
                            const std::filesystem::path& out_dir,
                            const SweepOptions& options) {
  if (options.shard.count != 1) {
    throw ConfigError(fmt::format(
        "{}:/tune: a tuned sweep runs its tuning before its evaluation; got --shard; expected the "
        "sweep without --shard (or --jobs N)",
        spec.file));
  }
  const SweepSpec tuning = tuning_sweep(spec);
  SweepResult tuned;
  if (!tuning.runs.empty()) {
    tuned = run_sweep(tuning, out_dir / "tuning", options);
    if (tuned.interrupted) {
      return tuned;
    }
  }
  const std::vector<PointTuning> points = choose_points(spec, tuning, out_dir / "tuning");
  const SweepSpec evaluation = evaluation_sweep(spec, points);
  SweepResult result = run_sweep(evaluation, out_dir, options);
  if (!result.interrupted) {
    write_file_atomically(out_dir / "tuning.csv", tuning_csv(spec, points));
  }
  result.tuning_total = tuned.total;
  result.tuning_ran = tuned.ran;
  return result;
}

}  // namespace stragglersim::experiments

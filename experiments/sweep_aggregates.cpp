// summary.csv and traces.csv of a finished sweep (docs/sweeps.md): per grid point, the mean,
// standard error and 95 % t interval of each metric over the repetitions, and the speedup
// against the baseline with a delta-method interval; every trace row in long format.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/math/distributions/students_t.hpp>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/run_diagnostics.h"
#include "experiments/sweep.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;
using Pointer = nlohmann::json::json_pointer;

/// A metric of summary.csv: its column prefix and where its value is in a run's summary.json.
struct Metric {
  std::string name;
  Pointer at;
  /// Whether summary.csv also has its speedup against the baseline (times only).
  bool speedup = false;
};

std::vector<Metric> metrics_of(const std::vector<nlohmann::json>& summaries) {
  bool has_target = false;
  bool has_optimum = false;
  for (const auto& s : summaries) {
    has_target = has_target || s.contains("time_to_target");
    has_optimum = has_optimum || s.contains("time_to_relative_suboptimality");
  }
  std::vector<Metric> out = {{"final_loss", Pointer("/final_loss")},
                             {"total_time", Pointer("/total_time"), true},
                             {"mean_iteration_time", Pointer("/mean_iteration_time"), true}};
  if (has_optimum) {
    out.push_back({"f_star", Pointer("/f_star")});
    out.push_back({"final_suboptimality", Pointer("/final_suboptimality")});
  }
  if (has_target) {
    out.push_back({"time_to_target", Pointer("/time_to_target"), true});
  }
  if (has_optimum) {
    for (const char* level : kSuboptimalityKeys) {
      out.push_back({fmt::format("time_to_{}", level),
                     Pointer(fmt::format("/time_to_relative_suboptimality/{}", level)),
                     true});
    }
  }
  return out;
}

/// A metric of a run whose status is ok; nullopt when absent, null or the run failed.
std::optional<double> value_of(const nlohmann::json& summary, const Pointer& at) {
  if (summary.value("status", "") != "ok" || !summary.contains(at) || !summary.at(at).is_number()) {
    return std::nullopt;
  }
  return summary.at(at).get<double>();
}

/// The two-sided 95 % quantile of Student's t with n − 1 degrees of freedom (n ≥ 2).
double t_quantile(std::size_t n) {
  const boost::math::students_t t(static_cast<double>(n - 1));
  return boost::math::quantile(boost::math::complement(t, 0.025));
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

/// ",n,mean,se,ci_low,ci_high" of `values` (cells empty where undefined: no value; se and the
/// interval need two).
std::string mean_cells(const std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n == 0) {
    return ",0,,,,";
  }
  if (n > 1 &&
      std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; })) {
    // A constant sample (f* of runs over one data set): its mean exactly, no spread.
    const std::string v = number(values[0]);
    return fmt::format(",{},{},0,{},{}", n, v, v, v);
  }
  double mean = 0.0;
  for (const double v : values) {
    mean += v;
  }
  mean /= static_cast<double>(n);
  if (n == 1) {
    return fmt::format(",1,{},,,", number(mean));
  }
  double ss = 0.0;
  for (const double v : values) {
    ss += (v - mean) * (v - mean);
  }
  const double se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  const double half = t_quantile(n) * se;
  return fmt::format(
      ",{},{},{},{},{}", n, number(mean), number(se), number(mean - half), number(mean + half));
}

/// ",speedup,ci_low,ci_high": the ratio of means R = ȳ_b / ȳ over the pairs (baseline run, run)
/// of one repetition where both have a positive value, and its delta-method interval
/// R ± t · sqrt((s_b² − 2 R s_b,y + R² s_y²) / (n ȳ²)) (docs/sweeps.md).
std::string speedup_cells(const std::vector<double>& mine, const std::vector<double>& theirs) {
  const std::size_t n = mine.size();
  if (n == 0) {
    return ",,,";
  }
  double y = 0.0;
  double b = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    y += mine[i];
    b += theirs[i];
  }
  y /= static_cast<double>(n);
  b /= static_cast<double>(n);
  const double ratio = b / y;
  if (n == 1) {
    return fmt::format(",{},,", number(ratio));
  }
  double syy = 0.0;
  double sbb = 0.0;
  double sby = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    syy += (mine[i] - y) * (mine[i] - y);
    sbb += (theirs[i] - b) * (theirs[i] - b);
    sby += (mine[i] - y) * (theirs[i] - b);
  }
  const double dof = static_cast<double>(n - 1);
  const double var = std::max(0.0, (sbb - 2.0 * ratio * sby + ratio * ratio * syy) / dof) /
                     (static_cast<double>(n) * y * y);
  const double half = t_quantile(n) * std::sqrt(var);
  return fmt::format(",{},{},{}", number(ratio), number(ratio - half), number(ratio + half));
}

/// The leading cells of a run's rows: its scheme (when the sweep has schemes) and grid values.
std::string point_cells(const SweepSpec& spec, const SweepRun& run) {
  std::vector<std::string> cells;
  if (!spec.schemes.empty()) {
    cells.push_back(csv_field(run.scheme));
  }
  for (const auto& v : run.values) {
    cells.push_back(csv_field(point_text(spec, v)));
  }
  return fmt::format("{}", fmt::join(cells, ","));
}

bool has_point_columns(const SweepSpec& spec) {
  return !spec.schemes.empty() || !spec.parameters.empty();
}

/// The header of the leading cells (scheme, then the grid keys as plain names).
std::string point_header(const SweepSpec& spec) {
  std::vector<std::string> names;
  if (!spec.schemes.empty()) {
    names.emplace_back("scheme");
  }
  for (const auto& p : spec.parameters) {
    names.push_back(csv_field(plain_name(p)));
  }
  return fmt::format("{}", fmt::join(names, ","));
}

/// The cells of one grid point: runs, failed, then each metric's and speedup's.
std::string point_row(const SweepSpec& spec,
                      const std::vector<nlohmann::json>& summaries,
                      const std::vector<Metric>& metrics,
                      std::size_t first) {
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  std::size_t failed = 0;
  for (std::size_t k = 0; k < reps; ++k) {
    failed += summaries[first + k].value("status", "") != "ok" ? 1 : 0;
  }
  std::string row = fmt::format("{},{}", reps, failed);
  for (const auto& m : metrics) {
    std::vector<double> values;
    for (std::size_t k = 0; k < reps; ++k) {
      if (const auto v = value_of(summaries[first + k], m.at)) {
        values.push_back(*v);
      }
    }
    row += mean_cells(values);
  }
  if (!spec.has_baseline) {
    return row;
  }
  for (const auto& m : metrics) {
    if (!m.speedup) {
      continue;
    }
    std::vector<double> mine;
    std::vector<double> theirs;
    for (std::size_t k = 0; k < reps; ++k) {
      const auto& run = spec.runs[first + k];
      const auto a = value_of(summaries[run.index], m.at);
      const auto b = value_of(summaries[run.baseline], m.at);
      if (a && b && *a > 0.0 && *b > 0.0) {
        mine.push_back(*a);
        theirs.push_back(*b);
      }
    }
    row += speedup_cells(mine, theirs);
  }
  return row;
}

/// Splits one CSV line of a trace (numbers only: no quoting) into its cells.
std::vector<std::string> split_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    cells.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') {
    cells.emplace_back();
  }
  return cells;
}

/// The trace columns traces.csv copies, in its order (empty cells where a trace has none).
constexpr std::array<const char*, 5> kTraceColumns = {
    "iteration", "time", "loss", "test_loss", "test_metric"};

/// Appends one run's rows to traces.csv.
void append_trace(const SweepSpec& spec,
                  const SweepRun& run,
                  const nlohmann::json& summary,
                  const fs::path& trace,
                  std::string& csv) {
  std::ifstream in(trace, std::ios::binary);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_line(line);
  std::array<std::optional<std::size_t>, kTraceColumns.size()> where{};
  for (std::size_t c = 0; c < kTraceColumns.size(); ++c) {
    const auto at = std::find(header.begin(), header.end(), kTraceColumns[c]);
    if (at != header.end()) {
      where[c] = static_cast<std::size_t>(at - header.begin());
    }
  }
  // NaN without f*: its cells and the gap's are then empty.
  const double f_star = summary.contains("f_star") && summary["f_star"].is_number()
                            ? summary["f_star"].get<double>()
                            : std::numeric_limits<double>::quiet_NaN();
  // The run's leading cells: scheme and grid values, repetition, seed.
  std::string lead = point_cells(spec, run);
  lead += has_point_columns(spec) ? "," : "";
  lead += fmt::format("{},{}", run.repetition, summary.value("seed", run.seed));
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split_line(line);
    const auto cell = [&](std::size_t c) {
      return where[c] && *where[c] < cells.size() ? cells[*where[c]] : std::string();
    };
    csv += lead;
    for (std::size_t c = 0; c < kTraceColumns.size(); ++c) {
      csv += ',';
      csv += cell(c);
    }
    const std::string loss = cell(2);
    double f = 0.0;
    const bool has_loss =
        !loss.empty() &&
        std::from_chars(loss.data(), loss.data() + loss.size(), f).ec == std::errc();
    csv += ',';
    csv += number(f_star);
    csv += ',';
    csv += has_loss ? number(f - f_star) : std::string();
    csv += '\n';
  }
}

}  // namespace

std::string sweep_summary_csv(const SweepSpec& spec, const std::vector<nlohmann::json>& summaries) {
  const std::vector<Metric> metrics = metrics_of(summaries);
  const bool evaluation = spec.tuning && spec.tuning->stage == SweepTuning::Stage::kEvaluation;
  std::string csv = point_header(spec);
  // A tuned sweep's evaluation names the tuned pointers chosen at an end of their grids.
  csv += evaluation ? ",edge" : "";
  csv += csv.empty() ? "runs,failed" : ",runs,failed";
  for (const auto& m : metrics) {
    csv += fmt::format(",{0}_n,{0}_mean,{0}_se,{0}_ci_low,{0}_ci_high", m.name);
  }
  if (spec.has_baseline) {
    for (const auto& m : metrics) {
      if (m.speedup) {
        csv += fmt::format(",speedup_{0},speedup_{0}_ci_low,speedup_{0}_ci_high", m.name);
      }
    }
  }
  csv += '\n';
  const auto reps = static_cast<std::size_t>(spec.repetitions);
  for (std::size_t first = 0; first < spec.runs.size(); first += reps) {
    csv += point_cells(spec, spec.runs[first]);
    if (evaluation) {
      csv += ',';
      csv += csv_field(spec.runs[first].edge);
    }
    csv += has_point_columns(spec) ? "," : "";
    csv += point_row(spec, summaries, metrics, first);
    csv += '\n';
  }
  return csv;
}

std::string sweep_traces_csv(const SweepSpec& spec,
                             const std::filesystem::path& out_dir,
                             const std::vector<nlohmann::json>& summaries) {
  std::string csv = point_header(spec);
  csv += csv.empty() ? "rep,seed" : ",rep,seed";
  for (const char* c : kTraceColumns) {
    csv += ',';
    csv += c;
  }
  csv += ",f_star,gap\n";
  for (const auto& run : spec.runs) {
    append_trace(spec, run, summaries[run.index], out_dir / run.folder / "trace.csv", csv);
  }
  return csv;
}

}  // namespace stragglersim::experiments

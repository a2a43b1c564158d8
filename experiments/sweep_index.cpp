// The index of a finished sweep (experiments/sweep.h): index.csv from the runs' summaries, with
// the speedup columns of a baseline, and the CSV cells summary.csv and traces.csv share
// (sweep_aggregates.cpp).

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/output_file.h"
#include "experiments/sweep.h"
#include "experiments/sweep_folder.h"

namespace stragglersim::experiments {

std::string plain_name(const std::string& pointer) {
  std::string key = pointer.empty() ? pointer : pointer.substr(1);
  std::replace(key.begin(), key.end(), '/', '.');
  return key;
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string point_text(const SweepSpec& spec, const nlohmann::json& v) {
  return spec.tuning && v.is_null() ? std::string() : value_text(v);
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

namespace {

std::string number_field(const nlohmann::json& v) {
  if (v.is_number_float()) {
    return fmt::format("{}", v.get<double>());
  }
  if (v.is_null()) {
    return "";
  }
  return csv_field(value_text(v));
}

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
    csv += csv_field(point_text(spec, v));
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
    summaries.push_back(
        nlohmann::json::parse(read_whole_file(out_dir / run.folder / "summary.json")));
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

}  // namespace stragglersim::experiments

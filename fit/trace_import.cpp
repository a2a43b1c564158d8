#include "fit/trace_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "fit/chrome_trace_json.h"
#include "fit/csv_fields.h"
#include "models/base/invariant.h"

namespace stragglersim::sim {

namespace {

[[noreturn]] void fail_at_line(const std::string& path,
                               std::int64_t line,
                               const std::string& message) {
  throw TraceFileError(fmt::format("{}:{}: {}", path, line, message));
}

/// Rows of a table: iteration → worker key → time (nullopt: the field was empty).
template <class Key>
using Cells = std::map<std::int64_t, std::map<Key, std::optional<double>>>;

/// The table of `cells` with workers in the order of `workers`, named by `id`.
template <class Key, class Id>
TimeTable to_table(const std::string& path,
                   const Cells<Key>& cells,
                   const std::vector<Key>& workers,
                   const Id& id) {
  TimeTable table;
  table.path = path;
  std::map<Key, std::size_t> index;
  for (const Key& k : workers) {
    index.emplace(k, table.worker_ids.size());
    table.worker_ids.push_back(id(k));
  }
  for (const auto& [iteration, row] : cells) {
    std::vector<std::optional<double>> times(workers.size());
    for (const auto& [key, seconds] : row) {
      times[index.at(key)] = seconds;
    }
    table.source_iterations.push_back(iteration);
    table.seconds.push_back(std::move(times));
  }
  return table;
}

// ---- csv ----

struct CsvColumns {
  std::size_t iteration = 0;
  std::size_t worker = 0;
  std::size_t seconds = 0;
  std::size_t needed = 0;  ///< fields a row must have
};

CsvColumns find_columns(const std::string& path,
                        std::int64_t line,
                        const std::vector<std::string>& header,
                        const CsvImportOptions& options) {
  const auto column = [&](const std::string& name, const char* option) {
    const auto at = std::find(header.begin(), header.end(), name);
    if (at == header.end()) {
      fail_at_line(path,
                   line,
                   fmt::format("header has no column '{}'; got '{}' (expected a header naming "
                               "the {} column)",
                               name,
                               fmt::join(header, ","),
                               option));
    }
    if (std::find(std::next(at), header.end(), name) != header.end()) {
      fail_at_line(path,
                   line,
                   fmt::format("header names column '{}' twice (expected one column of each "
                               "name chosen)",
                               name));
    }
    return static_cast<std::size_t>(at - header.begin());
  };
  CsvColumns c;
  c.iteration = column(options.iteration_column, "--iteration");
  c.worker = column(options.worker_column, "--worker");
  c.seconds = column(options.seconds_column, "--seconds");
  c.needed = 1 + std::max({c.iteration, c.worker, c.seconds});
  return c;
}

struct CsvRow {
  std::int64_t iteration = 0;
  std::string worker;
  std::optional<double> seconds;
};

/// The decimal exponent k of a scale that is exactly the double nearest 10^k (|k| ≤ 18), else
/// nullopt.
std::optional<int> power_of_ten(double scale) {
  constexpr int kLargest = 18;
  static const std::vector<double> powers = [] {
    std::vector<double> p;
    for (int k = -kLargest; k <= kLargest; ++k) {
      p.push_back(parse_csv_number(fmt::format("1e{}", k)).value_or(0.0));
    }
    return p;
  }();
  const auto at = std::find(powers.begin(), powers.end(), scale);
  if (at == powers.end()) {
    return std::nullopt;
  }
  return static_cast<int>(at - powers.begin()) - kLargest;
}

/// `value` (read from `text`) times `scale`. A power-of-ten scale (1e-3 for milliseconds) moves
/// the decimal point of the text and reads it once, so the time is the double nearest the decimal
/// product and is written back as the shortest decimal: 691 ms is 0.691, where 691 · 0.001 in
/// floating point is 0.6910000000000001. Any other scale multiplies.
double scaled_time(std::string_view text, double value, double scale) {
  if (scale == 1.0) {
    return value;
  }
  const std::optional<int> k = power_of_ten(scale);
  if (!k || text.find_first_not_of("+-0123456789.") != std::string_view::npos) {
    return value * scale;  // another scale, or a text with an exponent, inf or nan
  }
  return parse_csv_number(fmt::format("{}e{}", text, *k)).value_or(value * scale);
}

CsvRow parse_csv_row(const std::string& path,
                     std::int64_t line,
                     const std::vector<std::string>& fields,
                     const CsvColumns& c,
                     const CsvImportOptions& options) {
  if (fields.size() < c.needed) {
    fail_at_line(path,
                 line,
                 fmt::format("too few fields; got {} (expected at least {}, as the header names)",
                             fields.size(),
                             c.needed));
  }
  CsvRow row;
  const auto iteration = parse_csv_index(fields[c.iteration]);
  if (!iteration) {
    fail_at_line(
        path,
        line,
        fmt::format("malformed iteration in column '{}'; got '{}' (expected an integer ≥ 0)",
                    options.iteration_column,
                    fields[c.iteration]));
  }
  row.iteration = *iteration;
  row.worker = fields[c.worker];
  if (row.worker.empty()) {
    fail_at_line(path,
                 line,
                 fmt::format("empty worker id in column '{}' (expected an integer or a name)",
                             options.worker_column));
  }
  const std::string& text = fields[c.seconds];
  if (text.empty()) {
    return row;  // a missing cell
  }
  const auto value = parse_csv_number(text);
  if (!value) {
    fail_at_line(path,
                 line,
                 fmt::format("malformed time in column '{}'; got '{}' (expected a number ≥ 0, or "
                             "an empty field for a missing time)",
                             options.seconds_column,
                             text));
  }
  const double seconds = scaled_time(text, *value, options.scale);
  if (!std::isfinite(seconds) || seconds < 0.0) {
    fail_at_line(path,
                 line,
                 fmt::format("time in column '{}' must be finite and ≥ 0{}; got {} (expected a "
                             "measured time)",
                             options.seconds_column,
                             options.scale == 1.0 ? std::string()
                                                  : fmt::format(" after --scale {}", options.scale),
                             text));
  }
  row.seconds = seconds;
  return row;
}

std::string time_text(const std::optional<double>& t) {
  return t ? fmt::format("{}", *t) : std::string("an empty field");
}

/// Worker ids in sorted order: numerically when every id is an integer, else as text.
std::vector<std::string> sorted_worker_ids(const std::set<std::string>& ids) {
  std::vector<std::pair<std::int64_t, std::string>> keyed;
  bool all_integers = true;
  for (const std::string& id : ids) {
    std::int64_t value = 0;
    const char* end = id.data() + id.size();
    const auto [ptr, ec] = std::from_chars(id.data(), end, value);
    all_integers = all_integers && ec == std::errc() && ptr == end;
    keyed.emplace_back(value, id);
  }
  if (!all_integers) {
    for (auto& k : keyed) k.first = 0;
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> out;
  out.reserve(keyed.size());
  for (auto& k : keyed) out.push_back(std::move(k.second));
  return out;
}

}  // namespace

Validation CsvImportOptions::validate() const {
  for (const auto& [field, name] : {std::pair{"--iteration", &iteration_column},
                                    std::pair{"--worker", &worker_column},
                                    std::pair{"--seconds", &seconds_column}}) {
    if (name->empty()) {
      return Violation{field, "empty column name", "the name of a header column"};
    }
  }
  if (!std::isfinite(scale) || scale <= 0.0) {
    return Violation{"--scale", "out of range", "a finite number > 0"};
  }
  return std::nullopt;
}

Validation ChromeImportOptions::validate() const {
  if (events.empty()) {
    return Violation{"--events", "no event name", "one or more event names"};
  }
  for (std::size_t k = 0; k < events.size(); ++k) {
    if (events[k].empty()) {
      return Violation{
          "--events", "empty event name", "non-empty event names", Violation::Got::kElement, k};
    }
  }
  return std::nullopt;
}

std::size_t TimeTable::missing_cells() const {
  std::size_t missing = 0;
  for (const auto& row : seconds) {
    missing += static_cast<std::size_t>(std::count(row.begin(), row.end(), std::nullopt));
  }
  return missing;
}

TimeTable import_csv_times(const std::string& path, const CsvImportOptions& options) {
  options_check::require_valid(options);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail_at_line(path, 0, "cannot open file (expected a readable CSV file of measured times)");
  }
  std::string line;
  std::int64_t line_number = 0;
  std::optional<CsvColumns> columns;
  Cells<std::string> cells;
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> first_line;
  std::set<std::string> ids;
  std::size_t repeated = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (trim_field(line).empty()) continue;
    const std::vector<std::string> fields = split_csv_fields(line);
    if (!columns) {
      columns = find_columns(path, line_number, fields, options);
      continue;
    }
    CsvRow row = parse_csv_row(path, line_number, fields, *columns, options);
    auto& row_cells = cells[row.iteration];
    const auto [at, inserted] = row_cells.emplace(row.worker, row.seconds);
    if (!inserted) {
      if (at->second != row.seconds) {
        fail_at_line(path,
                     line_number,
                     fmt::format("iteration {} of worker '{}' has another time on line {}; got {} "
                                 "here and {} there (expected one time per worker per iteration; "
                                 "repeated rows with the same time are merged)",
                                 row.iteration,
                                 row.worker,
                                 first_line.at({row.iteration, row.worker}),
                                 time_text(row.seconds),
                                 time_text(at->second)));
      }
      ++repeated;
      continue;
    }
    first_line.emplace(std::pair{row.iteration, row.worker}, line_number);
    ids.insert(std::move(row.worker));
  }
  if (!columns) {
    fail_at_line(path, 1, "empty file (expected a header naming the columns)");
  }
  if (cells.empty()) {
    fail_at_line(path, line_number, "no data rows after the header (expected at least one row)");
  }
  TimeTable table =
      to_table(path, cells, sorted_worker_ids(ids), [](const std::string& id) { return id; });
  table.repeated_rows = repeated;
  return table;
}

namespace {

// ---- chrome ----

using Group = std::pair<std::int64_t, std::int64_t>;  // (pid, tid); tid 0 by data-parallel rank

constexpr std::string_view kProfilerStep = "ProfilerStep";

/// N of a PyTorch profiler step event's name "ProfilerStep#N", else nullopt.
std::optional<std::int64_t> profiler_step_of(const std::string& name) {
  if (!name.starts_with(kProfilerStep) || name.size() <= kProfilerStep.size() + 1 ||
      name[kProfilerStep.size()] != '#') {
    return std::nullopt;
  }
  const std::optional<std::int64_t> n = parse_csv_index(name.substr(kProfilerStep.size() + 1));
  return n;
}

/// One profiler step: [begin, end] in the trace's microseconds.
struct StepSpan {
  double begin = 0.0;
  double end = 0.0;
  std::int64_t step = 0;
};

/// What one file contributes: its events' sums and, one file per rank, the rank.
struct ChromeFile {
  const std::string& path;
  const ChromeImportOptions& options;
  std::vector<std::string> names;  ///< the event names selected in this file
  std::vector<StepSpan> steps;     ///< the ProfilerStep#N events, by begin
  std::optional<std::int64_t> rank;
};

/// A complete event ("ph": "X") with a string name, else nullptr for the name.
const nlohmann::json* complete_event_name(const nlohmann::json& event) {
  if (!event.is_object()) return nullptr;
  const auto ph = event.find("ph");
  const auto name = event.find("name");
  if (ph == event.end() || *ph != "X" || name == event.end() || !name->is_string()) {
    return nullptr;
  }
  return &*name;
}

/// `event["ts"]`: a finite number (microseconds), else an error of event `n`.
double timestamp_field(const std::string& path, std::size_t n, const nlohmann::json& event) {
  const auto at = event.find("ts");
  if (at == event.end() || !at->is_number() || !std::isfinite(at->get<double>())) {
    fail_at_event(path,
                  n,
                  fmt::format("'ts' is not a number; got {} (expected a timestamp in microseconds, "
                              "to find the ProfilerStep#N event enclosing it)",
                              at == event.end() ? std::string("nothing") : shown(*at)));
  }
  return at->get<double>();
}

/// The ProfilerStep#N spans of a file, sorted by begin.
std::vector<StepSpan> profiler_steps(const std::string& path, const nlohmann::json& events) {
  std::vector<StepSpan> steps;
  for (std::size_t n = 0; n < events.size(); ++n) {
    const nlohmann::json* name = complete_event_name(events[n]);
    if (name == nullptr) continue;
    if (const auto step = profiler_step_of(name->get<std::string>())) {
      const double begin = timestamp_field(path, n, events[n]);
      steps.push_back({begin, begin + duration_field(path, n, events[n]), *step});
    }
  }
  std::sort(steps.begin(), steps.end(), [](const StepSpan& a, const StepSpan& b) {
    return a.begin < b.begin;
  });
  return steps;
}

/// The step of the ProfilerStep span enclosing `ts` (the latest to begin at or before it), or
/// nullopt outside every span.
std::optional<std::int64_t> enclosing_step(const std::vector<StepSpan>& steps, double ts) {
  const auto after = std::upper_bound(
      steps.begin(), steps.end(), ts, [](double t, const StepSpan& s) { return t < s.begin; });
  if (after == steps.begin() || ts > std::prev(after)->end) {
    return std::nullopt;
  }
  return std::prev(after)->step;
}

/// The step of a selected event: its ProfilerStep#N, its args.step, or the profiler step
/// enclosing it (nullopt: outside every step, skipped).
std::optional<std::int64_t> step_of(const ChromeFile& file,
                                    std::size_t n,
                                    const nlohmann::json& event,
                                    const std::string& name) {
  if (const auto own = profiler_step_of(name)) {
    return own;
  }
  const auto args = event.find("args");
  const bool has_step = args != event.end() && args->is_object() && args->contains("step");
  if (has_step || file.steps.empty()) {
    if (args == event.end() || !args->is_object()) {
      fail_at_event(file.path, n, "no 'args' object (expected args.step, the integer step number)");
    }
    return integer_field(file.path, n, *args, "step", "args.step", "the integer step number");
  }
  return enclosing_step(file.steps, timestamp_field(file.path, n, event));
}

/// Adds event n's duration to its (step, group) when it is a selected complete event.
void add_event(const ChromeFile& file,
               std::size_t n,
               const nlohmann::json& event,
               std::map<std::int64_t, std::map<Group, double>>& sums) {
  if (!event.is_object()) {
    fail_at_event(
        file.path,
        n,
        fmt::format("not an object; got {} (expected a trace event object)", shown(event)));
  }
  const nlohmann::json* name_field = complete_event_name(event);
  if (name_field == nullptr) return;
  const std::string& name = name_field->get_ref<const std::string&>();
  const bool selected =
      std::find(file.names.begin(), file.names.end(), name) != file.names.end() ||
      (profiler_step_of(name) &&
       std::find(file.names.begin(), file.names.end(), kProfilerStep) != file.names.end());
  if (!selected) return;
  Group group{0, 0};
  if (file.rank) {
    group.first = *file.rank;
  } else {
    group.first = integer_field(file.path, n, event, "pid", "pid", "an integer process id");
    if (file.options.group_by == TraceGrouping::kRank) {
      group.second = integer_field(file.path, n, event, "tid", "tid", "an integer thread id");
    }
  }
  const double dur = duration_field(file.path, n, event);
  if (const auto step = step_of(file, n, event, name)) {
    sums[*step][group] += dur;
  }
}

/// Whether any complete event of the list has one of `names`.
bool has_event_named(const nlohmann::json& events, const std::vector<std::string>& names) {
  return std::any_of(events.begin(), events.end(), [&names](const nlohmann::json& e) {
    const nlohmann::json* name = complete_event_name(e);
    return name != nullptr &&
           std::find(names.begin(), names.end(), name->get<std::string>()) != names.end();
  });
}

/// distributedInfo.rank of a PyTorch profiler trace (an integer ≥ 0), else nullopt.
std::optional<std::int64_t> distributed_rank(const std::string& path, const nlohmann::json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const auto info = doc.find("distributedInfo");
  if (info == doc.end() || !info->is_object() || !info->contains("rank")) return std::nullopt;
  const nlohmann::json& rank = info->at("rank");
  if (!rank.is_number_integer() || rank.get<std::int64_t>() < 0) {
    fail_file(path,
              fmt::format("'distributedInfo.rank' is not an integer ≥ 0; got {} (expected the "
                          "file's rank)",
                          shown(rank)));
  }
  return rank.get<std::int64_t>();
}

/// A rank written in a file name ("rank3", "rank_3", "rank-3", any case), else nullopt.
std::optional<std::int64_t> rank_in_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t at = name.find("rank"); at != std::string::npos;
       at = name.find("rank", at + 1)) {
    std::size_t digits = at + 4;
    if (digits < name.size() && (name[digits] == '_' || name[digits] == '-')) ++digits;
    std::size_t end = digits;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])) != 0) ++end;
    if (end > digits) {
      if (const auto rank = parse_csv_index(name.substr(digits, end - digits))) return rank;
    }
  }
  return std::nullopt;
}

/// Reads file `k` of `paths` into `sums`; `per_file` gives each file a rank (one file per rank).
/// Returns the rank it used (nullopt when workers are the file's pids).
std::optional<std::int64_t> read_chrome_file(
    const std::vector<std::string>& paths,
    std::size_t k,
    const ChromeImportOptions& options,
    std::map<std::int64_t, std::map<Group, double>>& sums) {
  const std::string& path = paths[k];
  // The document is freed once the sums are taken.
  const nlohmann::json doc = parse_trace_json(path, read_maybe_gzip(path));
  const nlohmann::json& events = event_list(path, doc);
  ChromeFile file{path, options, options.events, profiler_steps(path, events), std::nullopt};
  file.rank = distributed_rank(path, doc);
  if (!file.rank && paths.size() > 1) {
    file.rank = rank_in_name(path).value_or(static_cast<std::int64_t>(k));
  }
  // A PyTorch profiler trace without the default events (the user chose none):
  // each step's time is its ProfilerStep#N event's duration.
  const bool default_events = options.events == ChromeImportOptions{}.events;
  if (default_events && !file.steps.empty() && !has_event_named(events, file.names)) {
    file.names = {std::string(kProfilerStep)};
  }
  for (std::size_t n = 0; n < events.size(); ++n) {
    add_event(file, n, events[n], sums);
  }
  return file.rank;
}

}  // namespace

TimeTable import_chrome_times(const std::string& path, const ChromeImportOptions& options) {
  return import_chrome_times(std::vector<std::string>{path}, options);
}

TimeTable import_chrome_times(const std::vector<std::string>& paths,
                              const ChromeImportOptions& options) {
  options_check::require_valid(options);
  STRAGGLERSIM_ASSERT(!paths.empty(), "a chrome import reads at least one file");
  std::map<std::int64_t, std::map<Group, double>> sums;
  std::map<std::int64_t, std::size_t> rank_file;
  bool by_file = false;
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const auto rank = read_chrome_file(paths, k, options, sums);
    if (!rank) continue;
    by_file = true;
    if (const auto [at, inserted] = rank_file.emplace(*rank, k); !inserted) {
      fail_file(paths[k],
                fmt::format("rank {} is also the rank of {} (expected one file per rank)",
                            *rank,
                            paths[at->second]));
    }
  }
  if (sums.empty()) {
    fail_file(
        paths.front(),
        fmt::format("no complete events named {} (expected events with \"ph\": \"X\" and one of "
                    "these names{})",
                    fmt::join(options.events, ", "),
                    paths.size() > 1 ? " in the files" : ""));
  }
  Cells<Group> cells;
  std::set<Group> groups;
  for (const auto& [step, row] : sums) {
    for (const auto& [group, microseconds] : row) {
      cells[step][group] = microseconds / 1e6;
      groups.insert(group);
    }
  }
  const bool by_rank = options.group_by == TraceGrouping::kRank && !by_file;
  TimeTable table = to_table(paths.front(),
                             cells,
                             std::vector<Group>(groups.begin(), groups.end()),
                             [by_rank](const Group& g) {
                               return by_rank ? fmt::format("{}/{}", g.first, g.second)
                                              : fmt::format("{}", g.first);
                             });
  table.renumbered = true;
  table.ranks_by_file = by_file;
  return table;
}

namespace {

void set_statistics(ImportedTrace& out, std::vector<double> times) {
  if (times.empty()) {
    out.median = out.mean = out.max = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  out.mean = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
  std::sort(times.begin(), times.end());
  const std::size_t half = times.size() / 2;
  out.median = times.size() % 2 == 1 ? times[half] : (times[half - 1] + times[half]) / 2.0;
  out.max = times.back();
}

}  // namespace

ImportedTrace write_imported_trace(const TimeTable& table, MissingCells missing) {
  ImportedTrace out;
  std::vector<double> times;
  out.workers = static_cast<int>(table.worker_ids.size());
  out.missing_cells = table.missing_cells();
  out.csv = "iteration,worker,seconds\n";
  for (std::size_t t = 0; t < table.seconds.size(); ++t) {
    const auto& row = table.seconds[t];
    const auto gaps = static_cast<std::size_t>(std::count(row.begin(), row.end(), std::nullopt));
    if (gaps > 0 && missing == MissingCells::kDrop) {
      ++out.dropped_iterations;
      continue;
    }
    out.censored_cells += gaps;
    const std::int64_t iteration =
        table.renumbered ? static_cast<std::int64_t>(out.iterations) : table.source_iterations[t];
    for (std::size_t w = 0; w < row.size(); ++w) {
      out.csv += row[w] ? fmt::format("{},{},{}\n", iteration, w, *row[w])
                        : fmt::format("{},{},\n", iteration, w);
      if (row[w]) times.push_back(*row[w]);
    }
    out.source_iterations.push_back(table.source_iterations[t]);
    ++out.iterations;
  }
  if (out.iterations == 0) {
    fail_file(table.path,
              fmt::format("no iteration has a time for every worker; got {} iterations, {} missing "
                          "cells (expected at least one complete iteration, or --missing censor)",
                          table.seconds.size(),
                          out.missing_cells));
  }
  set_statistics(out, std::move(times));
  return out;
}

}  // namespace stragglersim::sim

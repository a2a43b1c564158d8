#include "fit/trace_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
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
  const double seconds = *value * options.scale;
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

/// Adds event n's duration to its (step, group) when it is a selected complete event.
void add_event(const std::string& path,
               std::size_t n,
               const nlohmann::json& event,
               const ChromeImportOptions& options,
               std::map<std::int64_t, std::map<Group, double>>& sums) {
  if (!event.is_object()) {
    fail_at_event(
        path,
        n,
        fmt::format("not an object; got {} (expected a trace event object)", shown(event)));
  }
  const auto ph = event.find("ph");
  const auto name = event.find("name");
  if (ph == event.end() || *ph != "X" || name == event.end() || !name->is_string() ||
      std::find(options.events.begin(), options.events.end(), name->get<std::string>()) ==
          options.events.end()) {
    return;
  }
  Group group{integer_field(path, n, event, "pid", "pid", "an integer process id"), 0};
  if (options.group_by == TraceGrouping::kRank) {
    group.second = integer_field(path, n, event, "tid", "tid", "an integer thread id");
  }
  const double dur = duration_field(path, n, event);
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object()) {
    fail_at_event(path, n, "no 'args' object (expected args.step, the integer step number)");
  }
  const std::int64_t step =
      integer_field(path, n, *args, "step", "args.step", "the integer step number");
  sums[step][group] += dur;
}

}  // namespace

TimeTable import_chrome_times(const std::string& path, const ChromeImportOptions& options) {
  options_check::require_valid(options);
  std::map<std::int64_t, std::map<Group, double>> sums;
  {
    // The document is freed once the sums are taken.
    const nlohmann::json doc = parse_trace_json(path, read_maybe_gzip(path));
    const nlohmann::json& events = event_list(path, doc);
    for (std::size_t n = 0; n < events.size(); ++n) {
      add_event(path, n, events[n], options, sums);
    }
  }
  if (sums.empty()) {
    fail_file(
        path,
        fmt::format("no complete events named {} (expected events with \"ph\": \"X\" and one of "
                    "these names)",
                    fmt::join(options.events, ", ")));
  }
  Cells<Group> cells;
  std::set<Group> groups;
  for (const auto& [step, row] : sums) {
    for (const auto& [group, microseconds] : row) {
      cells[step][group] = microseconds / 1e6;
      groups.insert(group);
    }
  }
  const bool by_rank = options.group_by == TraceGrouping::kRank;
  TimeTable table = to_table(
      path, cells, std::vector<Group>(groups.begin(), groups.end()), [by_rank](const Group& g) {
        return by_rank ? fmt::format("{}/{}", g.first, g.second) : fmt::format("{}", g.first);
      });
  table.renumbered = true;
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

#include "fit/delay_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "fit/csv_fields.h"

namespace stragglersim::sim {

namespace {

constexpr std::string_view kExpectedHeader =
    "expected a header with columns iteration,worker,seconds or worker,seconds";

struct Row {
  std::int64_t iteration = 0;
  std::int64_t worker = 0;
  double seconds = 0.0;
  std::int64_t line = 0;
};

[[noreturn]] void fail(const std::string& path, std::int64_t line, const std::string& message) {
  throw TraceFileError(fmt::format("{}:{}: {}", path, line, message));
}

// The header's columns: iteration optional, worker and seconds required, in any order.
struct Header {
  std::optional<std::size_t> iteration_column;
  std::size_t worker_column = 0;
  std::size_t seconds_column = 0;
  std::size_t needed_fields = 0;
};

Header read_header(const std::string& path,
                   std::int64_t line_number,
                   const std::string& line,
                   const std::vector<std::string>& fields) {
  Header header;
  std::optional<std::size_t> worker;
  std::optional<std::size_t> seconds;
  for (std::size_t j = 0; j < fields.size(); ++j) {
    if (fields[j] == "iteration") header.iteration_column = j;
    if (fields[j] == "worker") worker = j;
    if (fields[j] == "seconds") seconds = j;
  }
  if (!worker || !seconds) {
    fail(path,
         line_number,
         fmt::format("header has no '{}' column; got '{}' ({})",
                     worker ? "seconds" : "worker",
                     trim_field(line),
                     kExpectedHeader));
  }
  header.worker_column = *worker;
  header.seconds_column = *seconds;
  header.needed_fields =
      1 +
      std::max({header.worker_column, header.seconds_column, header.iteration_column.value_or(0)});
  return header;
}

// A measured time: a number ≥ 0, or an empty field for a censored time (+∞, its line recorded).
double read_seconds(const std::string& path,
                    std::int64_t line_number,
                    const std::string& seconds,
                    std::vector<std::int64_t>& censored_lines) {
  if (seconds.empty()) {
    censored_lines.push_back(line_number);
    return std::numeric_limits<double>::infinity();
  }
  const auto value = parse_csv_number(seconds);
  if (!value) {
    fail(path,
         line_number,
         fmt::format("malformed seconds; got '{}' (expected a number ≥ 0, or an empty field "
                     "for a censored time)",
                     seconds));
  }
  if (!std::isfinite(*value) || *value < 0.0) {
    fail(path,
         line_number,
         fmt::format("seconds must be finite and ≥ 0; got {} (expected a measured time)", seconds));
  }
  return *value;
}

Row read_row(const std::string& path,
             std::int64_t line_number,
             const std::vector<std::string>& fields,
             const Header& header,
             std::vector<std::int64_t>& censored_lines) {
  if (fields.size() < header.needed_fields) {
    fail(path,
         line_number,
         fmt::format("too few fields; got {} (expected at least {}, as the header names)",
                     fields.size(),
                     header.needed_fields));
  }
  Row row;
  row.line = line_number;
  if (header.iteration_column) {
    const std::string& field = fields[*header.iteration_column];
    const auto iteration = parse_csv_index(field);
    if (!iteration) {
      fail(path,
           line_number,
           fmt::format("malformed iteration; got '{}' (expected an integer ≥ 0)", field));
    }
    row.iteration = *iteration;
  }
  const auto worker = parse_csv_index(fields[header.worker_column]);
  if (!worker || *worker > std::numeric_limits<int>::max() - 1) {
    fail(path,
         line_number,
         fmt::format("malformed worker; got '{}' (expected an integer ≥ 0 numbering workers "
                     "from 0)",
                     fields[header.worker_column]));
  }
  row.worker = *worker;
  row.seconds = read_seconds(path, line_number, fields[header.seconds_column], censored_lines);
  return row;
}

// Workers 0..n−1, each with at least one row; returns n.
std::size_t worker_count(const std::string& path, const std::vector<Row>& rows) {
  const Row& largest = *std::max_element(
      rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.worker < b.worker; });
  const auto n = static_cast<std::size_t>(largest.worker) + 1;
  std::vector<bool> seen(n, false);
  for (const Row& r : rows) {
    seen[static_cast<std::size_t>(r.worker)] = true;
  }
  for (std::size_t w = 0; w < n; ++w) {
    if (!seen[w]) {
      fail(path,
           largest.line,
           fmt::format("no row for worker {} below worker {} on this line (expected workers "
                       "numbered 0..n-1 without gaps)",
                       w,
                       largest.worker));
    }
  }
  return n;
}

// The times of one iteration, rows [k, end) of the rows sorted by (iteration, worker): one row
// for each worker 0..n−1.
std::vector<double> iteration_times(const std::string& path,
                                    const std::vector<Row>& sorted,
                                    std::size_t k,
                                    std::size_t end,
                                    std::size_t n) {
  std::int64_t first_line = sorted[k].line;
  for (std::size_t j = k; j < end; ++j) first_line = std::min(first_line, sorted[j].line);
  std::vector<double> times(n, 0.0);
  std::size_t expected = 0;
  for (std::size_t j = k; j < end; ++j) {
    const Row& r = sorted[j];
    if (j > k && sorted[j - 1].worker == r.worker) {
      fail(path,
           std::max(r.line, sorted[j - 1].line),
           fmt::format("duplicate row for iteration {} and worker {}, first on line {} "
                       "(expected one row per worker per iteration)",
                       r.iteration,
                       r.worker,
                       std::min(r.line, sorted[j - 1].line)));
    }
    if (static_cast<std::size_t>(r.worker) != expected) {
      break;  // a missing worker: reported below
    }
    times[expected++] = r.seconds;
  }
  if (expected != n) {
    fail(path,
         first_line,
         fmt::format("iteration {} (first row on this line) has no row for worker {} "
                     "(expected one row for each worker 0..{})",
                     sorted[k].iteration,
                     expected,
                     n - 1));
  }
  return times;
}

void group_iterations(const std::string& path,
                      const std::vector<Row>& rows,
                      std::size_t n,
                      DelayTrace& trace) {
  std::vector<Row> sorted = rows;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
    return a.iteration != b.iteration ? a.iteration < b.iteration : a.worker < b.worker;
  });
  for (std::size_t k = 0; k < sorted.size();) {
    std::size_t end = k;
    while (end < sorted.size() && sorted[end].iteration == sorted[k].iteration) ++end;
    trace.per_iteration.push_back(iteration_times(path, sorted, k, end, n));
    trace.iterations.push_back(sorted[k].iteration);
    k = end;
  }
}

}  // namespace

DelayTrace read_delay_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // The file as a whole, no line: "<path>: cannot open file ...".
    throw TraceFileError(
        fmt::format("{}: cannot open file (expected a readable CSV file of measured times)", path));
  }
  DelayTrace trace;
  trace.path = path;
  std::string line;
  std::int64_t line_number = 0;
  std::int64_t header_line = 0;
  Header header;
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    ++line_number;
    if (trim_field(line).empty()) continue;
    const std::vector<std::string> fields = split_csv_fields(line);
    if (header_line == 0) {
      header_line = line_number;
      header = read_header(path, line_number, line, fields);
      trace.has_iterations = header.iteration_column.has_value();
      continue;
    }
    rows.push_back(read_row(path, line_number, fields, header, trace.censored_lines));
  }
  if (header_line == 0) {
    fail(path, 1, fmt::format("empty file ({})", kExpectedHeader));
  }
  if (rows.empty()) {
    fail(path, header_line, "no data rows after the header (expected at least one row per worker)");
  }
  const std::size_t n = worker_count(path, rows);
  trace.workers = static_cast<int>(n);
  trace.per_worker.assign(n, {});
  for (const Row& r : rows) {
    trace.per_worker[static_cast<std::size_t>(r.worker)].push_back(r.seconds);
  }
  if (trace.has_iterations) {
    group_iterations(path, rows, n, trace);
  }
  return trace;
}

}  // namespace stragglersim::sim

#include "models/libsvm_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string_view>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/parse_number.h"
#include "models/base/stop_request.h"

namespace stragglersim::models {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/// Calls `parse` on every line of `text` ('\n'-separated; a last line without one included).
template <typename Parse>
void for_each_line(std::string_view text, Parse&& parse) {
  for (std::size_t start = 0, line = 0; start < text.size(); ++line) {
    poll_stop_request(static_cast<std::int64_t>(line));
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    parse(text.substr(start, end - start));
    start = end + 1;
  }
}

/// for_each_line over a stream read in chunks of 4 MiB (a line longer than a chunk grows it);
/// false on a read error.
template <typename Parse>
bool read_lines_in_chunks(std::istream& in, Parse&& parse) {
  constexpr std::size_t kChunk = std::size_t{1} << 22U;
  std::string buffer;
  std::vector<char> chunk(kChunk);
  while (true) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) {
      break;
    }
    buffer.append(chunk.data(), got);
    const std::size_t last = buffer.rfind('\n');
    if (last != std::string::npos) {
      for_each_line(std::string_view(buffer).substr(0, last + 1), parse);
      buffer.erase(0, last + 1);
    }
  }
  if (in.bad()) {
    return false;
  }
  if (!buffer.empty()) {
    for_each_line(buffer, parse);
  }
  return true;
}

// Rows in compressed sparse row form, whatever the requested storage: one pass, no per-row
// allocations.
struct CsrRows {
  std::vector<std::int64_t> row_starts{0};
  std::vector<std::int64_t> columns;
  std::vector<double> values;
  std::vector<double> labels;
  std::int64_t max_index = 0;
};

class Parser {
 public:
  Parser(const std::string& path, const LibsvmOptions& options) : path_(path), options_(options) {}

  /// Parses and validates one line; stores its row only when `keep` says so.
  void parse_line(std::string_view line, std::int64_t line_number) {
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::size_t pos = 0;
    const auto next_token = [&]() {
      while (pos < line.size() && is_blank(line[pos])) ++pos;
      const std::size_t start = pos;
      while (pos < line.size() && !is_blank(line[pos])) ++pos;
      return line.substr(start, pos - start);
    };
    const std::string_view label_token = next_token();
    if (label_token.empty()) return;
    double label = 0.0;
    if (!parse_finite_double(label_token, label)) {
      fail(line_number, "malformed label", label_token);
    }
    const bool stored = keep_ == nullptr || keep_->keeps(source_rows_);
    ++source_rows_;
    if (label_values_ != nullptr) {
      label_values_->add(label);
    }
    const std::size_t first = rows_.columns.size();
    std::int64_t previous = 0;
    for (std::string_view token = next_token(); !token.empty(); token = next_token()) {
      // svmlight ranking files carry a query id; it is not a feature.
      if (token.starts_with("qid:")) continue;
      const auto colon = token.find(':');
      std::int64_t index = 0;
      double value = 0.0;
      if (colon == std::string_view::npos || !parse_whole_integer(token.substr(0, colon), index) ||
          !parse_finite_double(token.substr(colon + 1), value)) {
        fail(line_number, "malformed feature", token, "; expected index:value");
      }
      check_index(line_number, index, previous, token.substr(0, colon));
      previous = index;
      rows_.columns.push_back(index - 1);
      rows_.values.push_back(value);
    }
    rows_.max_index = std::max(rows_.max_index, previous);
    if (!stored) {
      rows_.columns.resize(first);  // validated, not kept
      rows_.values.resize(first);
      return;
    }
    rows_.labels.push_back(label);
    rows_.row_starts.push_back(static_cast<std::int64_t>(rows_.columns.size()));
  }

  /// Reserves room for every row of a whole file's text: a row per line, a non-zero per ':' (an
  /// upper bound), so the arrays are never copied to grow and their pages are touched once.
  void reserve_for(std::string_view text) {
    const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    const auto colons = static_cast<std::size_t>(std::count(text.begin(), text.end(), ':'));
    rows_.row_starts.reserve(lines + 1);
    rows_.labels.reserve(lines);
    rows_.columns.reserve(colons);
    rows_.values.reserve(colons);
  }

  /// Data rows of the file (kept or not).
  [[nodiscard]] std::int64_t rows() const { return source_rows_; }
  void keep_only(RowKeep* keep, LabelValues* label_values) {
    keep_ = keep;
    label_values_ = label_values;
  }

  Dataset finish() {
    const auto m = static_cast<Eigen::Index>(rows_.labels.size());
    const Eigen::Index p = options_.features > 0 ? options_.features : rows_.max_index;
    Dataset out;
    out.labels = Eigen::Map<const Eigen::VectorXd>(rows_.labels.data(), m);
    const double bytes = 8.0 * static_cast<double>(m) * static_cast<double>(p);
    if (options_.dense && options_.max_dense_bytes > 0 &&
        bytes > static_cast<double>(options_.max_dense_bytes)) {
      throw DataError(fmt::format(
          "{}: dense storage of {} rows x {} features would need {:.3g} bytes; expected at most "
          "{} bytes (--max-memory), or \"storage\": \"sparse\"",
          path_,
          m,
          p,
          bytes,
          options_.max_dense_bytes));
    }
    // Sparse storage still holds an index per column (twice while it is assembled): a file with
    // a huge feature index needs O(p) memory even with few non-zeros.
    const double sparse_bytes =
        16.0 * static_cast<double>(rows_.columns.size()) + 16.0 * (static_cast<double>(p) + 1.0);
    if (!options_.dense && options_.max_sparse_bytes > 0 &&
        sparse_bytes > static_cast<double>(options_.max_sparse_bytes)) {
      throw DataError(fmt::format(
          "{}: sparse storage of {} rows x {} features would need {:.3g} bytes; expected at most "
          "{} bytes (--max-memory), or fewer features",
          path_,
          m,
          p,
          sparse_bytes,
          options_.max_sparse_bytes));
    }
    if (options_.dense) {
      DenseRows a = DenseRows::Zero(m, p);
      for (Eigen::Index i = 0; i < m; ++i) {
        for (auto e = rows_.row_starts[static_cast<std::size_t>(i)];
             e < rows_.row_starts[static_cast<std::size_t>(i) + 1];
             ++e) {
          a(i, rows_.columns[static_cast<std::size_t>(e)]) =
              rows_.values[static_cast<std::size_t>(e)];
        }
      }
      out.features = std::move(a);
    } else {
      out.features =
          SparseRows(Eigen::Map<const SparseRows>(m,
                                                  p,
                                                  static_cast<Eigen::Index>(rows_.values.size()),
                                                  rows_.row_starts.data(),
                                                  rows_.columns.data(),
                                                  rows_.values.data()));
    }
    return out;
  }

 private:
  // A feature index: from 1, increasing along the line, within the limit and `features`.
  void check_index(std::int64_t line_number,
                   std::int64_t index,
                   std::int64_t previous,
                   std::string_view index_token) const {
    if (index < 1) {
      fail(line_number, "feature indices start at 1", index_token);
    }
    if (index <= previous) {
      fail(line_number, "feature indices must be increasing", index_token);
    }
    if (index > kLibsvmMaxIndex) {
      fail(line_number,
           "feature index too large",
           index_token,
           fmt::format("; expected at most {}", kLibsvmMaxIndex));
    }
    if (options_.features > 0 && index > options_.features) {
      fail(line_number,
           fmt::format("feature index exceeds features = {}", options_.features),
           index_token);
    }
  }

  [[noreturn]] void fail(std::int64_t line_number,
                         std::string_view problem,
                         std::string_view token,
                         std::string_view expected = {}) const {
    throw DataError(
        fmt::format("{}:{}: {}; got '{}'{}", path_, line_number, problem, token, expected));
  }

  const std::string& path_;
  const LibsvmOptions& options_;
  CsrRows rows_;
  RowKeep* keep_ = nullptr;
  LabelValues* label_values_ = nullptr;
  std::int64_t source_rows_ = 0;
};

}  // namespace

Dataset read_libsvm(const std::string& path,
                    const LibsvmOptions& options,
                    RowKeep* keep,
                    LabelValues* label_values,
                    std::int64_t* source_rows) {
  if (options.features < 0) {
    throw DataError(
        fmt::format("{}: features must be non-negative; got '{}'", path, options.features));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  count_file_bytes(path);
  Parser parser(path, options);
  parser.keep_only(keep, label_values);
  std::int64_t line_number = 0;
  const auto parse = [&](std::string_view line) { parser.parse_line(line, ++line_number); };
  if (keep == nullptr) {
    // One bulk read and string_views into it: no stream extraction per token.
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(0, std::ios::beg);
    const std::size_t bytes = size > 0 ? static_cast<std::size_t>(size) : 0;
    // Not zeroed first (a std::string or std::vector would be): every byte is overwritten by
    // the read.
    // NOLINTNEXTLINE(modernize-avoid-c-arrays): the only uninitialised byte buffer of the library
    const auto buffer = std::make_unique_for_overwrite<char[]>(bytes);
    if (size < 0 || !in.read(buffer.get(), static_cast<std::streamsize>(bytes))) {
      throw DataError(fmt::format("{}: cannot open file", path));
    }
    const std::string_view text(buffer.get(), bytes);
    parser.reserve_for(text);
    for_each_line(text, parse);
  } else if (!read_lines_in_chunks(in, parse)) {
    // A partial load streams the file: memory is the rows kept plus one chunk.
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  if (parser.rows() == 0) {
    throw DataError(fmt::format("{}: no data rows", path));
  }
  if (source_rows != nullptr) {
    *source_rows = parser.rows();
  }
  return parser.finish();
}

}  // namespace stragglersim::models

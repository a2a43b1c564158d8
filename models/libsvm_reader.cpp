#include "models/libsvm_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <memory>
#include <string_view>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/parse_number.h"
#include "models/base/stop_request.h"
#include "models/text_pieces.h"

namespace stragglersim::models {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

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
  /// Returns the number of '\n' in the text.
  std::int64_t reserve_for(std::string_view text) {
    const auto newlines = std::count(text.begin(), text.end(), '\n');
    const auto lines = static_cast<std::size_t>(newlines) + 1;
    const auto colons = static_cast<std::size_t>(std::count(text.begin(), text.end(), ':'));
    rows_.row_starts.reserve(lines + 1);
    rows_.labels.reserve(lines);
    rows_.columns.reserve(colons);
    rows_.values.reserve(colons);
    return newlines;
  }

  /// Data rows of the file (kept or not).
  [[nodiscard]] std::int64_t rows() const { return source_rows_; }
  void keep_only(RowKeep* keep, LabelValues* label_values) {
    keep_ = keep;
    label_values_ = label_values;
  }

  [[nodiscard]] const CsrRows& parsed() const { return rows_; }

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

/// Refuses storage above the options' byte limits before it is allocated.
void check_storage(const std::string& path,
                   const LibsvmOptions& options,
                   Eigen::Index m,
                   Eigen::Index p,
                   Eigen::Index nonzeros) {
  // Sparse storage still holds an index per column (twice while it is assembled): a file with
  // a huge feature index needs O(p) memory even with few non-zeros.
  const double bytes =
      options.dense ? 8.0 * static_cast<double>(m) * static_cast<double>(p)
                    : 16.0 * static_cast<double>(nonzeros) + 16.0 * (static_cast<double>(p) + 1.0);
  const std::uint64_t limit = options.dense ? options.max_dense_bytes : options.max_sparse_bytes;
  if (limit > 0 && bytes > static_cast<double>(limit)) {
    throw DataError(fmt::format(
        "{}: {} storage of {} rows x {} features would need {:.3g} bytes; expected at most {} "
        "bytes (--max-memory), or {}",
        path,
        options.dense ? "dense" : "sparse",
        m,
        p,
        bytes,
        limit,
        options.dense ? "\"storage\": \"sparse\"" : "fewer features"));
  }
}

DenseRows dense_rows(const std::vector<const CsrRows*>& pieces, Eigen::Index m, Eigen::Index p) {
  DenseRows a = DenseRows::Zero(m, p);
  Eigen::Index row = 0;
  for (const CsrRows* piece : pieces) {
    for (std::size_t i = 0; i < piece->labels.size(); ++i, ++row) {
      for (auto e = piece->row_starts[i]; e < piece->row_starts[i + 1]; ++e) {
        a(row, piece->columns[static_cast<std::size_t>(e)]) =
            piece->values[static_cast<std::size_t>(e)];
      }
    }
  }
  return a;
}

SparseRows sparse_rows(const std::vector<const CsrRows*>& pieces,
                       Eigen::Index m,
                       Eigen::Index p,
                       Eigen::Index nonzeros) {
  SparseRows a(m, p);
  a.resizeNonZeros(nonzeros);
  auto* starts = a.outerIndexPtr();
  Eigen::Index row = 0;
  std::int64_t first = 0;  // the piece's first non-zero in `a`
  for (const CsrRows* piece : pieces) {
    std::copy(piece->columns.begin(), piece->columns.end(), a.innerIndexPtr() + first);
    std::copy(piece->values.begin(), piece->values.end(), a.valuePtr() + first);
    for (std::size_t i = 0; i < piece->labels.size(); ++i) {
      starts[row++] = first + piece->row_starts[i];
    }
    first += static_cast<std::int64_t>(piece->columns.size());
  }
  starts[m] = first;
  return a;
}

/// The rows of `pieces` (consecutive parts of one file, in order) as one data set.
Dataset assemble(const std::string& path,
                 const LibsvmOptions& options,
                 const std::vector<const CsrRows*>& pieces) {
  Eigen::Index m = 0;
  Eigen::Index nonzeros = 0;
  std::int64_t max_index = 0;
  for (const CsrRows* piece : pieces) {
    m += static_cast<Eigen::Index>(piece->labels.size());
    nonzeros += static_cast<Eigen::Index>(piece->columns.size());
    max_index = std::max(max_index, piece->max_index);
  }
  const Eigen::Index p = options.features > 0 ? options.features : max_index;
  check_storage(path, options, m, p, nonzeros);
  Dataset out;
  out.labels.resize(m);
  Eigen::Index row = 0;
  for (const CsrRows* piece : pieces) {
    std::copy(piece->labels.begin(), piece->labels.end(), out.labels.data() + row);
    row += static_cast<Eigen::Index>(piece->labels.size());
  }
  if (options.dense) {
    out.features = dense_rows(pieces, m, p);
  } else {
    out.features = sparse_rows(pieces, m, p, nonzeros);
  }
  return out;
}

/// Parses a whole file's text in consecutive pieces of options.piece_bytes or more, one thread
/// each, into one parser per piece (in file order: `assemble` makes the data set). The data set is
/// the same bytes for any number of pieces, and an error is the one a parse in one piece would
/// raise first: each line is validated on its own, so the first piece with an error holds the
/// file's first bad line.
std::vector<std::unique_ptr<Parser>> parse_text(const std::string& path,
                                                const LibsvmOptions& options,
                                                std::string_view text,
                                                LabelValues* label_values,
                                                std::int64_t* source_rows) {
  const std::vector<std::size_t> bounds =
      internal::piece_bounds(text, options.piece_bytes, options.max_pieces);
  const std::size_t pieces = bounds.size() - 1;
  std::vector<std::unique_ptr<Parser>> parsers;
  parsers.reserve(pieces);
  for (std::size_t k = 0; k < pieces; ++k) {
    parsers.push_back(std::make_unique<Parser>(path, options));
  }
  std::vector<std::int64_t> first_line(pieces + 1, 0);
  std::vector<std::exception_ptr> errors(pieces);
  internal::for_each_piece(pieces, [&](std::size_t k) {
    first_line[k + 1] = parsers[k]->reserve_for(text.substr(bounds[k], bounds[k + 1] - bounds[k]));
  });
  for (std::size_t k = 0; k < pieces; ++k) first_line[k + 1] += first_line[k];
  internal::for_each_piece(pieces, [&](std::size_t k) {
    try {
      std::int64_t line_number = first_line[k];
      internal::for_each_line(
          text.substr(bounds[k], bounds[k + 1] - bounds[k]),
          [&](std::string_view line) { parsers[k]->parse_line(line, ++line_number); });
    } catch (...) {
      errors[k] = std::current_exception();
    }
  });
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  std::int64_t rows = 0;
  for (const auto& parser : parsers) {
    rows += parser->rows();
    if (label_values != nullptr) {
      for (const double label : parser->parsed().labels) label_values->add(label);
    }
  }
  if (rows == 0) {
    throw DataError(fmt::format("{}: no data rows", path));
  }
  if (source_rows != nullptr) {
    *source_rows = rows;
  }
  return parsers;
}

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
  if (keep == nullptr) {
    // One bulk read and string_views into it: no stream extraction per token.
    internal::WholeText text(in, path);
    const auto parsers = parse_text(path, options, text.view(), label_values, source_rows);
    text.reset();  // parsed: the text's memory is freed before the rows are assembled
    std::vector<const CsrRows*> pieces;
    pieces.reserve(parsers.size());
    for (const auto& parser : parsers) pieces.push_back(&parser->parsed());
    return assemble(path, options, pieces);
  }
  // A partial load streams the file: memory is the rows kept plus one chunk.
  Parser parser(path, options);
  parser.keep_only(keep, label_values);
  std::int64_t line_number = 0;
  if (!internal::read_lines_in_chunks(
          in, [&](std::string_view line) { parser.parse_line(line, ++line_number); })) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  if (parser.rows() == 0) {
    throw DataError(fmt::format("{}: no data rows", path));
  }
  if (source_rows != nullptr) {
    *source_rows = parser.rows();
  }
  return assemble(path, options, {&parser.parsed()});
}

}  // namespace stragglersim::models

#include "models/csv_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/parse_number.h"
#include "models/base/stop_request.h"
#include "models/text_pieces.h"

namespace stragglersim::models {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

class Reader {
 public:
  Reader(const std::string& path, const CsvOptions& options) : path_(path), options_(options) {}

  /// A reader of later lines of the same file: the column names, count and label of `layout`,
  /// no rows.
  [[nodiscard]] std::unique_ptr<Reader> continuation() const {
    auto out = std::make_unique<Reader>(path_, options_);
    out->names_ = names_;
    out->columns_ = columns_;
    out->label_ = label_;
    return out;
  }

  /// True once the column count and the label are known (after the header or the first row).
  [[nodiscard]] bool laid_out() const { return columns_ > 0; }

  /// Room for a row per line of `text`; returns the number of '\n' in it.
  std::int64_t reserve_for(std::string_view text) {
    const auto newlines = std::count(text.begin(), text.end(), '\n');
    const auto lines = static_cast<std::size_t>(newlines) + 1;
    labels_.reserve(lines);
    values_.reserve(lines * static_cast<std::size_t>(columns_ - 1));
    return newlines;
  }

  /// Parses one line: the header if it is still due, else a data row; blank lines are skipped.
  void parse_line(std::string_view line, std::int64_t line_number) {
    if (trim(line).empty()) return;
    split(line, line_number);
    if (options_.header && names_.empty()) {
      header(line_number);
    } else {
      row(line_number);
    }
  }

  // Splits one line into fields (quotes removed) in `fields_`: views into `line`, which must
  // outlive them, or into `unquoted_` for quoted fields. No allocation per field.
  void split(std::string_view line, std::int64_t line_number) {
    spans_.clear();
    std::size_t quoted = 0;
    std::size_t pos = 0;
    while (true) {
      while (pos < line.size() && is_space(line[pos])) ++pos;
      if (pos < line.size() && line[pos] == '"') {
        if (unquoted_.size() == quoted) unquoted_.emplace_back();
        std::string& field = unquoted_[quoted];
        field.clear();
        const std::size_t start = pos;
        ++pos;
        bool closed = false;
        while (pos < line.size()) {
          if (line[pos] == '"') {
            if (pos + 1 < line.size() && line[pos + 1] == '"') {
              field += '"';
              pos += 2;
              continue;
            }
            closed = true;
            ++pos;
            break;
          }
          field += line[pos++];
        }
        if (!closed) {
          fail(line_number, "unterminated quoted field", line.substr(start));
        }
        while (pos < line.size() && line[pos] != ',') ++pos;
        spans_.push_back({true, quoted++, 0});
      } else {
        const std::size_t start = pos;
        while (pos < line.size() && line[pos] != ',') ++pos;
        spans_.push_back({false, start, pos - start});
      }
      if (pos >= line.size()) break;
      ++pos;  // the comma
    }
    // `unquoted_` no longer grows: views into it stay valid until the next split.
    fields_.clear();
    for (const Span& span : spans_) {
      fields_.push_back(span.quoted ? std::string_view(unquoted_[span.first])
                                    : trim(line.substr(span.first, span.size)));
    }
  }

  void header(std::int64_t line_number) {
    names_.assign(fields_.begin(), fields_.end());
    if (options_.refuse_numeric_header && all_numbers(names_)) {
      std::string line;
      for (const auto& n : names_) line += line.empty() ? n : "," + n;
      throw DataError(fmt::format(
          "{}:{}: the first line is all numbers, a data row rather than column names; got '{}'; "
          "expected \"header\": false in data for a file without a header line (\"header\": "
          "true reads the line as column names)",
          path_,
          line_number,
          line));
    }
    resolve_label(line_number);
  }

  void row(std::int64_t line_number) {
    if (columns_ == 0) {
      // No header: the first data row fixes the column count.
      columns_ = static_cast<std::int64_t>(fields_.size());
      resolve_label(line_number);
    }
    if (static_cast<std::int64_t>(fields_.size()) != columns_) {
      throw DataError(fmt::format("{}:{}: wrong number of fields; got {}; expected {}",
                                  path_,
                                  line_number,
                                  fields_.size(),
                                  columns_));
    }
    poll_stop_request(source_rows_);
    const bool stored = keep_ == nullptr || keep_->keeps(source_rows_);
    ++source_rows_;
    for (std::int64_t j = 0; j < columns_; ++j) {
      const std::string_view field = fields_[static_cast<std::size_t>(j)];
      double value = 0.0;
      if (!parse_finite_double(field, value)) {
        throw DataError(fmt::format("{}:{}: malformed number in column {}; got '{}'",
                                    path_,
                                    line_number,
                                    column_name(j),
                                    field));
      }
      if (j == label_ && label_values_ != nullptr) {
        label_values_->add(value);
      }
      if (!stored) {
        continue;  // validated, not kept
      }
      if (j == label_) {
        labels_.push_back(value);
      } else {
        values_.push_back(value);
      }
    }
  }

  void keep_only(RowKeep* keep, LabelValues* label_values) {
    keep_ = keep;
    label_values_ = label_values;
  }
  /// Data rows of the file (kept or not).
  [[nodiscard]] std::int64_t rows() const { return source_rows_; }

  [[nodiscard]] const std::vector<double>& values() const { return values_; }
  [[nodiscard]] const std::vector<double>& labels() const { return labels_; }
  [[nodiscard]] std::int64_t columns() const { return columns_; }
  /// The fields of the last line split, as strings.
  [[nodiscard]] std::vector<std::string> fields() const { return {fields_.begin(), fields_.end()}; }

 private:
  void resolve_label(std::int64_t line_number) {
    columns_ = static_cast<std::int64_t>(fields_.size());
    if (columns_ < 2) {
      throw DataError(fmt::format("{}:{}: need a label and at least one feature; got {} column",
                                  path_,
                                  line_number,
                                  columns_));
    }
    if (const auto* name = std::get_if<std::string>(&options_.label_column)) {
      STRAGGLERSIM_ASSERT(options_.header, "a label column name needs a header");
      for (std::int64_t j = 0; j < columns_; ++j) {
        if (names_[static_cast<std::size_t>(j)] == *name) {
          label_ = j;
          return;
        }
      }
      std::string valid;
      for (const auto& n : names_) valid += valid.empty() ? n : ", " + n;
      throw DataError(fmt::format(
          "{}:{}: no column named '{}'; expected one of: {}", path_, line_number, *name, valid));
    }
    const std::int64_t index = std::get<std::int64_t>(options_.label_column);
    if (index < -columns_ || index >= columns_) {
      throw DataError(
          fmt::format("{}:{}: label column out of range; got {}; expected an index in [{}, {}]",
                      path_,
                      line_number,
                      index,
                      -columns_,
                      columns_ - 1));
    }
    label_ = index < 0 ? columns_ + index : index;
  }

  [[nodiscard]] std::string column_name(std::int64_t j) const {
    return names_.empty() ? std::to_string(j)
                          : fmt::format("'{}'", names_[static_cast<std::size_t>(j)]);
  }

  [[noreturn]] void fail(std::int64_t line_number,
                         std::string_view problem,
                         std::string_view token) const {
    throw DataError(fmt::format("{}:{}: {}; got '{}'", path_, line_number, problem, token));
  }

  const std::string& path_;
  const CsvOptions& options_;
  /// Where split() found a field: quoted (unquoted_[first]) or line.substr(first, size).
  struct Span {
    bool quoted;
    std::size_t first;
    std::size_t size;
  };
  std::vector<Span> spans_;
  std::vector<std::string> unquoted_;
  std::vector<std::string_view> fields_;
  std::vector<std::string> names_;
  std::int64_t columns_ = 0;
  std::int64_t label_ = 0;
  std::vector<double> values_;
  std::vector<double> labels_;
  RowKeep* keep_ = nullptr;
  LabelValues* label_values_ = nullptr;
  std::int64_t source_rows_ = 0;
};

/// The rows of `readers` (consecutive parts of one file, in order) as one data set.
Dataset assemble(const std::string& path,
                 const std::vector<const Reader*>& readers,
                 std::int64_t source_rows) {
  if (source_rows == 0) {
    throw DataError(fmt::format("{}: no data rows", path));
  }
  Eigen::Index m = 0;
  for (const Reader* reader : readers) m += static_cast<Eigen::Index>(reader->labels().size());
  const auto p = static_cast<Eigen::Index>(readers.front()->columns() - 1);
  DenseRows features(m, p);
  Eigen::VectorXd labels(m);
  double* value_at = features.data();
  double* label_at = labels.data();
  for (const Reader* reader : readers) {
    value_at = std::copy(reader->values().begin(), reader->values().end(), value_at);
    label_at = std::copy(reader->labels().begin(), reader->labels().end(), label_at);
  }
  Dataset out;
  out.features = std::move(features);
  out.labels = std::move(labels);
  return out;
}

/// Parses a whole file's text: its lines up to the header (or the first data row, which fixes
/// the columns) on this thread, then the rest in consecutive pieces of options.piece_bytes or
/// more, one thread and one reader each. Each line is validated on its own, so the first piece
/// with an error holds the file's first bad line: the error and the data set are those of a
/// parse in one piece.
std::vector<std::unique_ptr<Reader>> parse_text(const std::string& path,
                                                const CsvOptions& options,
                                                std::string_view text) {
  std::vector<std::unique_ptr<Reader>> readers;
  std::int64_t line_number = 0;
  readers.push_back(std::make_unique<Reader>(path, options));
  std::size_t start = 0;
  while (start < text.size() && !readers.front()->laid_out()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    readers.front()->parse_line(text.substr(start, end - start), ++line_number);
    start = end + 1;
  }
  if (start >= text.size()) {
    return readers;
  }
  const std::string_view rest = text.substr(start);
  const std::vector<std::size_t> bounds =
      internal::piece_bounds(rest, options.piece_bytes, options.max_pieces);
  const std::size_t pieces = bounds.size() - 1;
  for (std::size_t k = 0; k < pieces; ++k) {
    readers.push_back(readers.front()->continuation());
  }
  const auto piece = [&](std::size_t k) {
    return rest.substr(bounds[k], bounds[k + 1] - bounds[k]);
  };
  std::vector<std::int64_t> first_line(pieces + 1, line_number);
  internal::for_each_piece(
      pieces, [&](std::size_t k) { first_line[k + 1] = readers[k + 1]->reserve_for(piece(k)); });
  for (std::size_t k = 0; k < pieces; ++k) first_line[k + 1] += first_line[k];
  std::vector<std::exception_ptr> errors(pieces);
  internal::for_each_piece(pieces, [&](std::size_t k) {
    try {
      std::int64_t at = first_line[k];
      internal::for_each_line(
          piece(k), [&](std::string_view line) { readers[k + 1]->parse_line(line, ++at); });
    } catch (...) {
      errors[k] = std::current_exception();
    }
  });
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return readers;
}

}  // namespace

bool all_numbers(const std::vector<std::string>& fields) {
  return !fields.empty() && std::all_of(fields.begin(), fields.end(), [](const std::string& f) {
    double value = 0.0;
    return parse_finite_double(f, value);
  });
}

std::vector<std::string> csv_first_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) continue;
    const CsvOptions options;
    Reader reader(path, options);
    try {
      reader.split(line, 1);
    } catch (const DataError&) {
      return {};  // an unterminated quote: the reader says so when the file is read
    }
    return reader.fields();
  }
  return {};
}

Dataset read_csv(const std::string& path,
                 const CsvOptions& options,
                 RowKeep* keep,
                 LabelValues* label_values,
                 std::int64_t* source_rows) {
  STRAGGLERSIM_ASSERT(options.header || std::holds_alternative<std::int64_t>(options.label_column),
                      "a label column name needs a header");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  count_file_bytes(path);
  std::vector<std::unique_ptr<Reader>> readers;
  if (keep == nullptr) {
    const internal::WholeText text(in, path);
    readers = parse_text(path, options, text.view());
  } else {
    // A partial load streams the file: memory is the rows kept plus one chunk.
    readers.push_back(std::make_unique<Reader>(path, options));
    readers.front()->keep_only(keep, label_values);
    std::int64_t line_number = 0;
    if (!internal::read_lines_in_chunks(
            in, [&](std::string_view line) { readers.front()->parse_line(line, ++line_number); })) {
      throw DataError(fmt::format("{}: cannot open file", path));
    }
  }
  std::int64_t rows = 0;
  std::vector<const Reader*> parts;
  for (const auto& reader : readers) {
    rows += reader->rows();
    parts.push_back(reader.get());
    if (keep == nullptr && label_values != nullptr) {
      for (const double label : reader->labels()) label_values->add(label);
    }
  }
  if (source_rows != nullptr) {
    *source_rows = rows;
  }
  return assemble(path, parts, rows);
}

}  // namespace stragglersim::models

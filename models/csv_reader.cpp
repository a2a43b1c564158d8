#include "models/csv_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <string_view>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/parse_number.h"
#include "models/base/stop_request.h"

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

  [[nodiscard]] Dataset finish() const {
    const auto m = static_cast<Eigen::Index>(labels_.size());
    if (source_rows_ == 0) {
      throw DataError(fmt::format("{}: no data rows", path_));
    }
    const auto p = static_cast<Eigen::Index>(columns_ - 1);
    Dataset out;
    out.features = DenseRows(Eigen::Map<const DenseRows>(values_.data(), m, p));
    out.labels = Eigen::Map<const Eigen::VectorXd>(labels_.data(), m);
    return out;
  }

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

}  // namespace

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
  Reader reader(path, options);
  reader.keep_only(keep, label_values);
  std::string line;
  std::int64_t line_number = 0;
  bool header_pending = options.header;
  while (std::getline(in, line)) {
    ++line_number;
    if (trim(line).empty()) continue;
    reader.split(line, line_number);
    if (header_pending) {
      reader.header(line_number);
      header_pending = false;
    } else {
      reader.row(line_number);
    }
  }
  if (source_rows != nullptr) {
    *source_rows = reader.rows();
  }
  return reader.finish();
}

}  // namespace stragglersim::models

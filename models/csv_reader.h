#pragma once
// Comma-separated numeric tables: one row per line, one column holds the label, every other
// column is a feature. Fields may be quoted ("…", with "" for a quote); spaces around fields are
// ignored; blank lines are skipped; CRLF line ends are accepted. Storage is dense.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "models/dataset.h"

namespace stragglersim::models {

struct CsvOptions {
  /// The first non-blank line holds column names.
  bool header = true;
  /// The label column: a header name, or a 0-based index (negative counts from the end, so the
  /// default −1 is the last column).
  std::variant<std::string, std::int64_t> label_column = std::int64_t{-1};
  /// A file read whole (no `keep`) is parsed, after its header (or first row), in consecutive
  /// pieces of at least this many bytes, one thread each. The data set, and the error of a
  /// malformed file, are the same for any number of pieces.
  std::size_t piece_bytes = std::size_t{1} << 20U;
  /// At most this many pieces; 0: the machine's hardware threads, at most 8.
  unsigned max_pieces = 0;
  /// With `header`: a first line whose every field is a number is refused (DataError) instead
  /// of being taken as column names, which would drop a headerless file's first row. Set when
  /// the user did not say whether the file has a header.
  bool refuse_numeric_header = false;
};

/// Reads a CSV file. Throws DataError naming the file and line:
///   "<path>: cannot open file", "<path>: no data rows",
///   "<path>:<line>: wrong number of fields; got <n>; expected <k>",
///   "<path>:<line>: malformed number in column '<name>'; got '<field>'" (column <index> without
///   a header), "<path>:<line>: unterminated quoted field; got '<field>'",
///   "<path>:<line>: no column named '<name>'; expected one of: <names>",
///   "<path>:<line>: label column out of range; got <i>; expected an index in [-k, k-1]",
///   "<path>:<line>: need a label and at least one feature; got 1 column",
///   "<path>:<line>: the first line is all numbers, a data row rather than column names; got
///   '<line>'; expected "header": false ..." (refuse_numeric_header).
/// Illegal: a column name with header = false.
/// With `keep`, every line is still parsed and validated but only the kept source rows (data
/// rows, 0-based) are stored: memory is proportional to the rows kept. `label_values` receives
/// the distinct labels of every row, `source_rows` the number of data rows.
Dataset read_csv(const std::string& path,
                 const CsvOptions& options = {},
                 RowKeep* keep = nullptr,
                 LabelValues* label_values = nullptr,
                 std::int64_t* source_rows = nullptr);

/// The fields of the first non-blank line of a CSV file (trimmed, quotes removed); empty when
/// the file cannot be opened or has no such line.
std::vector<std::string> csv_first_line(const std::string& path);

/// True when every field of `fields` (at least one) is a finite number: a data row, not a header.
bool all_numbers(const std::vector<std::string>& fields);

}  // namespace stragglersim::models

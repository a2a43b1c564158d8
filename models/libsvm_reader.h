#pragma once
// LIBSVM / svmlight text format: one row per line, "label index:value index:value ...",
// indices 1-based and increasing, '#' starts a comment, blank lines are skipped.

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/dataset.h"

namespace stragglersim::models {

struct LibsvmOptions {
  /// Number of features; 0 means the largest index seen in the file.
  Eigen::Index features = 0;
  /// Store dense (m × p) rather than sparse.
  bool dense = true;
  /// Dense storage needing more than this many bytes (8·m·p) is refused before it is
  /// allocated (DataError); 0: no limit.
  std::uint64_t max_dense_bytes = 0;
  /// Refuse sparse storage above this many bytes (non-zeros and the per-column index); 0: no
  /// limit (the config layer's partition-gradient estimate bounds p for runs).
  std::uint64_t max_sparse_bytes = 0;
  /// A file read whole (no `keep`) is parsed in consecutive pieces of at least this many bytes,
  /// one thread each. The data set, and the error of a malformed file, are the same for any
  /// number of pieces.
  std::size_t piece_bytes = std::size_t{16} << 20U;
  /// At most this many pieces; 0: the machine's hardware threads, at most 8.
  unsigned max_pieces = 0;
};

/// Largest feature index a file may use (the same bound as a config's "features").
inline constexpr std::int64_t kLibsvmMaxIndex = 100'000'000;

/// Reads a LIBSVM file. Labels are kept as written (±1, {1,2}, real values).
/// Throws DataError "<path>:<line>: <problem>; got '<token>'" for a malformed line (an index
/// above kLibsvmMaxIndex included), "<path>: cannot open file" when the file cannot be read, and
/// "<path>: dense storage ... would need ..." above `max_dense_bytes`.
/// With `keep`, every line is still parsed and validated (the same errors, the same feature
/// count) but only the kept source rows (data lines, 0-based) are stored, and the file is
/// streamed in chunks: memory is proportional to the rows kept. `label_values` receives the
/// distinct labels of every row, `source_rows` the number of data rows.
Dataset read_libsvm(const std::string& path,
                    const LibsvmOptions& options = {},
                    RowKeep* keep = nullptr,
                    LabelValues* label_values = nullptr,
                    std::int64_t* source_rows = nullptr);

}  // namespace stragglersim::models

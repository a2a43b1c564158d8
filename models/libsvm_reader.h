#pragma once
// LIBSVM / svmlight text format: one row per line, "label index:value index:value ...",
// indices 1-based and increasing, '#' starts a comment, blank lines are skipped.

#include <Eigen/Core>
#include <string>

#include "models/dataset.h"

namespace stragglersim::models {

struct LibsvmOptions {
  /// Number of features; 0 means the largest index seen in the file.
  Eigen::Index features = 0;
  /// Store dense (m × p) rather than sparse.
  bool dense = true;
};

/// Reads a LIBSVM file. Labels are kept as written (±1, {1,2}, real values).
/// Throws DataError "<path>:<line>: <problem>; got '<token>'" for a malformed line, and
/// "<path>: cannot open file" when the file cannot be read.
Dataset read_libsvm(const std::string& path, const LibsvmOptions& options = {});

}  // namespace stragglersim::models

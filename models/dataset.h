#pragma once
// Training data: m rows (a_i, b_i), a_i in R^p, stored row-major, dense or sparse.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace stragglersim::models {

using DenseRows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using SparseRows = Eigen::SparseMatrix<double, Eigen::RowMajor, std::int64_t>;

/// A data file or generator could not produce a data set (malformed line, missing file, ...).
/// The message names the file and line; experiments/ turns it into a user error (exit 2).
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Half-open row range [begin, end).
struct RowRange {
  Eigen::Index begin = 0;
  Eigen::Index end = 0;
  [[nodiscard]] Eigen::Index size() const { return end - begin; }
};

/// Partition j of k over m rows: rows floor(j·m/k) … floor((j+1)·m/k) − 1 (docs/model.md).
/// Illegal: k < 1, j outside [0, k).
RowRange partition_rows(Eigen::Index m, int k, int j);

/// m × p features (dense or sparse, row-major) and m labels. Labels are ±1 for logistic
/// regression and real for least squares; the loss model does not check them.
struct Dataset {
  std::variant<DenseRows, SparseRows> features;
  Eigen::VectorXd labels;

  Dataset() = default;
  Dataset(DenseRows a, Eigen::VectorXd b) : features(std::move(a)), labels(std::move(b)) {}
  Dataset(SparseRows a, Eigen::VectorXd b) : labels(std::move(b)) {
    features.emplace<SparseRows>().swap(a);
  }
  Dataset(const Dataset&) = default;
  Dataset& operator=(const Dataset&) = default;
  // Eigen 3.4's SparseMatrix has no move constructor: a defaulted move would copy every
  // non-zero (a paper-size covtype set twice over). Moves swap the sparse storage instead.
  Dataset(Dataset&& other) noexcept : labels(std::move(other.labels)) { take_features(other); }
  Dataset& operator=(Dataset&& other) noexcept {
    labels = std::move(other.labels);
    take_features(other);
    return *this;
  }
  ~Dataset() = default;

  [[nodiscard]] Eigen::Index rows() const;
  [[nodiscard]] Eigen::Index dimension() const;
  [[nodiscard]] bool is_sparse() const { return std::holds_alternative<SparseRows>(features); }
  /// Stored entries: m·p for dense, the non-zeros for sparse.
  [[nodiscard]] std::int64_t stored_entries() const;
  /// Bytes a pass over `range` reads: the rows' stored values (sparse: with their column indices
  /// and row offsets) and their labels.
  [[nodiscard]] std::int64_t stored_bytes(RowRange range) const;
  /// stored_bytes of every row.
  [[nodiscard]] std::int64_t stored_bytes() const { return stored_bytes(RowRange{0, rows()}); }
  /// Rows in `order`, in that order (used to shuffle before a train/test split).
  [[nodiscard]] Dataset select_rows(const std::vector<Eigen::Index>& order) const;

 private:
  void take_features(Dataset& other) noexcept {
    if (auto* sparse = std::get_if<SparseRows>(&other.features)) {
      features.emplace<SparseRows>().swap(*sparse);
    } else {
      features = std::move(other.features);
    }
  }
};

/// Distinct label values of a source, at most three kept (enough for the binary-label check):
/// what a partial load reports of the rows it did not keep.
struct LabelValues {
  std::vector<double> values;  ///< ascending
  /// Over every label added (multiclass checks): the extremes, and a label that is not a
  /// non-negative integer (the first added), if any.
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  std::optional<double> not_class_index;
  void add(double label);
};

/// Source rows a partial load keeps: ascending, distinct indices into the rows of the source
/// in file or generation order. Every row is still read or drawn in order (validated and
/// consuming the same random draws), so the rows kept are bitwise those of a full load.
struct RowKeep {
  std::vector<Eigen::Index> rows;
  /// Whether source row `i` is kept; `i` must not decrease between calls (a cursor).
  [[nodiscard]] bool keeps(Eigen::Index i);

 private:
  std::size_t next_ = 0;
};

/// The training rows of a full load that a partial load holds for partitions `held` (ascending)
/// of k over m training rows: `rows` lists the training row indices in the order the partial
/// data set stores them, −1 for a padding row (features and label zero, in no partition);
/// `ranges[h]` is partition held[h]'s rows in the partial data set. Each partition starts at
/// a local row ≡ its global row (mod kRowAlignment), padding before it as needed, so dense
/// rows have the same memory alignment as in the full data set and every vectorised dot
/// product (and so every partition gradient) is bitwise the full load's.
struct HeldRows {
  std::vector<int> held;
  std::vector<RowRange> ranges;
  std::vector<Eigen::Index> rows;
};
inline constexpr Eigen::Index kRowAlignment = 8;
/// Illegal: k < 1, a partition outside [0, k), `held` not ascending.
HeldRows held_rows(Eigen::Index m, int k, const std::vector<int>& held);

/// The source rows of training rows 0 … m_train − 1 under split_train_test(m_all rows,
/// test_fraction, seed): training row t is source row order[t] of the same seeded permutation
/// (the identity when test_fraction is 0). Returns order[0 … m_train).
std::vector<Eigen::Index> training_source_rows(Eigen::Index m_all,
                                               double test_fraction,
                                               std::uint64_t seed);
/// Training rows of a split of m_all rows: m_all − round(test_fraction·m_all).
Eigen::Index training_row_count(Eigen::Index m_all, double test_fraction);

/// The partial training set `held` of a source loaded with `keep` (rows in ascending source
/// order, `keep.rows` the source rows) where training row t is source row `source_of[t]`:
/// the rows of `held.rows` in that order, zero rows for padding.
Dataset arrange_held_rows(const Dataset& kept,
                          const std::vector<Eigen::Index>& keep_rows,
                          const std::vector<Eigen::Index>& source_of,
                          const HeldRows& held);

/// Splits off the last round(test_fraction·m) rows of a seeded permutation as the test set.
/// Illegal: test_fraction outside [0, 1).
std::pair<Dataset, Dataset> split_train_test(const Dataset& all,
                                             double test_fraction,
                                             std::uint64_t seed);

}  // namespace stragglersim::models

#pragma once
// Training data: m rows (a_i, b_i), a_i in R^p, stored row-major, dense or sparse.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
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

/// Splits off the last round(test_fraction·m) rows of a seeded permutation as the test set.
/// Illegal: test_fraction outside [0, 1).
std::pair<Dataset, Dataset> split_train_test(const Dataset& all,
                                             double test_fraction,
                                             std::uint64_t seed);

}  // namespace stragglersim::models

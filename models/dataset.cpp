#include "models/dataset.h"

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <numeric>
#include <utility>

#include "models/base/invariant.h"

namespace stragglersim::models {

RowRange partition_rows(Eigen::Index m, int k, int j) {
  STRAGGLERSIM_ASSERT(k >= 1, "partition count must be at least 1");
  STRAGGLERSIM_ASSERT(j >= 0 && j < k, "partition index out of range");
  STRAGGLERSIM_ASSERT(m >= 0, "row count must be non-negative");
  // Integer arithmetic gives the exact floor of docs/model.md (no rounding of j·m/k in doubles).
  return RowRange{j * m / k, (static_cast<Eigen::Index>(j) + 1) * m / k};
}

Eigen::Index Dataset::rows() const {
  return std::visit([](const auto& a) { return a.rows(); }, features);
}

Eigen::Index Dataset::dimension() const {
  return std::visit([](const auto& a) { return a.cols(); }, features);
}

std::int64_t Dataset::stored_entries() const {
  if (const auto* dense = std::get_if<DenseRows>(&features)) {
    return dense->size();
  }
  return std::get<SparseRows>(features).nonZeros();
}

std::int64_t Dataset::stored_bytes(RowRange range) const {
  constexpr auto kValue = static_cast<std::int64_t>(sizeof(double));
  const std::int64_t labels_bytes = range.size() * kValue;
  if (const auto* dense = std::get_if<DenseRows>(&features)) {
    return range.size() * dense->cols() * kValue + labels_bytes;
  }
  const auto& sparse = std::get<SparseRows>(features);
  constexpr auto kIndex = static_cast<std::int64_t>(sizeof(SparseRows::StorageIndex));
  std::int64_t stored = 0;
  if (sparse.isCompressed()) {
    stored = sparse.outerIndexPtr()[range.end] - sparse.outerIndexPtr()[range.begin];
  } else {
    for (Eigen::Index r = range.begin; r < range.end; ++r) {
      stored += sparse.innerNonZeroPtr()[r];
    }
  }
  return stored * (kValue + kIndex) + (range.size() + 1) * kIndex + labels_bytes;
}

Dataset Dataset::select_rows(const std::vector<Eigen::Index>& order) const {
  const Eigen::Index m = rows();
  const Eigen::Index n = static_cast<Eigen::Index>(order.size());
  for (const Eigen::Index i : order) {
    STRAGGLERSIM_ASSERT(i >= 0 && i < m, "select_rows: row index out of range");
  }
  Dataset out;
  out.labels.resize(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    out.labels[r] = labels[order[static_cast<std::size_t>(r)]];
  }
  if (const auto* dense = std::get_if<DenseRows>(&features)) {
    DenseRows selected(n, dense->cols());
    for (Eigen::Index r = 0; r < n; ++r) {
      selected.row(r) = dense->row(order[static_cast<std::size_t>(r)]);
    }
    out.features = std::move(selected);
    return out;
  }
  const auto& sparse = std::get<SparseRows>(features);
  // The compressed arrays written in place inside `out` (Eigen 3.4's SparseMatrix has no move
  // constructor, and insert() would fill an uncompressed copy first).
  SparseRows& selected = out.features.emplace<SparseRows>(n, sparse.cols());
  const std::int64_t* from_outer = sparse.outerIndexPtr();
  const std::int64_t* from_nnz = sparse.innerNonZeroPtr();  // null when compressed
  const auto row_start = [&](Eigen::Index i) { return from_outer[i]; };
  const auto row_size = [&](Eigen::Index i) {
    return from_nnz != nullptr ? from_nnz[i] : from_outer[i + 1] - from_outer[i];
  };
  std::int64_t total = 0;
  for (const Eigen::Index i : order) {
    total += row_size(i);
  }
  selected.resizeNonZeros(total);
  std::int64_t* outer = selected.outerIndexPtr();
  std::int64_t* inner = selected.innerIndexPtr();
  double* values = selected.valuePtr();
  std::int64_t at = 0;
  for (Eigen::Index r = 0; r < n; ++r) {
    const Eigen::Index i = order[static_cast<std::size_t>(r)];
    outer[r] = at;
    const std::int64_t start = row_start(i);
    const std::int64_t size = row_size(i);
    std::copy_n(sparse.innerIndexPtr() + start, size, inner + at);
    std::copy_n(sparse.valuePtr() + start, size, values + at);
    at += size;
  }
  outer[n] = at;
  return out;
}

namespace {

/// The seeded permutation of the train/test split (Fisher–Yates on mt19937_64).
std::vector<Eigen::Index> split_permutation(Eigen::Index m, std::uint64_t seed) {
  std::vector<Eigen::Index> order(static_cast<std::size_t>(m));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  boost::random::mt19937_64 engine(seed);
  for (Eigen::Index i = m - 1; i > 0; --i) {
    boost::random::uniform_int_distribution<Eigen::Index> pick(0, i);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(pick(engine))]);
  }
  return order;
}

}  // namespace

void LabelValues::add(double label) {
  constexpr std::size_t kKept = 3;
  lowest = std::min(lowest, label);
  highest = std::max(highest, label);
  if (!not_class_index && !(label >= 0.0 && label == std::floor(label))) {
    not_class_index = label;
  }
  const auto at = std::lower_bound(values.begin(), values.end(), label);
  if ((at != values.end() && *at == label) || values.size() >= kKept) {
    return;
  }
  values.insert(at, label);
}

bool RowKeep::keeps(Eigen::Index i) {
  while (next_ < rows.size() && rows[next_] < i) {
    ++next_;
  }
  return next_ < rows.size() && rows[next_] == i;
}

HeldRows held_rows(Eigen::Index m, int k, const std::vector<int>& held) {
  HeldRows out;
  out.held = held;
  for (std::size_t h = 0; h < held.size(); ++h) {
    STRAGGLERSIM_ASSERT(h == 0 || held[h] > held[h - 1], "held partitions must be ascending");
    const RowRange global = partition_rows(m, k, held[h]);
    auto local = static_cast<Eigen::Index>(out.rows.size());
    while ((local - global.begin) % kRowAlignment != 0) {
      out.rows.push_back(-1);
      ++local;
    }
    for (Eigen::Index t = global.begin; t < global.end; ++t) {
      out.rows.push_back(t);
    }
    out.ranges.push_back(RowRange{local, local + global.size()});
  }
  if (out.rows.empty()) {
    out.rows.push_back(-1);  // an objective holds at least one row
  }
  return out;
}

Eigen::Index training_row_count(Eigen::Index m_all, double test_fraction) {
  return m_all -
         static_cast<Eigen::Index>(std::llround(test_fraction * static_cast<double>(m_all)));
}

std::vector<Eigen::Index> training_source_rows(Eigen::Index m_all,
                                               double test_fraction,
                                               std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(test_fraction >= 0.0 && test_fraction < 1.0,
                      "test_fraction must be in [0, 1)");
  const Eigen::Index m_train = training_row_count(m_all, test_fraction);
  if (test_fraction == 0.0) {
    std::vector<Eigen::Index> identity(static_cast<std::size_t>(m_all));
    std::iota(identity.begin(), identity.end(), Eigen::Index{0});
    return identity;
  }
  std::vector<Eigen::Index> order = split_permutation(m_all, seed);
  order.resize(static_cast<std::size_t>(m_train));
  return order;
}

Dataset arrange_held_rows(const Dataset& kept,
                          const std::vector<Eigen::Index>& keep_rows,
                          const std::vector<Eigen::Index>& source_of,
                          const HeldRows& held) {
  const auto n = static_cast<Eigen::Index>(held.rows.size());
  // Position in `kept` of each held row, −1 for padding.
  std::vector<Eigen::Index> at(held.rows.size(), -1);
  for (std::size_t r = 0; r < held.rows.size(); ++r) {
    if (held.rows[r] < 0) {
      continue;
    }
    const Eigen::Index source = source_of[static_cast<std::size_t>(held.rows[r])];
    const auto it = std::lower_bound(keep_rows.begin(), keep_rows.end(), source);
    STRAGGLERSIM_ASSERT(it != keep_rows.end() && *it == source, "a held row was not kept");
    at[r] = it - keep_rows.begin();
  }
  Dataset out;
  out.labels = Eigen::VectorXd::Zero(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (at[static_cast<std::size_t>(r)] >= 0) {
      out.labels[r] = kept.labels[at[static_cast<std::size_t>(r)]];
    }
  }
  if (const auto* dense = std::get_if<DenseRows>(&kept.features)) {
    DenseRows rows = DenseRows::Zero(n, dense->cols());
    for (Eigen::Index r = 0; r < n; ++r) {
      if (at[static_cast<std::size_t>(r)] >= 0) {
        rows.row(r) = dense->row(at[static_cast<std::size_t>(r)]);
      }
    }
    out.features = std::move(rows);
    return out;
  }
  const auto& sparse = std::get<SparseRows>(kept.features);
  SparseRows& rows = out.features.emplace<SparseRows>(n, sparse.cols());
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1> per_row = decltype(per_row)::Zero(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (at[static_cast<std::size_t>(r)] >= 0) {
      per_row[r] = sparse.outerIndexPtr()[at[static_cast<std::size_t>(r)] + 1] -
                   sparse.outerIndexPtr()[at[static_cast<std::size_t>(r)]];
    }
  }
  rows.reserve(per_row);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (at[static_cast<std::size_t>(r)] < 0) {
      continue;
    }
    for (SparseRows::InnerIterator it(sparse, at[static_cast<std::size_t>(r)]); it; ++it) {
      rows.insert(r, it.index()) = it.value();
    }
  }
  rows.makeCompressed();
  return out;
}

std::pair<Dataset, Dataset> split_train_test(const Dataset& all,
                                             double test_fraction,
                                             std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(test_fraction >= 0.0 && test_fraction < 1.0,
                      "test_fraction must be in [0, 1)");
  const Eigen::Index m = all.rows();
  const std::vector<Eigen::Index> order = split_permutation(m, seed);
  const auto test_rows = m - training_row_count(m, test_fraction);
  const auto split = order.begin() + (m - test_rows);
  return {all.select_rows(std::vector<Eigen::Index>(order.begin(), split)),
          all.select_rows(std::vector<Eigen::Index>(split, order.end()))};
}

}  // namespace stragglersim::models

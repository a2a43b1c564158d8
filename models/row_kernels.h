#pragma once
// Internal to models/: the fused per-row pass shared by the loss models and the Gram operator.
// For rows i in a range it computes z_i = a_iᵀx, asks a kernel for (ℓ_i, w_i) and adds w_i·a_i to
// an accumulator while a_i is still in L1 cache, so the data is streamed from memory once.
// Kernels are templates (inlined), never virtual calls per row.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/dataset.h"
#include "models/dense_kernels.h"
#include "models/sparse_kernels.h"

namespace stragglersim::models::internal {

/// Margins handed to a loss kernel at once, a template argument of the passes below.
template <Eigen::Index kRows>
using Block = Eigen::Array<double, kRows, 1>;

/// Dense rows per block. Four rows (6.4 KB at p = 200) are read from memory by their dot
/// products and re-read from L1 by one fused update sum += Σ_r w_r·a_r, which loads and stores
/// `sum` once per four rows. Measured on p = 200: blocks of 4 beat 1 (per-row axpy), 8, 16 and
/// Eigen's gemv kernels.
inline constexpr Eigen::Index kDenseBlock = 4;
/// Sparse rows per block. Measured on the covtype-like shape (88 non-zeros per row), one pass at
/// one thread: 4 rows 800 ms per 11 passes, 16 rows 700 ms, 32 rows 670–700 ms (fewer block
/// overheads, and exp and log get independent packet chains to overlap). The sparse update is
/// row by row, so the block size changes no byte of the result.
inline constexpr Eigen::Index kSparseBlock = 32;

/// Loads the labels of rows [begin, begin + n) into a block; padding rows get z = b = 0, for which
/// every kernel must return a zero weight (their losses are ignored).
template <class Rows>
void load_labels(const Eigen::VectorXd& labels, Eigen::Index begin, Eigen::Index n, Rows& b) {
  b.setZero();
  for (Eigen::Index r = 0; r < n; ++r) b[r] = labels[begin + r];
}

/// The default sink of the passes below: sees nothing.
struct NoSink {
  template <class Rows>
  void operator()(Eigen::Index /*begin*/,
                  Eigen::Index /*n*/,
                  const Rows& /*z*/,
                  const Rows& /*loss*/) const {}
};

/// Σ_i ℓ_i over `rows`, adding Σ_i w_i·a_i to `sum` when kWithSum. `kernel(z, b, loss, w)` gets the
/// margins and labels of a block of rows (a Block<k>) and writes the losses ℓ_i and weights w_i.
/// `sink(begin, n, z, loss)` then sees the block's first row, its row count and its margins and
/// losses (rows past n are padding).
template <bool kWithSum = true, class Kernel, class Sink = NoSink>
double fused_pass(const DenseRows& a,
                  const Eigen::VectorXd& labels,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel,
                  Sink sink = {}) {
  const Eigen::Index p = a.cols();
  double total = 0.0;
  using Rows = Block<kDenseBlock>;
  static_assert(kDenseBlock == 4, "the dense kernels are written out for four rows");
  Rows z;
  Rows b;
  Rows loss;
  Rows w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kDenseBlock) {
    const Eigen::Index n = std::min(kDenseBlock, rows.end - begin);
    const double* first = a.data() + begin * p;
    z.setZero();
    for (Eigen::Index r = 0; r < n; ++r) {
      z[r] = dense_dot(first + r * p, p, x.data());
    }
    load_labels(labels, begin, n, b);
    kernel(static_cast<const Rows&>(z), static_cast<const Rows&>(b), loss, w);
    sink(begin, n, static_cast<const Rows&>(z), static_cast<const Rows&>(loss));
    for (Eigen::Index r = 0; r < n; ++r) total += loss[r];
    if constexpr (kWithSum) {
      if (n == kDenseBlock) {
        dense_update4(first, p, w.data(), sum.data());
      } else {
        for (Eigen::Index r = 0; r < n; ++r) {
          dense_update(first + r * p, p, w[r], sum.data());
        }
      }
    }
  }
  return total;
}

template <bool kWithSum = true, class Kernel, class Sink = NoSink>
double fused_pass(const SparseRows& a,
                  const Eigen::VectorXd& labels,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel,
                  Sink sink = {}) {
  double total = 0.0;
  using Rows = Block<kSparseBlock>;
  Rows z;
  Rows b;
  Rows loss;
  Rows w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kSparseBlock) {
    const Eigen::Index n = std::min(kSparseBlock, rows.end - begin);
    z.setZero();
    for (Eigen::Index r = 0; r < n; ++r) {
      double dot = 0.0;
      for (SparseRows::InnerIterator it(a, begin + r); it; ++it) {
        dot += it.value() * x[it.index()];
      }
      z[r] = dot;
    }
    load_labels(labels, begin, n, b);
    kernel(static_cast<const Rows&>(z), static_cast<const Rows&>(b), loss, w);
    sink(begin, n, static_cast<const Rows&>(z), static_cast<const Rows&>(loss));
    for (Eigen::Index r = 0; r < n; ++r) total += loss[r];
    if constexpr (kWithSum) {
      for (Eigen::Index r = 0; r < n; ++r) {
        const double weight = w[r];
        if (weight == 0.0) continue;
        for (SparseRows::InnerIterator it(a, begin + r); it; ++it) {
          sum[it.index()] += weight * it.value();
        }
      }
    }
  }
  return total;
}

template <bool kWithSum = true, class Kernel, class Sink = NoSink>
double fused_pass(const Dataset& data,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel,
                  Sink sink = {}) {
  count_data_bytes(data.stored_bytes(rows));
  return std::visit(
      [&](const auto& a) {
        return fused_pass<kWithSum>(a, data.labels, rows, x, sum, kernel, sink);
      },
      data.features);
}

// The multi-vector pass: fused_pass for the S columns of x (p × S) in one pass over the rows
// (sparse rows: one per group of up to 16 columns). Column s of `sums` gets the same bytes as
// fused_pass(…, x.col(s), sums.col(s), kernel) and totals[s] its return value: every column sees
// the same operations in the same order, only the loops across columns and rows are nested
// differently. Dense rows: for each block of four rows the S margins are computed while the rows
// are in cache, the kernel runs on each column's block as fused_pass runs it, then the S updates.

/// Doubles per 64-byte cache line.
inline constexpr Eigen::Index kLineDoubles = 8;

/// Dense rows: the kernels of dense_kernels.h that read a block of four rows once for all columns.
template <class Kernel>
void fused_pass_many(const DenseRows& a,
                     const Eigen::VectorXd& labels,
                     RowRange rows,
                     const Eigen::MatrixXd& x,
                     Eigen::Ref<Eigen::MatrixXd> sums,
                     double* totals,
                     Kernel kernel) {
  const Eigen::Index p = a.cols();
  const Eigen::Index columns = x.cols();
  using Rows = Block<kDenseBlock>;
  static_assert(kDenseBlock == 4, "the dense kernels are written out for four rows");
  Eigen::Array<double, kDenseBlock, Eigen::Dynamic> z(kDenseBlock, columns);
  Eigen::Array<double, kDenseBlock, Eigen::Dynamic> w(kDenseBlock, columns);
  Rows column_z;
  Rows b;
  Rows loss;
  Rows column_w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kDenseBlock) {
    const Eigen::Index n = std::min(kDenseBlock, rows.end - begin);
    const double* first = a.data() + begin * p;
    // The next block's rows are requested now, a line at a time, so that they arrive while
    // this block is computed (its S dot products and updates outlast one block's memory read).
    if (begin + 3 * kDenseBlock <= rows.end) {
      const double* next = first + 2 * kDenseBlock * p;
      for (Eigen::Index at = 0; at < kDenseBlock * p; at += kLineDoubles) {
        __builtin_prefetch(next + at, 0, 2);
      }
    }
    if (n == kDenseBlock) {
      dense_dot4_many(first, p, x.data(), x.outerStride(), columns, z.data());
    } else {
      z.setZero();
      for (Eigen::Index s = 0; s < columns; ++s) {
        for (Eigen::Index r = 0; r < n; ++r) {
          z(r, s) = dense_dot(first + r * p, p, x.col(s).data());
        }
      }
    }
    load_labels(labels, begin, n, b);
    for (Eigen::Index s = 0; s < columns; ++s) {
      column_z = z.col(s);
      kernel(static_cast<const Rows&>(column_z), static_cast<const Rows&>(b), loss, column_w);
      for (Eigen::Index r = 0; r < n; ++r) totals[s] += loss[r];
      w.col(s) = column_w;
    }
    if (n == kDenseBlock) {
      dense_update4_many(first, p, w.data(), columns, sums.data(), sums.outerStride());
    } else {
      for (Eigen::Index s = 0; s < columns; ++s) {
        for (Eigen::Index r = 0; r < n; ++r) {
          dense_update(first + r * p, p, w(r, s), sums.col(s).data());
        }
      }
    }
  }
}

/// Sparse rows: the columns of x in groups of at most kSparseWidest (models/sparse_kernels.h),
/// each group one walk of the rows with x and the sums interleaved (entry j of column s at
/// j·width + s, the width padded to a multiple of four; 64-byte aligned, so that an entry spans
/// one or two cache lines). A walk takes the rows in chunks: the group's margins of every row of
/// the chunk, the kernel on each column's blocks of 32 rows, then the updates of every row (the
/// chunk's non-zeros read again, from cache). Each column's margins and updates are fused_pass's
/// operations in fused_pass's order: each row's non-zeros in order, the rows in order.

/// Rows the sparse multi-vector pass takes at once (a multiple of kSparseBlock): their margins,
/// kernels and updates in turn, the updates re-reading the chunk's non-zeros from cache.
inline constexpr Eigen::Index kSparseChunk = 256;

/// Columns [first, first + count) of x, interleaved `width` wide (count rounded up to a multiple
/// of kSparseWidthStep).
struct ColumnGroup {
  Eigen::Index first = 0;
  Eigen::Index count = 0;
  Eigen::Index width = 0;
};

/// The sparse pass's walks of the rows for S columns: the fewest groups of at most kSparseWidest.
inline Eigen::Index sparse_groups(Eigen::Index columns) {
  return (columns + kSparseWidest - 1) / kSparseWidest;
}

/// Group g of S columns: the groups as even as can be (S = 20: two of ten).
inline ColumnGroup sparse_group(Eigen::Index columns, Eigen::Index g) {
  const Eigen::Index groups = sparse_groups(columns);
  const Eigen::Index base = columns / groups;
  const Eigen::Index extra = columns % groups;
  ColumnGroup group;
  group.first = g * base + std::min(g, extra);
  group.count = base + (g < extra ? 1 : 0);
  group.width = (group.count + kSparseWidthStep - 1) / kSparseWidthStep * kSparseWidthStep;
  return group;
}

/// n doubles, the first at the start of a 64-byte cache line: zero, or (`zero` false) left as
/// the allocator gives them, for a buffer whose entries are written before they are read.
// NOLINTBEGIN(*-avoid-c-arrays): an array that may be left uninitialised
class LineAlignedDoubles {
 public:
  explicit LineAlignedDoubles(Eigen::Index n, bool zero = true)
      : storage_(zero ? std::make_unique<double[]>(static_cast<std::size_t>(n + kLineDoubles))
                      : std::make_unique_for_overwrite<double[]>(
                            static_cast<std::size_t>(n + kLineDoubles))) {
    void* start = storage_.get();
    std::size_t space = static_cast<std::size_t>(n + kLineDoubles) * sizeof(double);
    data_ = static_cast<double*>(std::align(
        kLineDoubles * sizeof(double), static_cast<std::size_t>(n) * sizeof(double), start, space));
  }
  [[nodiscard]] double* data() { return data_; }

 private:
  std::unique_ptr<double[]> storage_;
  double* data_ = nullptr;
};
// NOLINTEND(*-avoid-c-arrays)

inline SparseArrays sparse_arrays(const SparseRows& a) {
  SparseArrays out;
  out.outer = a.outerIndexPtr();
  out.counts = a.innerNonZeroPtr();
  out.index = a.innerIndexPtr();
  out.values = a.valuePtr();
  return out;
}

/// The group's columns of m (p × S) interleaved into `out` (p × width), padding lanes zero.
inline void interleave(const Eigen::Ref<const Eigen::MatrixXd>& m, ColumnGroup group, double* out) {
  Eigen::Map<Eigen::MatrixXd>(out, group.width, m.rows()).topRows(group.count) =
      m.middleCols(group.first, group.count).transpose();
}

/// The features rows [rows.begin, rows.end) have a non-zero in, ascending: the only entries of
/// the interleaved x and sums a walk of those rows reads or adds to. At 241 915 features and 45
/// non-zeros per row (the Amazon-like data), a partition of 700 rows touches an eighth of them.
/// Where the rows have at least p non-zeros, or touch more than half of the features, all p are
/// listed (0 … p − 1; a superset changes no byte: an untouched entry stays +0): a column of the
/// sums is then written whole, without zeroing it first, and the covtype-like partitions (88
/// non-zeros per row, 15 509 features) skip the scan.
inline std::vector<Eigen::Index> touched_features(const SparseArrays& a,
                                                  RowRange rows,
                                                  Eigen::Index p) {
  std::int64_t non_zeros = 0;
  for (Eigen::Index r = rows.begin; r < rows.end && non_zeros < p; ++r) {
    non_zeros += a.end(r) - a.outer[r];
  }
  std::vector<Eigen::Index> features;
  if (non_zeros >= p) {
    features.resize(static_cast<std::size_t>(p));
    std::iota(features.begin(), features.end(), Eigen::Index{0});
    return features;
  }
  std::vector<unsigned char> seen(static_cast<std::size_t>(p), 0);
  for (Eigen::Index r = rows.begin; r < rows.end; ++r) {
    for (std::int64_t k = a.outer[r]; k < a.end(r); ++k) {
      seen[static_cast<std::size_t>(a.index[k])] = 1;
    }
  }
  const auto count = static_cast<Eigen::Index>(std::count(seen.begin(), seen.end(), 1));
  features.reserve(static_cast<std::size_t>(2 * count > p ? p : count));
  for (Eigen::Index f = 0; f < p; ++f) {
    if (2 * count > p || seen[static_cast<std::size_t>(f)] != 0) {
      features.push_back(f);
    }
  }
  return features;
}

/// interleave at `features` only (the other entries of `out` are left as they are).
inline void interleave_at(const Eigen::Ref<const Eigen::MatrixXd>& m,
                          ColumnGroup group,
                          const std::vector<Eigen::Index>& features,
                          double* out) {
  for (const Eigen::Index f : features) {
    double* entry = out + f * group.width;
    for (Eigen::Index s = 0; s < group.count; ++s) {
      entry[s] = m(f, group.first + s);
    }
    std::fill(entry + group.count, entry + group.width, 0.0);
  }
}

/// Features handled at once when interleaved sums go back to columns: their lines stay in L1
/// while each column takes its values.
inline constexpr std::size_t kDeinterleaveBlock = 256;

/// Zeroes the interleaved sums (p entries `group.width` wide) at `features`.
inline void zero_at(double* sums,
                    ColumnGroup group,
                    const std::vector<Eigen::Index>& features,
                    Eigen::Index p) {
  if (std::cmp_equal(features.size(), p)) {
    std::fill(sums, sums + p * group.width, 0.0);
    return;
  }
  for (const Eigen::Index f : features) {
    std::fill(sums + f * group.width, sums + (f + 1) * group.width, 0.0);
  }
}

/// For each column s of the group: `column(s)[f] = sums[f·width + s] / divisor` at `features`
/// (of p).
template <class Column>
void deinterleave_at(const double* sums,
                     ColumnGroup group,
                     const std::vector<Eigen::Index>& features,
                     Eigen::Index p,
                     double divisor,
                     const Column& column) {
  if (std::cmp_equal(features.size(), p)) {
    for (Eigen::Index s = 0; s < group.count; ++s) {
      double* out = column(s);
      for (Eigen::Index f = 0; f < p; ++f) {
        out[f] = sums[f * group.width + s] / divisor;
      }
    }
    return;
  }
  for (std::size_t at = 0; at < features.size(); at += kDeinterleaveBlock) {
    const std::size_t end = std::min(features.size(), at + kDeinterleaveBlock);
    for (Eigen::Index s = 0; s < group.count; ++s) {
      double* out = column(s);
      for (std::size_t i = at; i < end; ++i) {
        out[features[i]] = sums[features[i] * group.width + s] / divisor;
      }
    }
  }
}

/// Rows [at, at + n) of a chunk's margins (z, `width` wide, from the chunk's first row) as a
/// column-major block for the kernels, the padding rows and columns zero.
inline void gather_block(const double* z,
                         Eigen::Index at,
                         Eigen::Index n,
                         ColumnGroup group,
                         Eigen::Array<double, kSparseBlock, kSparseWidest>& block) {
  block.setZero();
  for (Eigen::Index r = 0; r < n; ++r) {
    for (Eigen::Index s = 0; s < group.count; ++s) {
      block(r, s) = z[(at + r) * group.width + s];
    }
  }
}

/// The kernel on each column's blocks of 32 rows of a chunk (its first row `begin`, n rows),
/// as fused_pass runs it: the losses added to totals[s] row by row, the weights into w (row r
/// at r·width; the padding lanes stay as they are) and has_zero[r] set where one is zero.
template <class Kernel>
void sparse_chunk_weights(const Eigen::VectorXd& labels,
                          Eigen::Index begin,
                          Eigen::Index n,
                          ColumnGroup group,
                          const double* z,
                          double* w,
                          unsigned char* has_zero,
                          double* totals,
                          Kernel& kernel) {
  using Rows = Block<kSparseBlock>;
  Eigen::Array<double, kSparseBlock, kSparseWidest> block_z;
  Eigen::Array<double, kSparseBlock, kSparseWidest> block_w;
  Rows column_z;
  Rows b;
  Rows loss;
  Rows column_w;
  for (Eigen::Index at = 0; at < n; at += kSparseBlock) {
    const Eigen::Index rows = std::min(kSparseBlock, n - at);
    gather_block(z, at, rows, group, block_z);
    load_labels(labels, begin + at, rows, b);
    for (Eigen::Index s = 0; s < group.count; ++s) {
      column_z = block_z.col(s);
      kernel(static_cast<const Rows&>(column_z), static_cast<const Rows&>(b), loss, column_w);
      for (Eigen::Index r = 0; r < rows; ++r) totals[s] += loss[r];
      block_w.col(s) = column_w;
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
      bool zero = false;
      for (Eigen::Index s = 0; s < group.count; ++s) {
        w[(at + r) * group.width + s] = block_w(r, s);
        zero = zero || block_w(r, s) == 0.0;
      }
      has_zero[at + r] = zero ? 1 : 0;
    }
  }
}

/// One walk of `rows` in chunks of `chunk` rows (a multiple of kSparseBlock) for one column
/// group, x and the sums interleaved `group.width` wide: each chunk's margins, the kernel on its
/// blocks (the losses added to totals[s − group.first]), then its updates added to the sums.
template <class Kernel>
void sparse_group_walk(const SparseArrays& arrays,
                       const Eigen::VectorXd& labels,
                       RowRange rows,
                       ColumnGroup group,
                       const double* group_x,
                       double* group_sums,
                       double* totals,
                       Eigen::Index chunk,
                       Kernel& kernel) {
  LineAlignedDoubles z(chunk * group.width);
  LineAlignedDoubles w(chunk * group.width);
  std::vector<unsigned char> has_zero(static_cast<std::size_t>(chunk));
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += chunk) {
    const Eigen::Index n = std::min(chunk, rows.end - begin);
    sparse_margins_rows(arrays, begin, n, group.width, group_x, z.data());
    sparse_chunk_weights(
        labels, begin, n, group, z.data(), w.data(), has_zero.data(), totals, kernel);
    sparse_updates_rows(arrays, begin, n, group.width, w.data(), has_zero.data(), group_sums);
  }
}

/// One group's walk of the rows: its totals and sums the same bytes as fused_pass's, column by
/// column.
template <class Kernel>
void sparse_group_pass(const SparseRows& a,
                       const Eigen::VectorXd& labels,
                       RowRange rows,
                       const Eigen::MatrixXd& x,
                       Eigen::Ref<Eigen::MatrixXd> sums,
                       double* totals,
                       ColumnGroup group,
                       Eigen::Index chunk,
                       Kernel& kernel) {
  // Only the features the rows touch are interleaved, read and written back.
  const Eigen::Index p = x.rows();
  const SparseArrays arrays = sparse_arrays(a);
  const std::vector<Eigen::Index> features = touched_features(arrays, rows, p);
  LineAlignedDoubles group_x(p * group.width, false);
  LineAlignedDoubles group_sums(p * group.width, false);
  interleave_at(x, group, features, group_x.data());
  interleave_at(sums, group, features, group_sums.data());
  sparse_group_walk(arrays,
                    labels,
                    rows,
                    group,
                    group_x.data(),
                    group_sums.data(),
                    totals + group.first,
                    chunk,
                    kernel);
  deinterleave_at(group_sums.data(), group, features, p, 1.0, [&](Eigen::Index s) {
    return sums.col(group.first + s).data();
  });
}

/// The sparse multi-vector pass: totals[s] and column s of `sums` the bytes of fused_pass on
/// column s of x, for any chunk of rows (a multiple of kSparseBlock).
template <class Kernel>
void fused_pass_many(const SparseRows& a,
                     const Eigen::VectorXd& labels,
                     RowRange rows,
                     const Eigen::MatrixXd& x,
                     Eigen::Ref<Eigen::MatrixXd> sums,
                     double* totals,
                     Kernel kernel,
                     Eigen::Index chunk = kSparseChunk) {
  for (Eigen::Index g = 0; g < sparse_groups(x.cols()); ++g) {
    sparse_group_pass(a, labels, rows, x, sums, totals, sparse_group(x.cols(), g), chunk, kernel);
  }
}

/// The sparse multi-vector pass over several row ranges (the partitions) for the same columns of
/// x: x interleaved once per column group for every range, each range one task of `run_tasks`
/// (its walks of each group as sparse_group_pass's, with sums that start at zero). Range j's
/// totals go to row j of `losses` and its sums, divided by `divisor`, to column j of
/// *gradients[s]: the bytes of fused_pass_many on range j, then that division.
template <class Kernel, class RunTasks>
void sparse_ranges_many(const SparseRows& a,
                        const Eigen::VectorXd& labels,
                        const std::vector<RowRange>& ranges,
                        const Eigen::MatrixXd& x,
                        double divisor,
                        const std::vector<Eigen::MatrixXd*>& gradients,
                        Eigen::Ref<Eigen::MatrixXd> losses,
                        Kernel kernel,
                        const RunTasks& run_tasks,
                        Eigen::Index chunk = kSparseChunk) {
  const SparseArrays arrays = sparse_arrays(a);
  const Eigen::Index p = x.rows();
  const Eigen::Index columns = x.cols();
  const Eigen::Index groups = sparse_groups(columns);
  std::vector<std::unique_ptr<LineAlignedDoubles>> group_x;
  for (Eigen::Index g = 0; g < groups; ++g) {
    const ColumnGroup group = sparse_group(columns, g);
    group_x.push_back(std::make_unique<LineAlignedDoubles>(p * group.width));
    interleave(x, group, group_x.back()->data());
  }
  // The first group is the widest (sparse_group gives the extra columns to the first ones).
  const Eigen::Index widest = sparse_group(columns, 0).width;
  run_tasks(static_cast<int>(ranges.size()), [&](int j) {
    // The sums are zeroed, and read back, at the features the range touches; a column's other
    // entries are the +0 a one-vector pass leaves there (+0 / divisor).
    const RowRange range = ranges[static_cast<std::size_t>(j)];
    const std::vector<Eigen::Index> features = touched_features(arrays, range, p);
    const auto column = [&](Eigen::Index s) {
      return gradients[static_cast<std::size_t>(s)]->col(j).data();
    };
    if (std::cmp_less(features.size(), p)) {
      for (Eigen::Index s = 0; s < columns; ++s) {
        std::fill(column(s), column(s) + p, 0.0);
      }
    }
    LineAlignedDoubles sums(p * widest, false);
    Eigen::VectorXd totals = Eigen::VectorXd::Zero(columns);
    for (Eigen::Index g = 0; g < groups; ++g) {
      const ColumnGroup group = sparse_group(columns, g);
      zero_at(sums.data(), group, features, p);
      sparse_group_walk(arrays,
                        labels,
                        range,
                        group,
                        group_x[static_cast<std::size_t>(g)]->data(),
                        sums.data(),
                        totals.data() + group.first,
                        chunk,
                        kernel);
      deinterleave_at(sums.data(), group, features, p, divisor, [&](Eigen::Index s) {
        return column(group.first + s);
      });
    }
    losses.row(j) = totals.transpose();
  });
}

/// One pass over `rows` for the columns of x; the data's bytes are counted once.
template <class Kernel>
void fused_pass_many(const Dataset& data,
                     RowRange rows,
                     const Eigen::MatrixXd& x,
                     Eigen::Ref<Eigen::MatrixXd> sums,
                     Eigen::Ref<Eigen::VectorXd> totals,
                     Kernel kernel) {
  if (x.cols() == 1) {  // the one-column pass itself (it counts the bytes)
    const Eigen::VectorXd column = x.col(0);
    totals[0] = fused_pass(data, rows, column, sums.col(0), kernel);
    return;
  }
  // Sparse rows are walked once per group of columns (sparse_groups); a chunk's second reading
  // (its updates) comes from cache.
  const Eigen::Index walks =
      std::holds_alternative<SparseRows>(data.features) ? sparse_groups(x.cols()) : 1;
  count_data_bytes(walks * data.stored_bytes(rows));
  totals.setZero();
  std::visit(
      [&](const auto& a) { fused_pass_many(a, data.labels, rows, x, sums, totals.data(), kernel); },
      data.features);
}

/// One column's block of margins through the kernel, its margins and losses stored at rows
/// [begin, begin + n) of column s (indexed from rows.begin): margin_pass_many's last step.
template <class Rows, class Kernel>
void store_block_scores(const Rows& block_z,
                        const Eigen::VectorXd& labels,
                        RowRange rows,
                        Eigen::Index begin,
                        Eigen::Index n,
                        Eigen::Index s,
                        Kernel& kernel,
                        Eigen::Ref<Eigen::MatrixXd> z,
                        Eigen::Ref<Eigen::MatrixXd> loss) {
  Rows b;
  Rows block_loss;
  Rows unused;
  load_labels(labels, begin, n, b);
  kernel(block_z, static_cast<const Rows&>(b), block_loss, unused);
  z.col(s).segment(begin - rows.begin, n) = block_z.head(n).matrix();
  loss.col(s).segment(begin - rows.begin, n) = block_loss.head(n).matrix();
}

/// margin_pass_many on dense rows: blocks of four rows, their margins by dense_dot4_many.
template <class Kernel>
void dense_margins_many(const DenseRows& a,
                        const Eigen::VectorXd& labels,
                        RowRange rows,
                        const Eigen::MatrixXd& x,
                        Eigen::Ref<Eigen::MatrixXd> z,
                        Eigen::Ref<Eigen::MatrixXd> loss,
                        Kernel& kernel) {
  const Eigen::Index p = a.cols();
  const Eigen::Index columns = x.cols();
  using Rows = Block<kDenseBlock>;
  Eigen::Array<double, kDenseBlock, Eigen::Dynamic> block(kDenseBlock, columns);
  Rows column_z;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kDenseBlock) {
    const Eigen::Index n = std::min(kDenseBlock, rows.end - begin);
    const double* first = a.data() + begin * p;
    if (n == kDenseBlock) {
      dense_dot4_many(first, p, x.data(), x.outerStride(), columns, block.data());
    } else {
      block.setZero();
      for (Eigen::Index s = 0; s < columns; ++s) {
        for (Eigen::Index r = 0; r < n; ++r) {
          block(r, s) = dense_dot(first + r * p, p, x.col(s).data());
        }
      }
    }
    for (Eigen::Index s = 0; s < columns; ++s) {
      column_z = block.col(s);
      store_block_scores(
          static_cast<const Rows&>(column_z), labels, rows, begin, n, s, kernel, z, loss);
    }
  }
}

/// margin_pass_many on sparse rows for one group of columns: each chunk's margins as the
/// multi-vector pass computes them, then the kernel on each column's blocks of 32 rows.
template <class Kernel>
void sparse_margins_group(const SparseRows& a,
                          const Eigen::VectorXd& labels,
                          RowRange rows,
                          const Eigen::MatrixXd& x,
                          ColumnGroup group,
                          Eigen::Index chunk,
                          Eigen::Ref<Eigen::MatrixXd> z,
                          Eigen::Ref<Eigen::MatrixXd> loss,
                          Kernel& kernel) {
  using Rows = Block<kSparseBlock>;
  const SparseArrays arrays = sparse_arrays(a);
  LineAlignedDoubles group_x(x.rows() * group.width);
  LineAlignedDoubles chunk_z(chunk * group.width);
  interleave(x, group, group_x.data());
  Eigen::Array<double, kSparseBlock, kSparseWidest> block;
  Rows column_z;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += chunk) {
    const Eigen::Index n = std::min(chunk, rows.end - begin);
    sparse_margins_rows(arrays, begin, n, group.width, group_x.data(), chunk_z.data());
    for (Eigen::Index at = 0; at < n; at += kSparseBlock) {
      const Eigen::Index count = std::min(kSparseBlock, n - at);
      gather_block(chunk_z.data(), at, count, group, block);
      for (Eigen::Index s = 0; s < group.count; ++s) {
        column_z = block.col(s);
        store_block_scores(static_cast<const Rows&>(column_z),
                           labels,
                           rows,
                           begin + at,
                           count,
                           group.first + s,
                           kernel,
                           z,
                           loss);
      }
    }
  }
}

/// margin_pass for the S columns of x (p × S): z(i, s) and loss(i, s) for the rows (indexed
/// from rows.begin), each the same bytes as margin_pass(data, rows, x.col(s), …): the same
/// margins (dense_dot4_many; the sparse multi-vector pass's) and the same kernel on the same
/// blocks of rows. The data's bytes are counted once per walk of the rows (sparse: one walk per
/// group of sparse_groups).
template <class Kernel>
void margin_pass_many(const Dataset& data,
                      RowRange rows,
                      const Eigen::MatrixXd& x,
                      Eigen::Ref<Eigen::MatrixXd> z,
                      Eigen::Ref<Eigen::MatrixXd> loss,
                      Kernel kernel,
                      Eigen::Index chunk = kSparseChunk) {
  if (const auto* dense = std::get_if<DenseRows>(&data.features)) {
    count_data_bytes(data.stored_bytes(rows));
    dense_margins_many(*dense, data.labels, rows, x, z, loss, kernel);
    return;
  }
  const auto& a = std::get<SparseRows>(data.features);
  for (Eigen::Index g = 0; g < sparse_groups(x.cols()); ++g) {
    count_data_bytes(data.stored_bytes(rows));
    sparse_margins_group(
        a, data.labels, rows, x, sparse_group(x.cols(), g), chunk, z, loss, kernel);
  }
}

/// Σ_i ℓ_i over `rows` alone (w_i is computed and dropped).
template <class Kernel>
double value_pass(const Dataset& data, RowRange rows, const Eigen::VectorXd& x, Kernel kernel) {
  Eigen::VectorXd unused;
  return fused_pass<false>(data, rows, x, unused, kernel);
}

/// The margins z_i and losses ℓ_i of `rows`, written to z and loss (indexed from rows.begin), by
/// the blocks of the passes above: each ℓ_i is the same bytes as in fused_pass when rows.begin is
/// a multiple of the block size.
template <class Kernel>
void margin_pass(const Dataset& data,
                 RowRange rows,
                 const Eigen::VectorXd& x,
                 Eigen::Ref<Eigen::VectorXd> z,
                 Eigen::Ref<Eigen::VectorXd> loss,
                 Kernel kernel) {
  Eigen::VectorXd unused;
  fused_pass<false>(
      data,
      rows,
      x,
      unused,
      kernel,
      [&](Eigen::Index begin, Eigen::Index n, const auto& block_z, const auto& block_loss) {
        z.segment(begin - rows.begin, n) = block_z.head(n).matrix();
        loss.segment(begin - rows.begin, n) = block_loss.head(n).matrix();
      });
}

}  // namespace stragglersim::models::internal

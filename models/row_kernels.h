#pragma once
// Internal to models/: the fused per-row pass shared by the loss models and the Gram operator.
// For rows i in a range it computes z_i = a_iᵀx, asks a kernel for (ℓ_i, w_i) and adds w_i·a_i to
// an accumulator while a_i is still in L1 cache, so the data is streamed from memory once.
// Kernels are templates (inlined), never virtual calls per row.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <variant>

#include "models/base/data_traffic.h"
#include "models/dataset.h"
#include "models/dense_kernels.h"

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

// The multi-vector pass: fused_pass for the S columns of x (p × S) in one pass over the rows.
// For each block of rows the S margins are computed while the rows are in cache, the kernel runs
// on each column's block as fused_pass runs it, then the S updates. Column s of `sums` gets the
// same bytes as fused_pass(…, x.col(s), sums.col(s), kernel) and totals[s] its return value:
// every column sees the same operations in the same order, only the loops across columns are
// nested differently.

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

/// Columns the sparse multi-vector loops keep in registers at once (one cache line of x).
inline constexpr Eigen::Index kSparseColumns = 8;

/// kWidth doubles handled as one value: lane-wise IEEE operations, so each lane is the scalar
/// loop's arithmetic. Passed by reference only.
// (Spelled out per width: GCC ignores vector_size on an alias template with a dependent size.)
template <Eigen::Index kWidth>
struct LanesOf;
template <>
struct LanesOf<1> {
  using Type = double __attribute__((vector_size(8)));
};
template <>
struct LanesOf<2> {
  using Type = double __attribute__((vector_size(16)));
};
template <>
struct LanesOf<4> {
  using Type = double __attribute__((vector_size(32)));
};
template <>
struct LanesOf<8> {
  using Type = double __attribute__((vector_size(64)));
};
template <Eigen::Index kWidth>
using Lanes = typename LanesOf<kWidth>::Type;  // NOLINT(readability-redundant-typename): clang 14
static_assert(sizeof(Lanes<8>) == 8 * sizeof(double));

/// Row r's margins for the kWidth columns of x (interleaved, S = `stride`) starting at `first`:
/// z_s = Σ value·x_s[index] over the row's non-zeros in order, as fused_pass sums them.
template <Eigen::Index kWidth>
[[gnu::always_inline]] inline void sparse_dots(
    const SparseRows& a, Eigen::Index r, const double* x, Eigen::Index stride, Lanes<kWidth>& dot) {
  dot = Lanes<kWidth>{};
  Lanes<kWidth> column;
  for (SparseRows::InnerIterator it(a, r); it; ++it) {
    const double value = it.value();
    std::memcpy(&column, x + it.index() * stride, sizeof column);
    dot += value * column;
  }
}

/// sums_s[index] += w_s·value over row r's non-zeros in order for the kWidth columns whose
/// weights are w; a zero weight adds nothing, as fused_pass skips it (its ±0 products could turn
/// −0 into +0).
template <Eigen::Index kWidth>
[[gnu::always_inline]] inline void sparse_updates(
    const SparseRows& a, Eigen::Index r, const double* w, double* sums, Eigen::Index stride) {
  bool any_zero = false;
  for (Eigen::Index s = 0; s < kWidth; ++s) any_zero = any_zero || w[s] == 0.0;
  if (any_zero) {
    for (SparseRows::InnerIterator it(a, r); it; ++it) {
      double* at = sums + it.index() * stride;
      for (Eigen::Index s = 0; s < kWidth; ++s) {
        if (w[s] != 0.0) at[s] += w[s] * it.value();
      }
    }
    return;
  }
  Lanes<kWidth> weight;
  std::memcpy(&weight, w, sizeof weight);
  Lanes<kWidth> sum;
  for (SparseRows::InnerIterator it(a, r); it; ++it) {
    double* at = sums + it.index() * stride;
    std::memcpy(&sum, at, sizeof sum);
    sum += weight * it.value();
    std::memcpy(at, &sum, sizeof sum);
  }
}

/// Columns [first, first + kWidth) of the sparse multi-vector pass for the rows of one block:
/// their margins into z (column-major, ld kSparseBlock), or their updates from w (the S weights
/// of row r at r·S).
template <Eigen::Index kWidth>
void sparse_columns(const SparseRows& a,
                    Eigen::Index begin,
                    Eigen::Index n,
                    Eigen::Index first,
                    Eigen::Index stride,
                    const double* x,
                    double* z) {
  for (Eigen::Index r = 0; r < n; ++r) {
    Lanes<kWidth> dot;  // (by reference: vectors by value change the calling convention)
    sparse_dots<kWidth>(a, begin + r, x + first, stride, dot);
    for (Eigen::Index s = 0; s < kWidth; ++s) z[(first + s) * kSparseBlock + r] = dot[s];
  }
}

template <Eigen::Index kWidth>
void sparse_column_updates(const SparseRows& a,
                           Eigen::Index begin,
                           Eigen::Index n,
                           Eigen::Index first,
                           Eigen::Index stride,
                           const double* w,
                           double* sums) {
  for (Eigen::Index r = 0; r < n; ++r) {
    sparse_updates<kWidth>(a, begin + r, w + r * stride + first, sums + first, stride);
  }
}

/// Runs `step.template operator()<width>(first)` over the columns: groups of kSparseColumns,
/// then groups of 4, 2 and 1 for the rest.
template <class Step>
void for_column_groups(Eigen::Index columns, Step step) {
  Eigen::Index first = 0;
  for (; first + kSparseColumns <= columns; first += kSparseColumns) {
    step.template operator()<kSparseColumns>(first);
  }
  if ((columns - first) >= 4) {
    step.template operator()<4>(first);
    first += 4;
  }
  if ((columns - first) >= 2) {
    step.template operator()<2>(first);
    first += 2;
  }
  if (columns - first == 1) step.template operator()<1>(first);
}

/// Sparse rows, x and the sums interleaved: entry k of column s at k·S + s, so that each
/// non-zero meets the S values of its column in one contiguous stretch. Each column's margins
/// and updates are fused_pass's operations in fused_pass's order (rows in order, each row's
/// non-zeros in order); groups of up to eight columns are summed in registers.
template <class Kernel>
void sparse_pass_many(const SparseRows& a,
                      const Eigen::VectorXd& labels,
                      RowRange rows,
                      const double* x,
                      Eigen::Index columns,
                      double* sums,
                      double* totals,
                      Kernel kernel) {
  using Rows = Block<kSparseBlock>;
  Eigen::Array<double, kSparseBlock, Eigen::Dynamic> z(kSparseBlock, columns);
  // Row-major weights: the S weights of row r at r·S.
  Eigen::Array<double, Eigen::Dynamic, kSparseBlock> w(columns, kSparseBlock);
  Rows column_z;
  Rows b;
  Rows loss;
  Rows column_w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kSparseBlock) {
    const Eigen::Index n = std::min(kSparseBlock, rows.end - begin);
    z.setZero();
    for_column_groups(columns, [&]<Eigen::Index kWidth>(Eigen::Index first) {
      sparse_columns<kWidth>(a, begin, n, first, columns, x, z.data());
    });
    load_labels(labels, begin, n, b);
    for (Eigen::Index s = 0; s < columns; ++s) {
      column_z = z.col(s);
      kernel(static_cast<const Rows&>(column_z), static_cast<const Rows&>(b), loss, column_w);
      for (Eigen::Index r = 0; r < n; ++r) totals[s] += loss[r];
      w.row(s) = column_w.transpose();
    }
    for_column_groups(columns, [&]<Eigen::Index kWidth>(Eigen::Index first) {
      sparse_column_updates<kWidth>(a, begin, n, first, columns, w.data(), sums);
    });
  }
}

/// Bytes of interleaved x (and as many of sums) one sparse walk of the rows keeps: the columns
/// are taken in slices whose x and sums stay in a core's L2 cache (1 MiB or more on the CPUs we
/// measured), so each non-zero's gather and scatter hits L2, not L3 (benchmarks/multi_vector.md).
inline constexpr Eigen::Index kSparseSliceBytes = Eigen::Index{1024} << 10;

/// The columns of one slice of the sparse multi-vector pass on p features: a power of two (one
/// group of for_column_groups, so one walk of each row's non-zeros) of at most kSparseColumns
/// whose x fits in kSparseSliceBytes; at least one.
inline Eigen::Index sparse_slice_columns(Eigen::Index p) {
  const Eigen::Index fit = kSparseSliceBytes / (static_cast<Eigen::Index>(sizeof(double)) *
                                                std::max<Eigen::Index>(1, p));
  Eigen::Index slice = 1;
  while (slice * 2 <= std::min(fit, kSparseColumns)) {
    slice *= 2;
  }
  return slice;
}

template <class Kernel>
void fused_pass_many(const SparseRows& a,
                     const Eigen::VectorXd& labels,
                     RowRange rows,
                     const Eigen::MatrixXd& x,
                     Eigen::Ref<Eigen::MatrixXd> sums,
                     double* totals,
                     Kernel kernel) {
  // Each slice of columns walks the rows once: the rows are re-read per slice (they stream from
  // memory at a fraction of the gathers' cost), each column's bytes are the same.
  const Eigen::Index slice = sparse_slice_columns(x.rows());
  for (Eigen::Index first = 0; first < x.cols(); first += slice) {
    const Eigen::Index count = std::min(slice, x.cols() - first);
    if (count == 1) {
      const Eigen::VectorXd column = x.col(first);
      totals[first] = fused_pass(a, labels, rows, column, sums.col(first), kernel);
      continue;
    }
    const Eigen::MatrixXd interleaved_x = x.middleCols(first, count).transpose();
    Eigen::MatrixXd interleaved_sums = sums.middleCols(first, count).transpose();
    sparse_pass_many(a,
                     labels,
                     rows,
                     interleaved_x.data(),
                     count,
                     interleaved_sums.data(),
                     totals + first,
                     kernel);
    sums.middleCols(first, count) = interleaved_sums.transpose();
  }
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
  // Sparse rows are walked once per slice of columns (sparse_slice_columns).
  const Eigen::Index walks =
      std::holds_alternative<SparseRows>(data.features)
          ? (x.cols() + sparse_slice_columns(x.rows()) - 1) / sparse_slice_columns(x.rows())
          : 1;
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

/// margin_pass_many on sparse rows for the `count` columns from `first_column`, interleaved
/// (one slice): blocks of 32 rows, their margins by sparse_columns.
template <class Kernel>
void sparse_margins_slice(const SparseRows& a,
                          const Eigen::VectorXd& labels,
                          RowRange rows,
                          const Eigen::MatrixXd& x,
                          Eigen::Index first_column,
                          Eigen::Index count,
                          Eigen::Ref<Eigen::MatrixXd> z,
                          Eigen::Ref<Eigen::MatrixXd> loss,
                          Kernel& kernel) {
  using Rows = Block<kSparseBlock>;
  const Eigen::MatrixXd interleaved = x.middleCols(first_column, count).transpose();
  Eigen::Array<double, kSparseBlock, Eigen::Dynamic> block(kSparseBlock, count);
  Rows column_z;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kSparseBlock) {
    const Eigen::Index n = std::min(kSparseBlock, rows.end - begin);
    block.setZero();
    for_column_groups(count, [&]<Eigen::Index kWidth>(Eigen::Index first) {
      sparse_columns<kWidth>(a, begin, n, first, count, interleaved.data(), block.data());
    });
    for (Eigen::Index s = 0; s < count; ++s) {
      column_z = block.col(s);
      store_block_scores(static_cast<const Rows&>(column_z),
                         labels,
                         rows,
                         begin,
                         n,
                         first_column + s,
                         kernel,
                         z,
                         loss);
    }
  }
}

/// margin_pass for the S columns of x (p × S): z(i, s) and loss(i, s) for the rows (indexed
/// from rows.begin), each the same bytes as margin_pass(data, rows, x.col(s), …): the same
/// margins (dense_dot4_many, the sparse dots of sparse_columns) and the same kernel on the same
/// blocks of rows. The data's bytes are counted once per walk of the rows (sparse: one walk per
/// slice of sparse_slice_columns columns).
template <class Kernel>
void margin_pass_many(const Dataset& data,
                      RowRange rows,
                      const Eigen::MatrixXd& x,
                      Eigen::Ref<Eigen::MatrixXd> z,
                      Eigen::Ref<Eigen::MatrixXd> loss,
                      Kernel kernel) {
  if (const auto* dense = std::get_if<DenseRows>(&data.features)) {
    count_data_bytes(data.stored_bytes(rows));
    dense_margins_many(*dense, data.labels, rows, x, z, loss, kernel);
    return;
  }
  const auto& a = std::get<SparseRows>(data.features);
  const Eigen::Index slice = sparse_slice_columns(x.rows());
  for (Eigen::Index first = 0; first < x.cols(); first += slice) {
    count_data_bytes(data.stored_bytes(rows));
    sparse_margins_slice(
        a, data.labels, rows, x, first, std::min(slice, x.cols() - first), z, loss, kernel);
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

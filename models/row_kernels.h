#pragma once
// Internal to models/: the fused per-row pass shared by the loss models and the Gram operator.
// For rows i in a range it computes z_i = a_iᵀx, asks a kernel for (ℓ_i, w_i) and adds w_i·a_i to
// an accumulator while a_i is still in L1 cache, so the data is streamed from memory once.
// Kernels are templates (inlined), never virtual calls per row.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <algorithm>
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

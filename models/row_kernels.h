#pragma once
// Internal to models/: the fused per-row pass shared by the loss models and the Gram operator.
// For rows i in a range it computes z_i = a_iᵀx, asks a kernel for (ℓ_i, w_i) and adds w_i·a_i to
// an accumulator while a_i is still in L1 cache, so the data is streamed from memory once.
// Kernels are templates (inlined), never virtual calls per row.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cstdint>
#include <variant>

#include "models/dataset.h"
#include "models/dense_row_kernels.h"

namespace stragglersim::models::internal {

/// Rows handled together. Four rows (6.4 KB at p = 200) are read from memory by their dot
/// products and re-read from L1 by one fused update sum += Σ_r w_r·a_r, which loads and stores
/// `sum` once per four rows; the kernel gets four margins at once to vectorise exp/log. Measured
/// on p = 200: blocks of 4 beat 1 (per-row axpy), 8, 16 and Eigen's gemv kernels. The dense
/// arithmetic is in dense_row_kernels.h (AVX2 or SSE2 by the CPU, the same bytes on both).
inline constexpr Eigen::Index kRowBlock = 4;
using BlockArray = Eigen::Array<double, kRowBlock, 1>;

/// Loads the labels of rows [begin, begin + n) into a block; padding rows get z = b = 0, for which
/// every kernel must return a zero weight (their losses are ignored).
inline void load_labels(const Eigen::VectorXd& labels,
                        Eigen::Index begin,
                        Eigen::Index n,
                        BlockArray& b) {
  b.setZero();
  for (Eigen::Index r = 0; r < n; ++r) b[r] = labels[begin + r];
}

/// Σ_i ℓ_i over `rows`, adding Σ_i w_i·a_i to `sum` when kWithSum. `kernel(z, b, loss, w)` gets the
/// margins and labels of a block of kRowBlock rows and writes the losses ℓ_i and weights w_i.
template <bool kWithSum = true, class Kernel>
double fused_pass(const DenseRows& a,
                  const Eigen::VectorXd& labels,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel) {
  using Row = Eigen::Map<const Eigen::VectorXd>;
  const Eigen::Index p = a.cols();
  double total = 0.0;
  BlockArray z;
  BlockArray b;
  BlockArray loss;
  BlockArray w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kRowBlock) {
    const Eigen::Index n = std::min(kRowBlock, rows.end - begin);
    const double* first = a.data() + begin * p;
    z.setZero();
    dense_dots(first, p, n, x.data(), z.data());
    load_labels(labels, begin, n, b);
    kernel(static_cast<const BlockArray&>(z), static_cast<const BlockArray&>(b), loss, w);
    for (Eigen::Index r = 0; r < n; ++r) total += loss[r];
    if constexpr (kWithSum) {
      if (n == kRowBlock) {
        static_assert(kRowBlock == 4, "dense_update4 is written out for four rows");
        dense_update4(first, p, w.data(), sum.data());
      } else {
        for (Eigen::Index r = 0; r < n; ++r) {
          sum.noalias() += w[r] * Row(first + r * p, p);
        }
      }
    }
  }
  return total;
}

/// a_iᵀx over the compressed row [begin, end) of `inner`/`values`, in four interleaved partial sums
/// (entries k ≡ 0, 1, 2, 3 mod 4 of the row) reduced (s0 + s1) + (s2 + s3), then the last
/// (end − begin) mod 4 entries in order: four independent gathers in flight instead of one chain.
inline double sparse_dot(const std::int64_t* inner,
                         const double* values,
                         std::int64_t begin,
                         std::int64_t end,
                         const double* x) {
  double s0 = 0.0;
  double s1 = 0.0;
  double s2 = 0.0;
  double s3 = 0.0;
  std::int64_t k = begin;
  for (; k + 4 <= end; k += 4) {
    s0 += values[k] * x[inner[k]];
    s1 += values[k + 1] * x[inner[k + 1]];
    s2 += values[k + 2] * x[inner[k + 2]];
    s3 += values[k + 3] * x[inner[k + 3]];
  }
  double dot = (s0 + s1) + (s2 + s3);
  for (; k < end; ++k) {
    dot += values[k] * x[inner[k]];
  }
  return dot;
}

template <bool kWithSum = true, class Kernel>
double fused_pass(const SparseRows& a,
                  const Eigen::VectorXd& labels,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel) {
  // Row i is entries [start[i], start[i] + size(i)) of the index and value arrays; uncompressed
  // matrices (never built by this project's readers, but legal in Eigen) carry explicit sizes.
  const std::int64_t* start = a.outerIndexPtr();
  const std::int64_t* sizes = a.innerNonZeroPtr();
  const std::int64_t* inner = a.innerIndexPtr();
  const double* values = a.valuePtr();
  const auto row_end = [&](Eigen::Index i) {
    return sizes == nullptr ? start[i + 1] : start[i] + sizes[i];
  };
  double total = 0.0;
  BlockArray z;
  BlockArray b;
  BlockArray loss;
  BlockArray w;
  for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kRowBlock) {
    const Eigen::Index n = std::min(kRowBlock, rows.end - begin);
    z.setZero();
    for (Eigen::Index r = 0; r < n; ++r) {
      z[r] = sparse_dot(inner, values, start[begin + r], row_end(begin + r), x.data());
    }
    load_labels(labels, begin, n, b);
    kernel(static_cast<const BlockArray&>(z), static_cast<const BlockArray&>(b), loss, w);
    for (Eigen::Index r = 0; r < n; ++r) total += loss[r];
    if constexpr (kWithSum) {
      double* out = sum.data();
      for (Eigen::Index r = 0; r < n; ++r) {
        const double weight = w[r];
        if (weight == 0.0) continue;
        const std::int64_t end = row_end(begin + r);
        for (std::int64_t k = start[begin + r]; k < end; ++k) {
          out[inner[k]] += weight * values[k];
        }
      }
    }
  }
  return total;
}

template <bool kWithSum = true, class Kernel>
double fused_pass(const Dataset& data,
                  RowRange rows,
                  const Eigen::VectorXd& x,
                  Eigen::Ref<Eigen::VectorXd> sum,
                  Kernel kernel) {
  return std::visit(
      [&](const auto& a) { return fused_pass<kWithSum>(a, data.labels, rows, x, sum, kernel); },
      data.features);
}

/// Σ_i ℓ_i over `rows` alone (w_i is computed and dropped).
template <class Kernel>
double value_pass(const Dataset& data, RowRange rows, const Eigen::VectorXd& x, Kernel kernel) {
  Eigen::VectorXd unused;
  return fused_pass<false>(data, rows, x, unused, kernel);
}

/// Calls `each(i, z_i)` for every row i of `data` (no accumulator; used for metrics).
template <class Each>
void for_each_margin(const Dataset& data, const Eigen::VectorXd& x, Each each) {
  if (const auto* dense = std::get_if<DenseRows>(&data.features)) {
    const Eigen::VectorXd z = *dense * x;
    for (Eigen::Index i = 0; i < z.size(); ++i) each(i, z[i]);
  } else {
    const auto& sparse = std::get<SparseRows>(data.features);
    const Eigen::VectorXd z = sparse * x;
    for (Eigen::Index i = 0; i < z.size(); ++i) each(i, z[i]);
  }
}

}  // namespace stragglersim::models::internal

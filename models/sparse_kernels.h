#pragma once
// Internal to models/: the inner loops of the sparse multi-vector pass (models/row_kernels.h),
// with a version for CPUs with AVX chosen on first use from the CPU flags (runtime dispatch), as
// models/dense_kernels.h does.
//
// The columns of x and of the gradient sums are interleaved, `width` of them (4, 8, 12 or 16):
// entry j of column s at j·width + s, so that a non-zero meets the width values of its feature in
// one or two cache lines. Every lane is lane-wise IEEE arithmetic without fused multiply-add, in
// fused_pass's order (a row's non-zeros in order; the rows in order): the results are the same
// bytes in every version.

#include <Eigen/Core>
#include <cstdint>
#include <string_view>

namespace stragglersim::models::internal {

/// The arrays of a row-major sparse matrix: row r's non-zeros are (index[k], values[k]) for k in
/// [outer[r], end(r)).
struct SparseArrays {
  const std::int64_t* outer = nullptr;
  const std::int64_t* counts = nullptr;  ///< non-zeros per row when not compressed, else null
  const std::int64_t* index = nullptr;
  const double* values = nullptr;
  [[nodiscard]] std::int64_t end(Eigen::Index r) const {
    return counts != nullptr ? outer[r] + counts[r] : outer[r + 1];
  }
};

/// The interleaved widths are multiples of this (the columns are padded), at most kSparseWidest.
inline constexpr Eigen::Index kSparseWidthStep = 4;
inline constexpr Eigen::Index kSparseWidest = 16;

/// For rows first_row + r (r < rows): z[r·width + s] = Σ_k values[k]·x[index[k]·width + s] for
/// every s < width, summed from +0 over the row's non-zeros in order.
void sparse_margins_rows(const SparseArrays& a,
                         Eigen::Index first_row,
                         Eigen::Index rows,
                         Eigen::Index width,
                         const double* x,
                         double* z);

/// For rows first_row + r in order: sums[index[k]·width + s] += w[r·width + s]·values[k] for
/// every s < width over the row's non-zeros in order. In a row whose has_zero[r] is set, the
/// columns whose weight is zero are skipped, as fused_pass skips a zero weight (its ±0 products
/// could turn −0 into +0).
void sparse_updates_rows(const SparseArrays& a,
                         Eigen::Index first_row,
                         Eigen::Index rows,
                         Eigen::Index width,
                         const double* w,
                         const unsigned char* has_zero,
                         double* sums);

/// The version this CPU runs: "avx" or "baseline".
std::string_view sparse_kernel_isa();

}  // namespace stragglersim::models::internal

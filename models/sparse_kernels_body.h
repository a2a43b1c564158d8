#pragma once
// Internal to models/sparse_kernels.cpp (and its test): the bodies of the sparse kernels, always
// inlined into each instruction-set version. A test compiles them for the baseline instruction
// set and compares them bit for bit with the version this CPU runs.

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "models/sparse_kernels.h"

namespace stragglersim::models::internal::sparse_body {

// kLanes doubles handled as one value (two: an SSE2 register; four: an AVX register), with
// lane-wise IEEE operations. Passed by reference only (by value, their calling convention
// differs with and without AVX). Spelled out per width: GCC ignores vector_size on an alias
// template with a dependent size.
template <Eigen::Index kLanes>
struct VectorOf;
template <>
struct VectorOf<2> {
  using Type = double __attribute__((vector_size(16)));
};
template <>
struct VectorOf<4> {
  using Type = double __attribute__((vector_size(32)));
};
template <Eigen::Index kLanes>
using Vector = typename VectorOf<kLanes>::Type;  // NOLINT(readability-redundant-typename)

/// Lanes [kFirst, kFirst + kCount) of one row's margins: running sums from +0 (in registers),
/// each adding value·x over the row's non-zeros [k, end) in order.
template <Eigen::Index kWidth, Eigen::Index kLanes, Eigen::Index kFirst, Eigen::Index kCount>
[[gnu::always_inline]] inline void row_margins(
    const SparseArrays& a, std::int64_t k, std::int64_t end, const double* x, double* z_row) {
  constexpr auto kParts = static_cast<std::size_t>(kCount / kLanes);
  std::array<Vector<kLanes>, kParts> dot;
#pragma GCC unroll 8
  for (std::size_t h = 0; h < kParts; ++h) {
    dot[h] = Vector<kLanes>{};
  }
  for (; k < end; ++k) {
    const double value = a.values[k];
    const double* at = x + a.index[k] * kWidth + kFirst;
#pragma GCC unroll 8
    for (std::size_t h = 0; h < kParts; ++h) {
      Vector<kLanes> column;
      std::memcpy(&column, at + h * kLanes, sizeof column);
      dot[h] += value * column;
    }
  }
#pragma GCC unroll 8
  for (std::size_t h = 0; h < kParts; ++h) {
    std::memcpy(z_row + kFirst + h * kLanes, &dot[h], sizeof dot[h]);
  }
}

/// Lanes [kFirst, kFirst + kCount) of one row's updates over its non-zeros [k, end), every
/// weight non-zero (the weights in registers).
template <Eigen::Index kWidth, Eigen::Index kLanes, Eigen::Index kFirst, Eigen::Index kCount>
[[gnu::always_inline]] inline void row_updates(
    const SparseArrays& a, std::int64_t k, std::int64_t end, const double* w_row, double* sums) {
  constexpr auto kParts = static_cast<std::size_t>(kCount / kLanes);
  std::array<Vector<kLanes>, kParts> weight;
#pragma GCC unroll 8
  for (std::size_t h = 0; h < kParts; ++h) {
    std::memcpy(&weight[h], w_row + kFirst + h * kLanes, sizeof weight[h]);
  }
  for (; k < end; ++k) {
    const double value = a.values[k];
    double* at = sums + a.index[k] * kWidth + kFirst;
#pragma GCC unroll 8
    for (std::size_t h = 0; h < kParts; ++h) {
      Vector<kLanes> sum;
      std::memcpy(&sum, at + h * kLanes, sizeof sum);
      sum += weight[h] * value;
      std::memcpy(at + h * kLanes, &sum, sizeof sum);
    }
  }
}

/// One row's updates when some weight is zero: lane by lane, the zero weights skipped.
template <Eigen::Index kWidth>
void row_updates_skipping_zeros(
    const SparseArrays& a, std::int64_t k, std::int64_t end, const double* w_row, double* sums) {
  for (; k < end; ++k) {
    double* at = sums + a.index[k] * kWidth;
    for (Eigen::Index s = 0; s < kWidth; ++s) {
      if (w_row[s] != 0.0) {
        at[s] += w_row[s] * a.values[k];
      }
    }
  }
}

/// sparse_margins_rows for one width: the lanes in at most two parts of kPart (the running sums
/// of a part fill a register group), each part walking the row (the second finds its non-zeros
/// in L1 cache).
template <Eigen::Index kWidth, Eigen::Index kLanes, Eigen::Index kPart>
[[gnu::always_inline]] inline void margins(
    const SparseArrays& a, Eigen::Index first_row, Eigen::Index rows, const double* x, double* z) {
  static_assert(kWidth % kLanes == 0 && kPart % kLanes == 0 && kWidth <= 2 * kPart);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const std::int64_t k = a.outer[first_row + r];
    const std::int64_t end = a.end(first_row + r);
    double* z_row = z + r * kWidth;
    if constexpr (kWidth <= kPart) {
      row_margins<kWidth, kLanes, 0, kWidth>(a, k, end, x, z_row);
    } else {
      row_margins<kWidth, kLanes, 0, kPart>(a, k, end, x, z_row);
      row_margins<kWidth, kLanes, kPart, kWidth - kPart>(a, k, end, x, z_row);
    }
  }
}

/// sparse_updates_rows for one width, the lanes in parts as `margins` takes them.
template <Eigen::Index kWidth, Eigen::Index kLanes, Eigen::Index kPart>
[[gnu::always_inline]] inline void updates(const SparseArrays& a,
                                           Eigen::Index first_row,
                                           Eigen::Index rows,
                                           const double* w,
                                           const unsigned char* has_zero,
                                           double* sums) {
  static_assert(kWidth % kLanes == 0 && kPart % kLanes == 0 && kWidth <= 2 * kPart);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const std::int64_t k = a.outer[first_row + r];
    const std::int64_t end = a.end(first_row + r);
    const double* w_row = w + r * kWidth;
    if (has_zero[r] != 0) {
      row_updates_skipping_zeros<kWidth>(a, k, end, w_row, sums);
    } else if constexpr (kWidth <= kPart) {
      row_updates<kWidth, kLanes, 0, kWidth>(a, k, end, w_row, sums);
    } else {
      row_updates<kWidth, kLanes, 0, kPart>(a, k, end, w_row, sums);
      row_updates<kWidth, kLanes, kPart, kWidth - kPart>(a, k, end, w_row, sums);
    }
  }
}

/// sparse_margins_rows: the width's instance of `margins` (4, 8, 12 or 16). (A switch, not a
/// lambda: a lambda's body would not take the instruction set of the function it is in.)
template <Eigen::Index kLanes, Eigen::Index kPart>
[[gnu::always_inline]] inline void margins_of_width(const SparseArrays& a,
                                                    Eigen::Index first_row,
                                                    Eigen::Index rows,
                                                    Eigen::Index width,
                                                    const double* x,
                                                    double* z) {
  switch (width) {
    case 4:
      margins<4, kLanes, kPart>(a, first_row, rows, x, z);
      break;
    case 8:
      margins<8, kLanes, kPart>(a, first_row, rows, x, z);
      break;
    case 12:
      margins<12, kLanes, kPart>(a, first_row, rows, x, z);
      break;
    default:
      margins<16, kLanes, kPart>(a, first_row, rows, x, z);
      break;
  }
}

/// sparse_updates_rows: the width's instance of `updates`.
template <Eigen::Index kLanes, Eigen::Index kPart>
[[gnu::always_inline]] inline void updates_of_width(const SparseArrays& a,
                                                    Eigen::Index first_row,
                                                    Eigen::Index rows,
                                                    Eigen::Index width,
                                                    const double* w,
                                                    const unsigned char* has_zero,
                                                    double* sums) {
  switch (width) {
    case 4:
      updates<4, kLanes, kPart>(a, first_row, rows, w, has_zero, sums);
      break;
    case 8:
      updates<8, kLanes, kPart>(a, first_row, rows, w, has_zero, sums);
      break;
    case 12:
      updates<12, kLanes, kPart>(a, first_row, rows, w, has_zero, sums);
      break;
    default:
      updates<16, kLanes, kPart>(a, first_row, rows, w, has_zero, sums);
      break;
  }
}

}  // namespace stragglersim::models::internal::sparse_body

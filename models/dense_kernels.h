#pragma once
// Internal to models/: the dense rows' inner loops of the fused pass (models/row_kernels.h), with
// a version for CPUs with AVX chosen on first use from the CPU flags (runtime dispatch), so an
// ordinary x86-64 build uses 256-bit arithmetic where the CPU has it without -march=native.
//
// Both versions run the same source on four-lane vectors (two SSE2 registers or one AVX
// register) without fused multiply-add, so every lane sees the same operations in the same
// order: the results are the same bytes on every x86-64 CPU.

#include <Eigen/Core>
#include <string_view>

namespace stragglersim::models::internal {

/// a·x for one row of length p: eight running sums, entry j going to sum (j mod 8), added as
/// ((s₀ + s₄) + (s₁ + s₅)) + ((s₂ + s₆) + (s₃ + s₇)), then the last p mod 8 entries one by one.
double dense_dot(const double* row, Eigen::Index p, const double* x);

/// sum_j += ((w₀a₀ⱼ + w₁a₁ⱼ) + w₂a₂ⱼ) + w₃a₃ⱼ for the four rows a_r = rows + r·p.
void dense_update4(const double* rows, Eigen::Index p, const double* w, double* sum);

/// sum_j += w·a_j for one row.
void dense_update(const double* row, Eigen::Index p, double w, double* sum);

/// z[r + 4s] = dense_dot(rows + r·p, p, x + s·ldx) for the four rows r < 4 and the columns
/// s < `columns`: the same bytes as dense_dot (the same eight running sums, the same reduction),
/// each chunk of the four rows loaded once for a tile of columns.
void dense_dot4_many(const double* rows,
                     Eigen::Index p,
                     const double* x,
                     Eigen::Index ldx,
                     Eigen::Index columns,
                     double* z);

/// dense_update4(rows, p, w + 4s, sum + s·lds) for every column s < `columns`: the same bytes,
/// each chunk of the four rows loaded once for a tile of columns.
void dense_update4_many(const double* rows,
                        Eigen::Index p,
                        const double* w,
                        Eigen::Index columns,
                        double* sum,
                        Eigen::Index lds);

/// Columns per call of dense_gram_columns, and the multiple the leading dimension must be.
inline constexpr Eigen::Index kGramBlock = 8;

/// Where s(r, c) of an m-row matrix packed for dense_gram_columns lives: in column blocks of
/// four, each block's rows front to back (a block is 4m doubles).
inline Eigen::Index gram_packed_index(Eigen::Index m, Eigen::Index r, Eigen::Index c) {
  return (c - c % 4) * m + 4 * r + c % 4;
}

/// H(i, j) = Σ_r s(r, i)·s(r, j) for the columns j in [j_first, j_last) and the rows i ≥ j of
/// H (row-major ld × ld, zero on entry), s m × ld packed as gram_packed_index says; ld, j_first
/// and j_last multiples of kGramBlock. Each entry is summed over r = 0, 1, …, m − 1 in order, a
/// product and an addition each (no fused multiply-add), so the bytes are a plain loop's,
/// however the columns are split between calls. Entries above the diagonal within a block of
/// eight columns are filled too.
void dense_gram_columns(const double* packed,
                        Eigen::Index m,
                        Eigen::Index ld,
                        Eigen::Index j_first,
                        Eigen::Index j_last,
                        double* h);

/// The version this CPU runs: "avx" or "baseline".
std::string_view dense_kernel_isa();

/// The version of dense_dot4_many and dense_update4_many this CPU runs: "avx512" (256-bit
/// arithmetic with 32 registers, wider tiles; the same bytes), "avx" or "baseline".
std::string_view dense_many_kernel_isa();

}  // namespace stragglersim::models::internal

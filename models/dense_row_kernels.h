#pragma once
// Internal to models/: the arithmetic of the dense fused pass (row_kernels.h) on raw row-major
// arrays, compiled twice and chosen once per process by the CPU (GCC target_clones: AVX2 where
// the CPU has it, SSE2 otherwise). Both versions do the same operations in the same order —
// eight lanes per dot product reduced by a fixed tree, no fused multiply-add — so the results
// are the same bytes on every x86-64 CPU; only the speed differs.

#include <Eigen/Core>

namespace stragglersim::models::internal {

/// z[r] = Σ_k first[r·p + k]·x[k] for r < rows (rows ≤ 4), each row summed in eight lanes
/// (k mod 8) and reduced ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then the last p mod 8
/// terms in order: a row's dot product does not depend on the rows beside it.
void dense_dots(const double* first, Eigen::Index p, Eigen::Index rows, const double* x, double* z);

/// sum[k] += ((w[0]·a_0[k] + w[1]·a_1[k]) + w[2]·a_2[k]) + w[3]·a_3[k] for the four rows
/// a_r = first + r·p.
void dense_update4(const double* first, Eigen::Index p, const double* w, double* sum);

}  // namespace stragglersim::models::internal

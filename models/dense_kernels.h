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

/// The version this CPU runs: "avx" or "baseline".
std::string_view dense_kernel_isa();

}  // namespace stragglersim::models::internal

#pragma once
// Exact expected suboptimality of least squares under random group coefficients
// (docs/convergence.md §exact curves). With ∇F_g(x) = H_g x − h_g the step
//   x_{t+1} = (1 − γλ₂)y_t − γ Σ_g α_g (H_g y_t − h_g),   y_t = x_t + β_t(x_t − x_{t−1}),
// is affine in the state with coefficients independent of it, so the mean and the second
// moments E[x_t x_tᵀ], E[x_t x_{t−1}ᵀ] follow exact linear recursions in the coefficient moments
// (mean, E[α_g²], E[α_gα_h]). E[f(x_t)] − f* = ½ tr(Q(S_t − m_t m_tᵀ)) + ½(m_t − x*)ᵀQ(m_t − x*)
// with Q = Σ_g H_g + λ₂I. Cost O(K·p³) per iteration for K groups and p features.
// β_t = 0 is gradient descent; Nesterov (sim::Nesterov without μ) has β_t = max(0, (t−1)/(t+2)).

#include <Eigen/Core>
#include <vector>

#include "codes/gradient_code.h"
#include "sim/theory/coded_convergence.h"

namespace stragglersim::sim {

enum class CurveOptimizer { kGd, kNesterov };

/// Illegal: empty or mismatched H_g / h_g, γ ≤ 0, λ₂ < 0.
struct LeastSquaresCurveInputs {
  std::vector<Eigen::MatrixXd> hessians;  ///< H_g (p × p, symmetric)
  std::vector<Eigen::VectorXd> offsets;   ///< h_g
  double l2 = 0.0;
  double step = 1.0;
  CurveOptimizer optimizer = CurveOptimizer::kGd;
  CoefficientMoments moments;  ///< groups must equal hessians.size()
};

/// E[f(x_t)] − f* for t = 0..iterations from x₀ = 0 (f* at the minimum-norm minimiser).
[[nodiscard]] std::vector<double> least_squares_expected_gap(const LeastSquaresCurveInputs& in,
                                                             int iterations);

/// What the fourth moments need beyond LeastSquaresCurveInputs: the law of the coverage count.
struct CoverageLaw {
  std::vector<double> covered;  ///< P(N = j), j = 0..K (K = number of groups)
  codes::Rescale rescale = codes::Rescale::kNone;
  double expected_q = 0.0;  ///< the q the expected rescale divides by
  /// E[α_{g₁}⋯α_{g_a}] for a ≤ 4 indices taking exactly j distinct values (0 when j > K):
  /// Σ_N P(N)·w(N)^a·C(K − j, N − j)/C(K, N), w = 1, 1/(1 − q) or K/N by the rescale.
  [[nodiscard]] double product_moment(int a, int j) const;
};

/// Mean and standard deviation of f(x_t) − f* across runs, from the exact fourth moments of the
/// state z_t = (x_t, 1) (GD) or (x_t, x_{t−1}, 1) (Nesterov), dimension P. The next state is
/// (x⁺, r) with r = (1) (GD) or (x_t, 1) (Nesterov) carried over and x⁺ = B(α)w,
/// w = (y_t, 1) ∈ ℝ^{p+1}, B(α) = B₀ + Σ_g α_g G_g, B₀ = [(1 − γλ₂)I, 0], G_g = γ[−H_g, h_g].
/// E[z⁺⊗⁴] is symmetric, so only the blocks E[x⁺^{⊗k} ⊗ r^{⊗(4−k)}] = E[B(α)^{⊗k}]
/// E[w^{⊗k} ⊗ r^{⊗(4−k)}], k = 0..4, are computed, each on a (p + 1)⁴-sized tensor whatever P.
/// E[B(α)^{⊗k}] expands over which of the k slots take a G_g and the pattern of equal groups; by
/// Möbius inversion on the set partitions of the slots it becomes Σ_σ ĉ(σ) Π_{blocks B} (Σ_g G_g
/// on the slots of B), ĉ(σ) = Σ_{π ≤ σ} product_moment(a, |π|)·μ(π, σ). Patterns fall into
/// shapes up to permutation of the slots: one representative each, weighted by its count, then
/// a symmetrisation of the k slots. Cost per iteration about 11K + 10 (Nesterov) or 6K + 5 (GD)
/// mode products of 2p(p + 1)⁴ flops each; least_squares_gap_spread_flops counts them exactly.
/// `sd` has entries for t = 0..min(iterations, max_work / cost per iteration).
struct LeastSquaresGapSpread {
  std::vector<double> mean;  ///< E[f(x_t)] − f* (agrees with least_squares_expected_gap)
  std::vector<double> sd;    ///< sd of f(x_t) across runs
  double flops_per_iteration = 0.0;
};
/// Flops per iteration of least_squares_gap_spread (its mode products, counted exactly).
[[nodiscard]] double least_squares_gap_spread_flops(const LeastSquaresCurveInputs& in);
[[nodiscard]] LeastSquaresGapSpread least_squares_gap_spread(const LeastSquaresCurveInputs& in,
                                                             const CoverageLaw& law,
                                                             int iterations,
                                                             double max_work);

}  // namespace stragglersim::sim

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

}  // namespace stragglersim::sim

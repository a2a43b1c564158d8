#pragma once
// Seeded synthetic data sets. Every draw comes from Boost.Random on one mt19937_64 stream,
// so a (generator, sizes, seed) triple always gives the same bytes.

#include <cstdint>

#include "models/dataset.h"

namespace stragglersim::models {

/// Feature scales of a covariance Σ = diag(σ_0², …, σ_{p−1}²) with condition number κ:
/// σ_k² = κ^(−k/(p−1)), geometric from 1 down to 1/κ (consecutive eigenvalues in the ratio
/// κ^(−1/(p−1)); all 1 when κ = 1 or p = 1). The features are not rotated: Σ is diagonal in the
/// feature coordinates, so feature k has variance σ_k² and the features are independent. GD, its
/// step 1/β and the gradient codes are invariant under a rotation of the features, so a rotation
/// would change no iteration count, only cost O(p²) per row. Illegal: condition < 1.
[[nodiscard]] Eigen::VectorXd feature_scales(Eigen::Index features, double condition);

/// Dense logistic data: b_i = ±1 with probability ½, a_i = b_i·μ + Σ^{1/2} z_i, z_i ~ N(0, I_p),
/// where μ is a seeded Gaussian direction scaled to ‖μ‖ = separation and Σ has condition number
/// `condition` (feature_scales). Illegal: rows < 1, features < 1, separation < 0, condition < 1.
struct GaussianMixtureOptions {
  Eigen::Index rows = 1000;
  Eigen::Index features = 10;
  double separation = 1.5;
  std::uint64_t seed = 1;
  double condition = 1.0;
};
/// With `keep`, only those source rows are stored (in ascending order), every row still drawn:
/// memory is proportional to the rows kept, time to all rows. `labels` (optional) receives the
/// distinct labels of every row.
Dataset make_gaussian_mixture(const GaussianMixtureOptions& options,
                              RowKeep* keep = nullptr,
                              LabelValues* labels = nullptr);

/// Dense least-squares data: a_i = Σ^{1/2} z_i, z_i ~ N(0, I_p), with Σ of condition number
/// `condition` (feature_scales), x* ~ N(0, I_p/p), b_i = a_iᵀx* + noise·ε_i, ε_i ~ N(0, 1).
/// Gradient descent with step 1/β needs at most about κ·log(1/ε) iterations to reach relative
/// suboptimality ε, so `condition` sets how hard the problem is.
/// Illegal: rows < 1, features < 1, noise < 0, condition < 1.
/// The default condition κ = 100 makes GD with step 1/β need tens to hundreds of iterations to
/// reach relative suboptimality 1e-3: 92 at 12 000 × 300 (docs/model.md "Synthetic data").
struct LinearRegressionOptions {
  Eigen::Index rows = 1000;
  Eigen::Index features = 10;
  double noise = 0.5;
  std::uint64_t seed = 1;
  double condition = 100.0;
};
/// `keep` and `labels` as for make_gaussian_mixture.
Dataset make_linear_regression(const LinearRegressionOptions& options,
                               RowKeep* keep = nullptr,
                               LabelValues* labels = nullptr);

}  // namespace stragglersim::models

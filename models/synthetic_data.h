#pragma once
// Seeded synthetic data sets. Every draw comes from Boost.Random on one mt19937_64 stream,
// so a (generator, sizes, seed) triple always gives the same bytes.

#include <cstdint>

#include "models/dataset.h"

namespace stragglersim::models {

/// Dense logistic data: b_i = ±1 with probability ½, a_i ~ N(b_i·μ, I_p), where μ is a seeded
/// Gaussian direction scaled to ‖μ‖ = separation. Illegal: rows < 1, features < 1,
/// separation < 0.
struct GaussianMixtureOptions {
  Eigen::Index rows = 1000;
  Eigen::Index features = 10;
  double separation = 1.5;
  std::uint64_t seed = 1;
};
Dataset make_gaussian_mixture(const GaussianMixtureOptions& options);

/// Dense least-squares data: a_i ~ N(0, I_p), x* ~ N(0, I_p/p), b_i = a_iᵀx* + noise·ε_i,
/// ε_i ~ N(0, 1). Illegal: rows < 1, features < 1, noise < 0.
struct LinearRegressionOptions {
  Eigen::Index rows = 1000;
  Eigen::Index features = 10;
  double noise = 0.5;
  std::uint64_t seed = 1;
};
Dataset make_linear_regression(const LinearRegressionOptions& options);

}  // namespace stragglersim::models

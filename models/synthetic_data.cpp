#include "models/synthetic_data.h"

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <utility>

#include "models/base/invariant.h"

namespace stragglersim::models {

Eigen::VectorXd feature_scales(Eigen::Index features, double condition) {
  STRAGGLERSIM_ASSERT(condition >= 1.0, "feature_scales: condition must be >= 1");
  Eigen::VectorXd scales = Eigen::VectorXd::Ones(features);
  if (condition == 1.0 || features < 2) {
    return scales;
  }
  const double last = static_cast<double>(features - 1);
  for (Eigen::Index k = 0; k < features; ++k) {
    scales[k] = std::pow(condition, -0.5 * static_cast<double>(k) / last);
  }
  return scales;
}

// Draw order is part of the contract (same seed, same bytes), so it is fixed here:
// first the model vector (μ or x*), then row by row (label, then features, then noise).

Dataset make_gaussian_mixture(const GaussianMixtureOptions& options) {
  STRAGGLERSIM_ASSERT(options.rows >= 1, "gaussian_mixture: rows must be at least 1");
  STRAGGLERSIM_ASSERT(options.features >= 1, "gaussian_mixture: features must be at least 1");
  STRAGGLERSIM_ASSERT(options.separation >= 0.0, "gaussian_mixture: separation must be >= 0");
  const Eigen::VectorXd scales = feature_scales(options.features, options.condition);
  boost::random::mt19937_64 engine(options.seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  boost::random::bernoulli_distribution<double> coin(0.5);

  const Eigen::Index p = options.features;
  Eigen::VectorXd mu(p);
  for (Eigen::Index k = 0; k < p; ++k) {
    mu[k] = normal(engine);
  }
  mu *= options.separation / mu.norm();

  DenseRows a(options.rows, p);
  Eigen::VectorXd labels(options.rows);
  for (Eigen::Index i = 0; i < options.rows; ++i) {
    const double b = coin(engine) ? 1.0 : -1.0;
    labels[i] = b;
    for (Eigen::Index k = 0; k < p; ++k) {
      a(i, k) = b * mu[k] + scales[k] * normal(engine);
    }
  }
  return Dataset{std::move(a), std::move(labels)};
}

Dataset make_linear_regression(const LinearRegressionOptions& options) {
  STRAGGLERSIM_ASSERT(options.rows >= 1, "linear_regression: rows must be at least 1");
  STRAGGLERSIM_ASSERT(options.features >= 1, "linear_regression: features must be at least 1");
  STRAGGLERSIM_ASSERT(options.noise >= 0.0, "linear_regression: noise must be >= 0");
  const Eigen::VectorXd scales = feature_scales(options.features, options.condition);
  boost::random::mt19937_64 engine(options.seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);

  const Eigen::Index p = options.features;
  const double model_scale = 1.0 / std::sqrt(static_cast<double>(p));
  Eigen::VectorXd x_star(p);
  for (Eigen::Index k = 0; k < p; ++k) {
    x_star[k] = model_scale * normal(engine);
  }

  DenseRows a(options.rows, p);
  Eigen::VectorXd labels(options.rows);
  for (Eigen::Index i = 0; i < options.rows; ++i) {
    for (Eigen::Index k = 0; k < p; ++k) {
      a(i, k) = scales[k] * normal(engine);
    }
    labels[i] = a.row(i).dot(x_star) + options.noise * normal(engine);
  }
  return Dataset{std::move(a), std::move(labels)};
}

}  // namespace stragglersim::models

#include "models/synthetic_data.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <catch2/catch.hpp>
#include <cmath>

namespace stragglersim::models {
namespace {

const DenseRows& features(const Dataset& data) { return std::get<DenseRows>(data.features); }

}  // namespace

TEST_CASE("models: generators are reproducible per seed and differ across seeds",
          "[models][synthetic]") {
  const auto mixture = [](std::uint64_t seed) {
    return make_gaussian_mixture(GaussianMixtureOptions{50, 4, 1.5, seed});
  };
  CHECK(features(mixture(7)) == features(mixture(7)));
  CHECK(mixture(7).labels == mixture(7).labels);
  CHECK(features(mixture(7)) != features(mixture(8)));

  const auto regression = [](std::uint64_t seed) {
    return make_linear_regression(LinearRegressionOptions{50, 4, 0.5, seed});
  };
  CHECK(features(regression(7)) == features(regression(7)));
  CHECK(regression(7).labels == regression(7).labels);
  CHECK(features(regression(7)) != features(regression(8)));
  CHECK(regression(7).labels != regression(8).labels);
}

TEST_CASE("models: generator draws are pinned", "[models][synthetic]") {
  // Boost.Random's mt19937_64 and ziggurat normal give the same draws on every platform; these
  // values pin the draw order (model vector first, then row by row).
  const Dataset mixture = make_gaussian_mixture({3, 2, 1.5, 1});
  const Dataset regression = make_linear_regression({3, 2, 0.5, 1, 1.0});
  CAPTURE(features(mixture), mixture.labels, features(regression), regression.labels);
  CHECK(mixture.labels == Eigen::Vector3d(1.0, -1.0, -1.0));
  CHECK(features(mixture)(0, 0) == Approx(-1.0198416377059971).epsilon(1e-14));
  CHECK(features(mixture)(2, 1) == Approx(0.79510681316582654).epsilon(1e-14));
  CHECK(features(regression)(0, 0) == Approx(-0.61281862908331552).epsilon(1e-14));
  CHECK(regression.labels[2] == Approx(0.48988443362280476).epsilon(1e-14));
}

TEST_CASE("models: gaussian mixture has balanced labels and class means ±μ",
          "[models][synthetic]") {
  const Eigen::Index m = 20000;
  const Eigen::Index p = 3;
  const double separation = 1.5;
  const Dataset data = make_gaussian_mixture({m, p, separation, 42});
  const auto& a = features(data);
  const Eigen::ArrayXd b = data.labels.array();
  REQUIRE(((b == 1.0) || (b == -1.0)).all());
  // Fraction of +1 labels: standard error ½/√m.
  const double positive = static_cast<double>((b == 1.0).count()) / static_cast<double>(m);
  CHECK(std::abs(positive - 0.5) < 4.0 * 0.5 / std::sqrt(static_cast<double>(m)));
  // b_i·a_i ~ N(μ, I): its mean estimates μ with standard error 1/√m per coordinate.
  const Eigen::VectorXd mu = (a.array().colwise() * b).colwise().mean().transpose();
  CHECK(std::abs(mu.norm() - separation) < 4.0 * std::sqrt(static_cast<double>(p) / m));
  // a_i − b_i·μ̂ has unit variance per coordinate: standard error √(2/m).
  const Eigen::MatrixXd centred = a - b.matrix() * mu.transpose();
  const Eigen::ArrayXd variances = centred.array().square().colwise().mean().transpose();
  CHECK((variances - 1.0).abs().maxCoeff() < 4.0 * std::sqrt(2.0 / static_cast<double>(m)));
}

TEST_CASE("models: linear regression residual variance is noise squared", "[models][synthetic]") {
  const Eigen::Index m = 20000;
  const Eigen::Index p = 5;
  const double noise = 0.5;
  const Dataset data = make_linear_regression({m, p, noise, 3, 1.0});
  const auto& a = features(data);
  const Eigen::VectorXd x_hat = a.colPivHouseholderQr().solve(data.labels);
  const double residual = (a * x_hat - data.labels).squaredNorm() / static_cast<double>(m - p);
  // Sample variance of m Gaussian residuals: standard error σ²·√(2/m).
  CHECK(std::abs(residual - noise * noise) < 4.0 * noise * noise * std::sqrt(2.0 / m));
  // x* ~ N(0, I/p): ‖x*‖² has mean 1; with p = 5 it stays below 5 with overwhelming probability.
  CHECK(x_hat.squaredNorm() < 5.0);
  CHECK(x_hat.squaredNorm() > 0.0);
  // Features are standard normal.
  CHECK(std::abs(a.array().square().mean() - 1.0) < 4.0 * std::sqrt(2.0 / (m * p)));
}

TEST_CASE("models: generators reject illegal options", "[models][synthetic]") {
  CHECK_THROWS_AS(make_gaussian_mixture({0, 3, 1.0, 1}), std::logic_error);
  CHECK_THROWS_AS(make_gaussian_mixture({3, 0, 1.0, 1}), std::logic_error);
  CHECK_THROWS_AS(make_gaussian_mixture({3, 3, -1.0, 1}), std::logic_error);
  CHECK_THROWS_AS(make_linear_regression({0, 3, 1.0, 1}), std::logic_error);
  CHECK_THROWS_AS(make_linear_regression({3, 0, 1.0, 1}), std::logic_error);
  CHECK_THROWS_AS(make_linear_regression({3, 3, -0.1, 1}), std::logic_error);
}

TEST_CASE("models: condition sets the spectrum of the feature covariance", "[models][synthetic]") {
  using stragglersim::models::feature_scales;
  // σ_k² = κ^(−k/(p−1)): the first and last variances are 1 and 1/κ, geometric between.
  const Eigen::VectorXd s = feature_scales(5, 10'000.0);
  CHECK(s[0] == 1.0);
  CHECK(s[4] * s[4] == Approx(1e-4).epsilon(1e-12));
  CHECK(s[2] * s[2] == Approx(1e-2).epsilon(1e-12));
  CHECK(feature_scales(3, 1.0) == Eigen::VectorXd::Ones(3));
  CHECK_THROWS_AS(feature_scales(3, 0.5), std::logic_error);

  // The condition only scales the columns: the same normal draws, column k times σ_k exactly
  // (condition 1 multiplies by exactly 1).
  const DenseRows unit = features(make_linear_regression({40, 3, 0.5, 9, 1.0}));
  const DenseRows scaled = features(make_linear_regression({40, 3, 0.5, 9, 100.0}));
  const Eigen::VectorXd sigma = feature_scales(3, 100.0);
  for (Eigen::Index k = 0; k < 3; ++k) {
    CHECK(scaled.col(k) == unit.col(k) * sigma[k]);
  }

  // Sample column variances against σ_k², within 4 standard errors (Var of a sample variance of
  // m normal draws is 2σ⁴/(m − 1)); the labels still follow the planted model.
  const Eigen::Index m = 20'000;
  const Eigen::Index p = 4;
  const double kappa = 400.0;
  for (const bool mixture : {false, true}) {
    const Dataset data = mixture ? make_gaussian_mixture({m, p, 0.0, 3, kappa})
                                 : make_linear_regression({m, p, 0.5, 3, kappa});
    const DenseRows& a = features(data);
    for (Eigen::Index k = 0; k < p; ++k) {
      const double expected = std::pow(kappa, -static_cast<double>(k) / static_cast<double>(p - 1));
      const double mean = a.col(k).mean();
      const double variance = (a.col(k).array() - mean).square().sum() / static_cast<double>(m - 1);
      const double se = expected * std::sqrt(2.0 / static_cast<double>(m - 1));
      INFO("mixture " << mixture << " column " << k);
      CHECK(std::abs(variance - expected) < 4.0 * se);
    }
  }
}

TEST_CASE("models: the sample covariance has the requested condition number",
          "[models][synthetic]") {
  // λ_k of AᵀA/m for m draws of N(0, Σ) with distinct eigenvalues are asymptotically independent
  // normals with variance 2λ_k²/m (Anderson 1963), so log of λ_max/λ_min has standard error 2/√m;
  // the O(p/m) bias is 1e-4 here, far below it.
  const Eigen::Index m = 100'000;
  const Eigen::Index p = 8;
  const double se = 2.0 / std::sqrt(static_cast<double>(m));
  const auto sample_condition = [](const Dataset& data) {
    const DenseRows& a = features(data);
    const Eigen::MatrixXd gram = a.transpose() * a / static_cast<double>(a.rows());
    const Eigen::VectorXd eigenvalues =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram).eigenvalues();
    return eigenvalues.maxCoeff() / eigenvalues.minCoeff();
  };
  // linear_regression at its default condition, and the mixture (separation 0: no class means)
  // at an explicit one.
  const LinearRegressionOptions defaults{m, p, 0.5, 11};
  CHECK(defaults.condition == 100.0);
  const double regression = sample_condition(make_linear_regression(defaults));
  CAPTURE(regression);
  CHECK(std::abs(std::log(regression / defaults.condition)) < 4.0 * se);
  const double mixture = sample_condition(make_gaussian_mixture({m, p, 0.0, 12, 1000.0}));
  CAPTURE(mixture);
  CHECK(std::abs(std::log(mixture / 1000.0)) < 4.0 * se);
}

}  // namespace stragglersim::models

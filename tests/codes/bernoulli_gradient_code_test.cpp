#include "codes/bernoulli_gradient_code.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "codes/code_analysis.h"
#include "tests/test_support.h"

using stragglersim::codes::BernoulliGradientCode;
using stragglersim::codes::for_each_straggler_pattern;
using stragglersim::testing::Sample;

TEST_CASE("codes: BGC one-step error matches k(n-d)/(d r)", "[codes][bgc]") {
  // The expectation is over B and the pattern, so every sample draws a fresh code (seed = sample
  // index) and a uniformly random set of r workers.
  const int n = 40;
  const int k = 40;
  const double d = 4.0;
  const int r = 20;
  Sample one_step;
  Sample optimal;
  for (int t = 0; t < 2000; ++t) {
    const BernoulliGradientCode code(n, k, d, 1000 + static_cast<std::uint64_t>(t));
    for_each_straggler_pattern(
        n, n - r, 0, 1, static_cast<std::uint64_t>(t), [&](std::span<const int> heard) {
          const auto one = code.decode_one_step(heard);
          const auto opt = code.decode_optimal(heard);
          one_step.add(one.error);
          optimal.add(opt.error);
          // The least-squares decode is never worse than the fixed weights.
          REQUIRE(opt.error <= one.error + 1e-9);
        });
  }
  const BernoulliGradientCode reference(n, k, d, 1);
  const double formula = reference.expected_one_step_error(r);
  INFO("mean " << one_step.mean() << " ± " << one_step.se() << ", formula " << formula);
  CHECK(std::abs(one_step.mean() - formula) < 4.0 * one_step.se());
  CHECK(optimal.mean() < one_step.mean());
}

TEST_CASE("codes: BGC entries have density d/n and the one-step decode is unbiased",
          "[codes][bgc]") {
  // Independent properties rather than the construction: over many codes, the share of ones in B
  // is p = d/n (binomial s.e.), the one-step α_j = Σ_i a_i B_ij has mean 1 (unbiased, sample
  // s.e.), and α_j = 0 exactly where no heard worker holds j.
  const int n = 40;
  const int k = 30;
  const double d = 4.0;
  const std::vector<int> heard = {0, 3, 5, 8, 11, 12, 17, 20, 21, 26, 29, 30, 33, 36, 39};
  const int codes = 400;
  double ones = 0.0;
  Sample alphas;
  for (int t = 0; t < codes; ++t) {
    const BernoulliGradientCode code(n, k, d, 500 + static_cast<std::uint64_t>(t));
    const Eigen::MatrixXd& b = code.assignment();
    ones += b.sum();
    const auto one = code.decode_one_step(heard);
    const Eigen::VectorXd alpha = b.transpose() * one.weights;
    for (int j = 0; j < k; ++j) {
      double holders = 0.0;
      for (const int i : heard) {
        holders += b(i, j);
      }
      if (holders == 0.0) {
        CHECK(alpha(j) == 0.0);
      }
      alphas.add(alpha(j));
    }
    // The least-squares decode never does worse than the fixed weights.
    CHECK(code.decode_optimal(heard).error <= one.error + 1e-9);
  }
  const double cells = static_cast<double>(codes) * n * k;
  const double p = d / n;
  INFO("density " << ones / cells << ", p " << p);
  CHECK(std::abs(ones / cells - p) < 4.0 * std::sqrt(p * (1.0 - p) / cells));
  INFO("mean alpha " << alphas.mean() << " +- " << alphas.se());
  CHECK(std::abs(alphas.mean() - 1.0) < 4.0 * alphas.se());
  // A worker heard twice counts once.
  const BernoulliGradientCode code(10, 10, 2.0, 3);
  const std::vector<int> twice = {1, 4, 4, 7, 9};
  const std::vector<int> once = {1, 4, 7, 9};
  CHECK(code.decode_one_step(twice).weights == code.decode_one_step(once).weights);
}

TEST_CASE("codes: BGC allows partitions held by nobody", "[codes][bgc]") {
  // p = 1/20 per entry: with 20 × 20 entries some column is empty for this seed.
  const BernoulliGradientCode code(20, 20, 1.0, 5);
  const Eigen::VectorXd column_counts = code.assignment().colwise().sum().transpose();
  REQUIRE((column_counts.array() == 0.0).any());
  std::vector<int> everyone(20);
  for (int i = 0; i < 20; ++i) {
    everyone[static_cast<std::size_t>(i)] = i;
  }
  const auto d = code.decode_optimal(everyone);
  // Each empty partition costs exactly 1; the others can be matched... at best.
  CHECK(d.error >= static_cast<double>((column_counts.array() == 0.0).count()) - 1e-9);
  CHECK_FALSE(code.decode_exact(everyone).exact);
}

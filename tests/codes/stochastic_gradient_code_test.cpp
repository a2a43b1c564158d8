#include "codes/stochastic_gradient_code.h"

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <catch2/catch.hpp>
#include <cmath>

#include "codes/code_analysis.h"

using stragglersim::codes::StochasticGradientCode;

TEST_CASE("codes: SGC assigns each partition to d distinct workers with balanced loads",
          "[codes][sgc]") {
  const auto params = GENERATE(
      std::tuple{10, 10, 3}, std::tuple{12, 30, 2}, std::tuple{7, 9, 7}, std::tuple{30, 30, 5});
  const auto [n, k, d] = params;
  const StochasticGradientCode code(n, k, d, 9);
  const Eigen::MatrixXd& b = code.assignment();
  for (int j = 0; j < k; ++j) {
    CHECK((b.col(j).array() != 0.0).count() == d);
    CHECK(b.col(j).sum() == Approx(1.0));
  }
  for (int i = 0; i < n; ++i) {
    const auto held = static_cast<int>(code.support(i).size());
    CHECK(held >= (k * d) / n);
    CHECK(held <= (k * d + n - 1) / n);
  }
}

namespace {

/// Each partition's coefficient α_j averages 1 within 4 standard errors, from the sums of α and
/// α² over `samples` decodes.
void check_mean_one(const Eigen::VectorXd& sum, const Eigen::VectorXd& sum_sq, int samples) {
  for (Eigen::Index j = 0; j < sum.size(); ++j) {
    const double mean = sum(j) / samples;
    const double se = std::sqrt((sum_sq(j) / samples - mean * mean) / (samples - 1));
    INFO("partition " << j << ": mean α " << mean << " ± " << se);
    CHECK(std::abs(mean - 1.0) < 4.0 * se);
  }
}

}  // namespace

TEST_CASE("codes: SGC one-step decode is unbiased", "[codes][sgc]") {
  const int n = 12;
  const int k = 12;
  const StochasticGradientCode given_p(n, k, 3, 4, 0.3);
  const StochasticGradientCode empirical(n, k, 3, 4);
  const int samples = 4000;

  SECTION("independent stragglers with the p given") {
    boost::random::mt19937_64 engine(77);
    boost::random::bernoulli_distribution<double> heard_draw(0.7);
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(k);
    Eigen::VectorXd sum_sq = Eigen::VectorXd::Zero(k);
    for (int t = 0; t < samples; ++t) {
      std::vector<int> heard;
      for (int i = 0; i < n; ++i) {
        if (heard_draw(engine)) {
          heard.push_back(i);
        }
      }
      const auto d = given_p.decode_one_step(heard);
      sum += d.alpha;
      sum_sq += d.alpha.cwiseProduct(d.alpha);
    }
    check_mean_one(sum, sum_sq, samples);
  }

  SECTION("a random set of r workers with the empirical p") {
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(k);
    Eigen::VectorXd sum_sq = Eigen::VectorXd::Zero(k);
    stragglersim::codes::for_each_straggler_pattern(
        n, 5, 0, samples, 8, [&](std::span<const int> heard) {
          const auto d = empirical.decode_one_step(heard);
          CHECK(d.weights(heard[0]) == Approx(12.0 / 7.0));
          sum += d.alpha;
          sum_sq += d.alpha.cwiseProduct(d.alpha);
        });
    check_mean_one(sum, sum_sq, samples);
  }
}

// The numerics the estimators share (fit/fit_support.h): standard errors of a log-likelihood
// whose information is known, the search sample's order statistics, the bounded Brent search on
// NaN values, and the two-thread task runner.

#include "fit/fit_support.h"

#include <Eigen/Core>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

namespace stragglersim::sim {

TEST_CASE("fit: standard errors of a gaussian log-likelihood are its sigmas", "[fit]") {
  // log L = −(x − 1)²/(2·0.3²) − (y + 2)²/(2·0.05²): −H = diag(1/0.3², 1/0.05²) exactly, and the
  // central differences of a quadratic are exact up to rounding.
  const LogLikelihood ll = [](const Eigen::VectorXd& x) {
    return -(x(0) - 1.0) * (x(0) - 1.0) / (2.0 * 0.09) - (x(1) + 2.0) * (x(1) + 2.0) / 0.005;
  };
  Eigen::VectorXd at(2);
  at << 1.0, -2.0;
  const auto se = standard_errors(ll, at);
  REQUIRE(se[0].has_value());
  REQUIRE(se[1].has_value());
  CHECK(*se[0] == Approx(0.3).epsilon(1e-6));
  CHECK(*se[1] == Approx(0.05).epsilon(1e-6));
  // A minimum, not a maximum: −H is not positive definite, no standard errors.
  const LogLikelihood convex = [](const Eigen::VectorXd& x) { return x(0) * x(0); };
  CHECK_FALSE(standard_errors(convex, Eigen::VectorXd::Constant(1, 0.5))[0].has_value());
}

TEST_CASE(
    "fit: the search sample keeps the smallest, the largest and evenly spaced order "
    "statistics",
    "[fit]") {
  std::vector<double> sorted(101);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    sorted[i] = static_cast<double>(i) * 0.5;
  }
  CHECK(search_sample(sorted, 200) == sorted);
  // m = 11 of n = 101: every 10th order statistic.
  const std::vector<double> sample = search_sample(sorted, 11);
  REQUIRE(sample.size() == 11);
  for (std::size_t i = 0; i < sample.size(); ++i) {
    CHECK(sample[i] == sorted[10 * i]);
  }
  CHECK(sorted_copy(std::vector<double>{3.0, 1.0, 2.0}) == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(sorted_pool({{3.0, 0.5}, {2.0}, {}}) == std::vector<double>{0.5, 2.0, 3.0});
}

TEST_CASE("fit: brent_minimum finds a minimum and treats NaN as infinity", "[fit]") {
  const auto [x, value] =
      brent_minimum([](double v) { return (v - 0.3) * (v - 0.3) + 2.0; }, -1.0, 1.0, 40);
  CHECK(x == Approx(0.3).margin(1e-6));
  CHECK(value == Approx(2.0));
  // NaN to the right of 0.5: the search stays on the finite side and ends.
  const auto [y, at_y] = brent_minimum(
      [](double v) { return v > 0.5 ? std::nan("") : (v - 0.7) * (v - 0.7); }, 0.0, 1.0, 40);
  CHECK(y <= 0.5);
  CHECK(std::isfinite(at_y));
}

TEST_CASE("fit: run_on_two_threads runs each task once and rethrows the first error", "[fit]") {
  std::vector<std::atomic<int>> runs(7);
  std::vector<std::function<void()>> tasks;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    tasks.emplace_back([&runs, i] { ++runs[i]; });
  }
  run_on_two_threads(tasks);
  for (const auto& r : runs) {
    CHECK(r.load() == 1);
  }
  int after = 0;
  const std::vector<std::function<void()>> failing = {[] {},
                                                      [] { throw std::runtime_error("first"); },
                                                      [] { throw std::logic_error("second"); },
                                                      [&] { ++after; }};
  CHECK_THROWS_WITH(run_on_two_threads(failing), "first");
  CHECK(after == 1);  // every task ran before the rethrow
}

TEST_CASE("fit: finish fills log L, AIC and the KS test, and unfitted keeps the reason", "[fit]") {
  FamilyFit fit;
  fit.parameter_count = 2;
  finish(fit, -10.0, {0.25, 0.5, 0.75}, [](double t) { return t; });
  CHECK(fit.log_likelihood == -10.0);
  CHECK(fit.aic == 2.0 * 2 + 20.0);
  CHECK(fit.ks.statistic == Approx(0.25));
  const FamilyFit none = unfitted("pareto", "needs at least three distinct times");
  CHECK(none.family == "pareto");
  CHECK_FALSE(none.fitted());
  CHECK(shifted_exponential_cdf(1.0, 2.0, 0.5) == 0.0);
  CHECK(shifted_exponential_cdf(1.0, 2.0, 1.5) == Approx(1.0 - std::exp(-1.0)));
}

}  // namespace stragglersim::sim

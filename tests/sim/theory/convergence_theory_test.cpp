// The PL bound of docs/model.md §6, checked against gradient descent with erased groups on a small
// quadratic, and the predicted log n speedup of ErasureHead.

#include "sim/theory/convergence_theory.h"

#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include "models/base/random_stream.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {

TEST_CASE("sim: the PL bound contracts to its noise floor", "[sim][theory][convergence]") {
  PlBoundParameters p;
  p.smoothness = 4.0;
  p.pl_constant = 0.5;
  p.step = 0.25;
  p.zeta_squared = 3.0;
  p.initial_gap = 10.0;
  p.q = 0.2;
  p.q2 = 0.05;
  const double rho = 1.0 - 0.5 * 0.25 * 0.8;
  const double floor = 4.0 * 0.25 * 0.15 * 3.0 / (2.0 * 0.5 * 0.8);
  CHECK(pl_contraction(p) == Approx(rho));
  CHECK(pl_noise_floor(p) == Approx(floor));
  const auto bound = pl_bound(p, 50);
  REQUIRE(bound.size() == 51);
  for (std::size_t t = 0; t < bound.size(); ++t) {
    CHECK(bound[t] == Approx(std::pow(rho, static_cast<double>(t)) * 10.0 + floor));
  }

  SECTION("time to reach a suboptimality") {
    const double eps = 1.0;
    const auto t = iterations_to_suboptimality(p, eps);
    REQUIRE(t);
    const auto b = pl_bound(p, static_cast<int>(*t));
    CHECK(b.back() <= eps);
    CHECK(b[b.size() - 2] > eps);
    CHECK(*time_to_suboptimality(p, eps, 3.5) == Approx(3.5 * static_cast<double>(*t)));
    CHECK_FALSE(iterations_to_suboptimality(p, 0.5 * floor));
    CHECK(iterations_to_suboptimality(p, 20.0) == 0L);
  }
  SECTION("exact schemes have no floor") {
    p.q = 0.0;
    p.q2 = 0.0;
    CHECK(pl_noise_floor(p) == 0.0);
    CHECK(pl_bound(p, 3)[3] == Approx(10.0 * std::pow(1.0 - 0.125, 3)));
  }
  SECTION("illegal parameters") {
    p.step = 1.0;  // > 1/β
    CHECK_THROWS_AS(pl_contraction(p), std::logic_error);
    p.step = 0.25;
    p.q2 = 0.3;  // > q
    CHECK_THROWS_AS(pl_noise_floor(p), std::logic_error);
  }
}

TEST_CASE("sim: gradient descent with first-r group erasures stays under the PL bound",
          "[sim][theory][convergence][statistical]") {
  // f(x) = Σ_j ½ (x − c_j)ᵀ D_j (x − c_j), k = n = 8 partitions, FRC d = 2 (4 groups of 2
  // partitions), r = 3 of 8 workers heard. The unscaled estimator sums ∇F_g over covered groups.
  const int n = 8;
  const int d = 2;
  const int r = 3;
  const int groups = n / d;
  std::vector<Eigen::Vector2d> diag(n);
  std::vector<Eigen::Vector2d> centre(n);
  for (int j = 0; j < n; ++j) {
    diag[static_cast<std::size_t>(j)] = Eigen::Vector2d(0.5 + 0.1 * j, 0.1 + 0.05 * (j % 3));
    centre[static_cast<std::size_t>(j)] = Eigen::Vector2d(std::sin(j + 1.0), std::cos(2.0 * j));
  }
  Eigen::Vector2d h = Eigen::Vector2d::Zero();
  Eigen::Vector2d b = Eigen::Vector2d::Zero();
  for (int j = 0; j < n; ++j) {
    h += diag[static_cast<std::size_t>(j)];
    b += diag[static_cast<std::size_t>(j)].cwiseProduct(centre[static_cast<std::size_t>(j)]);
  }
  const Eigen::Vector2d x_star = b.cwiseQuotient(h);
  const auto f = [&](const Eigen::Vector2d& x) {
    double v = 0.0;
    for (int j = 0; j < n; ++j) {
      const Eigen::Vector2d e = x - centre[static_cast<std::size_t>(j)];
      v += 0.5 * e.dot(diag[static_cast<std::size_t>(j)].cwiseProduct(e));
    }
    return v;
  };
  const auto group_gradient = [&](int g, const Eigen::Vector2d& x) {
    Eigen::Vector2d grad = Eigen::Vector2d::Zero();
    for (int j = g * d; j < (g + 1) * d; ++j) {
      grad +=
          diag[static_cast<std::size_t>(j)].cwiseProduct(x - centre[static_cast<std::size_t>(j)]);
    }
    return grad;
  };
  const double f_star = f(x_star);
  const double beta = h.maxCoeff();
  const double mu = h.minCoeff();
  const Eigen::Vector2d x0(3.0, -2.0);

  PlBoundParameters p;
  p.smoothness = beta;
  p.pl_constant = mu;
  p.step = 1.0 / beta;
  p.initial_gap = f(x0) - f_star;
  p.q = erasure_probability_first_r(n, d, r);
  p.q2 = erasure_probability_first_r(n, 2 * d, r);

  const int iterations = 60;
  const int runs = 4000;
  RandomEngine rng = make_engine(77, Stream::kDelays);
  ShiftedExponentialDelay delay(std::vector<double>(n, 2.0),
                                {.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
  std::vector<double> times(n);
  std::vector<int> order(n);
  std::vector<double> gap_sum(iterations + 1, 0.0);
  std::vector<double> gap_sq(iterations + 1, 0.0);
  double zeta2 = 0.0;
  for (int run = 0; run < runs; ++run) {
    Eigen::Vector2d x = x0;
    for (int t = 0; t <= iterations; ++t) {
      const double gap = f(x) - f_star;
      gap_sum[static_cast<std::size_t>(t)] += gap;
      gap_sq[static_cast<std::size_t>(t)] += gap * gap;
      if (t == iterations) {
        break;
      }
      delay.sample(0, rng, times);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + r, order.end(), [&](int a, int c) {
        return times[static_cast<std::size_t>(a)] < times[static_cast<std::size_t>(c)];
      });
      std::vector<char> covered(groups, 0);
      for (int k = 0; k < r; ++k) {
        covered[static_cast<std::size_t>(order[static_cast<std::size_t>(k)] / d)] = 1;
      }
      Eigen::Vector2d estimate = Eigen::Vector2d::Zero();
      double zeta_now = 0.0;
      for (int g = 0; g < groups; ++g) {
        const Eigen::Vector2d gg = group_gradient(g, x);
        zeta_now += gg.squaredNorm();
        if (covered[static_cast<std::size_t>(g)] != 0) {
          estimate += gg;
        }
      }
      zeta2 = std::max(zeta2, zeta_now);
      x -= p.step * estimate;
    }
  }
  // ζ² is the largest Σ_g ‖∇F_g‖² met along the runs, which is what the bound assumes.
  p.zeta_squared = zeta2;
  const auto bound = pl_bound(p, iterations);
  for (int t = 0; t <= iterations; ++t) {
    const double mean = gap_sum[static_cast<std::size_t>(t)] / runs;
    const double var = gap_sq[static_cast<std::size_t>(t)] / runs - mean * mean;
    INFO("t " << t << ": mean gap " << mean << " bound " << bound[static_cast<std::size_t>(t)]);
    CHECK(mean <= bound[static_cast<std::size_t>(t)] + 4.0 * std::sqrt(std::max(var, 0.0) / runs));
  }
}

TEST_CASE("sim: ErasureHead's predicted speedup grows like log n", "[sim][theory][convergence]") {
  const std::vector<int> ns = {16, 32, 64, 128, 1 << 12, 1 << 13, 1 << 20, 1 << 21};
  const auto points = predicted_speedup(ns, SpeedupOptions{}, 1.0, 1.0, TailScaling::kLoad);
  REQUIRE(points.size() == ns.size());
  const auto& p64 = points[2];
  CHECK(p64.r == 32);
  CHECK(p64.uncoded == Approx(5.7439).margin(1e-4));
  CHECK(p64.frc == Approx(6.0585).margin(1e-4));
  CHECK(p64.erasurehead == Approx(3.3708).margin(1e-4));
  CHECK(p64.q == Approx(0.246032).margin(1e-6));
  CHECK(p64.speedup_vs_uncoded == Approx(5.7439 / 3.3708).epsilon(1e-4));
  CHECK(p64.speedup_vs_frc == Approx(6.0585 / 3.3708).epsilon(1e-4));

  // Uncoded 1 + H_n against ErasureHead 2(1 + H_n − H_{n/2}) → 2(1 + ln 2): the speedup grows by
  // ln 2 / (2(1 + ln 2)) ≈ 0.2047 per doubling of n.
  const double limit = std::numbers::ln2 / (2.0 * (1.0 + std::numbers::ln2));
  const auto growth = speedup_growth_per_doubling(points);
  REQUIRE(growth.size() == ns.size() - 1);
  CHECK(growth[4] == Approx(limit).margin(2e-3));  // 2^12 → 2^13
  CHECK(growth[6] == Approx(limit).margin(1e-5));  // 2^20 → 2^21
  for (const auto& pt : points) {
    CHECK(pt.speedup_vs_uncoded > 1.0);
  }
}

}  // namespace stragglersim::sim

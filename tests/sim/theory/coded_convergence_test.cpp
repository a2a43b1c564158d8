// The coverage distribution, coefficient moments, exact least-squares curve and coded PL bound
// (docs/convergence.md), each against exhaustive enumeration or a hand computation.

#include "sim/theory/coded_convergence.h"

#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/least_squares_curve.h"

namespace stragglersim::sim {
namespace {

/// Every r-subset of n workers as a bit mask.
std::vector<unsigned> subsets(int n, int r) {
  std::vector<unsigned> out;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) == r) {
      out.push_back(mask);
    }
  }
  return out;
}

/// Group coefficients of one heard set (FRC, groups of d consecutive workers).
std::vector<double> group_alpha(
    unsigned mask, int groups, int d, codes::Rescale rescale, double q) {
  std::vector<double> alpha(static_cast<std::size_t>(groups), 0.0);
  int covered = 0;
  for (int g = 0; g < groups; ++g) {
    const unsigned bits = ((1u << d) - 1u) << (g * d);
    if ((mask & bits) != 0) {
      alpha[static_cast<std::size_t>(g)] = 1.0;
      ++covered;
    }
  }
  double s = 1.0;
  if (rescale == codes::Rescale::kExpected) {
    s = 1.0 / (1.0 - q);
  } else if (rescale == codes::Rescale::kEmpirical && covered > 0) {
    s = static_cast<double>(groups) / covered;
  }
  for (double& a : alpha) {
    a *= s;
  }
  return alpha;
}

}  // namespace

TEST_CASE("sim: covered-group distribution and coefficient moments match enumeration",
          "[sim][theory][convergence]") {
  const int groups = 4;
  const int d = 3;
  for (const int r : {1, 2, 3, 5, 8, 12}) {
    const auto dist = covered_groups_first_r(groups, d, r);
    const auto all = subsets(groups * d, r);
    std::vector<double> counted(static_cast<std::size_t>(groups) + 1, 0.0);
    for (const unsigned mask : all) {
      const auto a = group_alpha(mask, groups, d, codes::Rescale::kNone, 0.0);
      int n = 0;
      for (const double v : a) {
        n += v > 0.0 ? 1 : 0;
      }
      counted[static_cast<std::size_t>(n)] += 1.0 / static_cast<double>(all.size());
    }
    for (int j = 0; j <= groups; ++j) {
      CHECK(dist[static_cast<std::size_t>(j)] ==
            Approx(counted[static_cast<std::size_t>(j)]).margin(1e-14));
    }
    const double q = erasure_probability_first_r(groups * d, d, r);
    for (const auto rescale :
         {codes::Rescale::kNone, codes::Rescale::kExpected, codes::Rescale::kEmpirical}) {
      const CoefficientMoments m = coefficient_moments(dist, rescale, q);
      double mean = 0.0;
      double second = 0.0;
      double cross = 0.0;
      for (const unsigned mask : all) {
        const auto a = group_alpha(mask, groups, d, rescale, q);
        const double w = 1.0 / static_cast<double>(all.size());
        mean += w * a[0];
        second += w * a[0] * a[0];
        cross += w * a[0] * a[1];
      }
      CHECK(m.mean == Approx(mean).epsilon(1e-12));
      CHECK(m.second == Approx(second).epsilon(1e-12));
      CHECK(m.cross == Approx(cross).margin(1e-12));
    }
  }
  const auto independent = covered_groups_independent(3, 0.25);
  CHECK(independent[0] == Approx(0.25 * 0.25 * 0.25));
  CHECK(independent[2] == Approx(3 * 0.75 * 0.75 * 0.25));
}

TEST_CASE("sim: the exact least-squares curve equals the average over every coverage path",
          "[sim][theory][convergence]") {
  // Two groups, uncoded, first_r r = 1 of 2: each iteration one group is heard, each with
  // probability ½, independently across iterations: 2^T equally likely paths.
  Eigen::MatrixXd h0(2, 2);
  h0 << 2.0, 0.5, 0.5, 1.0;
  Eigen::MatrixXd h1(2, 2);
  h1 << 1.0, -0.3, -0.3, 0.7;
  const Eigen::Vector2d b0(1.0, -2.0);
  const Eigen::Vector2d b1(0.5, 1.5);
  const double l2 = 0.3;
  const double step = 0.25;
  const int iterations = 8;
  const Eigen::Matrix2d q = h0 + h1 + l2 * Eigen::Matrix2d::Identity();
  const Eigen::Vector2d x_star = q.ldlt().solve(b0 + b1);
  for (const auto optimizer : {CurveOptimizer::kGd, CurveOptimizer::kNesterov}) {
    for (const auto rescale : {codes::Rescale::kNone, codes::Rescale::kEmpirical}) {
      std::vector<double> expected(iterations + 1, 0.0);
      for (unsigned path = 0; path < (1u << iterations); ++path) {
        Eigen::Vector2d x = Eigen::Vector2d::Zero();
        Eigen::Vector2d prev = x;
        for (int t = 0; t <= iterations; ++t) {
          const Eigen::Vector2d e = x - x_star;
          expected[static_cast<std::size_t>(t)] += 0.5 * e.dot(q * e) / (1u << iterations);
          if (t == iterations) {
            break;
          }
          const double momentum =
              optimizer == CurveOptimizer::kNesterov && t >= 1 ? (t - 1.0) / (t + 2.0) : 0.0;
          const Eigen::Vector2d y = x + momentum * (x - prev);
          const bool first = ((path >> t) & 1u) != 0;
          const double s = rescale == codes::Rescale::kEmpirical ? 2.0 : 1.0;
          const Eigen::Vector2d g =
              first ? Eigen::Vector2d(s * (h0 * y - b0)) : Eigen::Vector2d(s * (h1 * y - b1));
          prev = x;
          x = y - step * (g + l2 * y);
        }
      }
      LeastSquaresCurveInputs in;
      in.hessians = {h0, h1};
      in.offsets = {b0, b1};
      in.l2 = l2;
      in.step = step;
      in.optimizer = optimizer;
      in.moments = coefficient_moments(covered_groups_first_r(2, 1, 1), rescale, 0.5);
      const auto curve = least_squares_expected_gap(in, iterations);
      for (int t = 0; t <= iterations; ++t) {
        CHECK(curve[static_cast<std::size_t>(t)] ==
              Approx(expected[static_cast<std::size_t>(t)]).epsilon(1e-11));
      }
    }
  }
}

TEST_CASE("sim: the coded bound on the issue's smallest case", "[sim][theory][convergence]") {
  // f(x) = ½(x − 1)² + ½x² split into 100 equal partitions, uncoded, first_r r = 50 of 100:
  // exactly 50 partitions are heard, so x_t → x_c = 1/3 and f(x_c) − f* = 1/36 exactly.
  CodedBoundInputs in;
  in.smoothness = 2.0;
  in.pl_constant = 2.0;
  in.l2 = 1.0;
  in.step = 0.5;
  const auto m = coefficient_moments(covered_groups_first_r(100, 1, 50), codes::Rescale::kNone, 0);
  in.mean = m.mean;
  in.variance = covariance_top_eigenvalue(m);
  in.zeta_star_squared = 100.0 * std::pow(0.5 / 100.0, 2);
  in.group_smoothness_squared = 100.0 * std::pow(1.0 / 100.0, 2);
  in.x_star_norm = 0.5;
  in.initial_gap = 0.25;
  in.initial_data_gradient_squared = 1.0;
  std::string why;
  const auto b = coded_pl_bound(in, 30, &why);
  REQUIRE(b);
  CHECK(b->mean == Approx(0.5));
  CHECK(b->minimiser_shift == Approx(1.0 / 6.0));
  CHECK(b->bound[30] >= 1.0 / 36.0);
  CHECK(b->bound[0] == 0.25);
  CHECK_FALSE(b->vacuous);
  // A step beyond 1/β_c has no bound, and says why.
  in.step = 1.0;
  CHECK_FALSE(coded_pl_bound(in, 30, &why));
  CHECK(why.find("step <= 1/beta_c") != std::string::npos);
}

}  // namespace stragglersim::sim

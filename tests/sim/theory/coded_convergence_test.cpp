// The coverage distribution, coefficient moments, exact least-squares curve and coded PL bound
// (docs/convergence.md), each against exhaustive enumeration or a hand computation.

#include "sim/theory/coded_convergence.h"

#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/expander_graph_code.h"
#include "codes/stochastic_gradient_code.h"
#include "models/base/log_gamma.h"
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

TEST_CASE("sim: the theory log-gamma is std::lgamma to the bit and keeps no global sign",
          "[sim][theory]") {
  // models::log_gamma (lgamma_r) replaces std::lgamma, which writes the global signgam: the
  // binomials of the coverage laws are unchanged, and threads may compute them at once.
  for (const double x : {0.5, 1.0, 1.5, 2.0, 3.25, 10.0, 129.0, 257.0, 1.0e4 + 0.5, 1.0e6}) {
    INFO(x);
    CHECK(models::log_gamma(x) == std::lgamma(x));
  }
  CHECK(models::log_gamma(0.5) == Approx(0.5 * std::log(std::numbers::pi)).epsilon(1e-15));
  double log_factorial = 0.0;  // ln 20! = ln Γ(21)
  for (int i = 2; i <= 20; ++i) {
    log_factorial += std::log(static_cast<double>(i));
  }
  CHECK(models::log_gamma(21.0) == Approx(log_factorial).epsilon(1e-14));
}

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

namespace {

/// E[α], E[ααᵀ] by walking every one of the 2^n heard sets with its probability under `law`.
PartitionMoments every_heard_set(const HeardSetLaw& law,
                                 int partitions,
                                 const std::function<Eigen::VectorXd(std::span<const int>)>& f) {
  const int n = law.workers;
  PartitionMoments m{Eigen::VectorXd::Zero(partitions),
                     Eigen::MatrixXd::Zero(partitions, partitions)};
  const double subsets_r = static_cast<double>(subsets(n, law.r).size());
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    const int s = __builtin_popcount(mask);
    double w = 0.0;
    switch (law.kind) {
      case HeardSetLaw::Kind::kEveryone:
        w = s == n ? 1.0 : 0.0;
        break;
      case HeardSetLaw::Kind::kUniformSubset:
        w = s == law.r ? 1.0 / subsets_r : 0.0;
        break;
      case HeardSetLaw::Kind::kIndependent:
        w = 1.0;
        for (int i = 0; i < n; ++i) {
          w *= ((mask >> i) & 1u) != 0 ? law.probability(i) : 1.0 - law.probability(i);
        }
        break;
    }
    if (w == 0.0) {
      continue;
    }
    std::vector<int> heard;
    for (int i = 0; i < n; ++i) {
      if ((mask >> i) & 1u) {
        heard.push_back(i);
      }
    }
    const Eigen::VectorXd a = f(heard);
    m.mean += w * a;
    m.second += w * a * a.transpose();
  }
  return m;
}

}  // namespace

TEST_CASE("sim: one-step and enumerated coefficient moments equal every heard set",
          "[sim][theory][convergence]") {
  const codes::BernoulliGradientCode bgc(9, 9, 3.0, 5);
  const codes::StochasticGradientCode sgc(10, 10, 3, 7);
  const codes::StochasticGradientCode sgc_p(8, 12, 2, 3, 0.3);
  const codes::ExpanderGraphCode expander(9, 3, 11);  // k = 6 partitions
  const codes::CyclicRepetitionCode crc(8, 2, 1);
  const std::vector<const codes::GradientCode*> linear = {&bgc, &sgc, &sgc_p, &expander};
  for (const codes::GradientCode* code : linear) {
    const int n = code->workers();
    // Non-identical workers under a deadline: P(i heard) = 0.1 + 0.8·i/n, and one sure worker.
    HeardSetLaw uneven = HeardSetLaw::independent(n, 0.0);
    for (int i = 0; i < n; ++i) {
      uneven.heard_probability.push_back(i == 2 ? 1.0 : 0.1 + 0.8 * i / n);
    }
    for (const HeardSetLaw& law : {HeardSetLaw::uniform_subset(n, n / 2),
                                   HeardSetLaw::uniform_subset(n, 1),
                                   HeardSetLaw::independent(n, 0.37),
                                   HeardSetLaw::everyone(n),
                                   uneven}) {
      INFO(code->name() << " law " << static_cast<int>(law.kind) << " r " << law.r);
      for (const double scale : {1.0, 1.7}) {
        auto one_step = [&](std::span<const int> heard) {
          return Eigen::VectorXd(scale * code->decode_one_step(heard).alpha);
        };
        const PartitionMoments want = every_heard_set(law, code->partitions(), one_step);
        const PartitionMoments closed = one_step_moments(*code, law, scale);
        const PartitionMoments walked = enumerated_moments(law, code->partitions(), one_step);
        CHECK((closed.mean - want.mean).cwiseAbs().maxCoeff() <= 1e-12);
        CHECK((closed.second - want.second).cwiseAbs().maxCoeff() <= 1e-12);
        CHECK((walked.mean - want.mean).cwiseAbs().maxCoeff() <= 1e-12);
        CHECK((walked.second - want.second).cwiseAbs().maxCoeff() <= 1e-12);
      }
    }
  }
  // Least-squares decoding is not linear in the heard set: only enumeration is exact.
  auto optimal = [&](std::span<const int> heard) { return crc.decode_optimal(heard).alpha; };
  for (const HeardSetLaw& law :
       {HeardSetLaw::uniform_subset(8, 5), HeardSetLaw::independent(8, 0.6)}) {
    const PartitionMoments want = every_heard_set(law, 8, optimal);
    const PartitionMoments walked = enumerated_moments(law, 8, optimal);
    CHECK((walked.mean - want.mean).cwiseAbs().maxCoeff() <= 1e-12);
    CHECK((walked.second - want.second).cwiseAbs().maxCoeff() <= 1e-12);
    CHECK(law.support_size() == (law.kind == HeardSetLaw::Kind::kUniformSubset ? 56.0 : 256.0));
  }
  // The summary: c, b² and λ_max of the covariance by hand for a two-partition example.
  Eigen::MatrixXd second(2, 2);
  second << 1.5, 0.5, 0.5, 0.5;  // Cov = [[0.5, 0], [0, 0.25]]
  const PartitionMoments two{Eigen::Vector2d(1.0, 0.5), second};
  const MomentSummary sum = summarize_moments(two);
  CHECK(sum.mean == Approx(0.75));
  CHECK(sum.bias == Approx(0.125));
  CHECK(sum.variance == Approx(0.5).epsilon(1e-11));
  CHECK(sum.variance >= 0.5);
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

TEST_CASE("sim: the exact standard deviation of f(x_t) equals every coverage path",
          "[sim][theory][convergence]") {
  // K groups of d workers (FRC; d = 1 is uncoded), first_r r of K·d workers: each iteration a
  // uniformly random r-subset of workers is heard, independently across iterations; every path of
  // T iterations is walked with its probability and the mean and variance of f(x_t) − f* taken
  // over the paths (f(x_t) is a finite mixture: one value per path).
  struct Case {
    int groups, d, r, iterations, p;
  };
  for (const Case c : {Case{2, 1, 1, 6, 2},
                       Case{4, 1, 2, 4, 1},
                       Case{4, 1, 3, 3, 2},
                       Case{2, 2, 2, 5, 2},
                       Case{3, 2, 3, 3, 1}}) {
    std::vector<Eigen::MatrixXd> h;
    std::vector<Eigen::VectorXd> b;
    for (int g = 0; g < c.groups; ++g) {
      Eigen::MatrixXd a(c.p + 1, c.p);
      for (Eigen::Index i = 0; i < a.size(); ++i) {
        a.data()[i] = std::sin(1.3 * static_cast<double>(i + 7 * g) + 0.4);
      }
      h.emplace_back(a.transpose() * a / 4.0);
      b.emplace_back(a.transpose() * Eigen::VectorXd::LinSpaced(c.p + 1, -1.0 + g, 1.0) / 4.0);
    }
    const double l2 = 0.2;
    const double step = 0.3;
    Eigen::MatrixXd q = l2 * Eigen::MatrixXd::Identity(c.p, c.p);
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(c.p);
    for (int g = 0; g < c.groups; ++g) {
      q += h[static_cast<std::size_t>(g)];
      rhs += b[static_cast<std::size_t>(g)];
    }
    const Eigen::VectorXd x_star = q.ldlt().solve(rhs);
    const std::vector<unsigned> sets = subsets(c.groups * c.d, c.r);
    const auto covered = covered_groups_first_r(c.groups, c.d, c.r);
    double mean_covered = 0.0;
    for (std::size_t j = 0; j < covered.size(); ++j) {
      mean_covered += static_cast<double>(j) * covered[j];
    }
    const double q_erased = 1.0 - mean_covered / c.groups;
    for (const auto optimizer : {CurveOptimizer::kGd, CurveOptimizer::kNesterov}) {
      for (const auto rescale :
           {codes::Rescale::kNone, codes::Rescale::kExpected, codes::Rescale::kEmpirical}) {
        INFO("K " << c.groups << " d " << c.d << " r " << c.r << " nesterov "
                  << (optimizer == CurveOptimizer::kNesterov) << " rescale "
                  << static_cast<int>(rescale));
        const auto t_max = static_cast<std::size_t>(c.iterations);
        std::vector<double> m1(t_max + 1, 0.0);
        std::vector<double> m2(t_max + 1, 0.0);
        const double paths = std::pow(static_cast<double>(sets.size()), c.iterations);
        for (std::size_t path = 0; path < static_cast<std::size_t>(paths); ++path) {
          Eigen::VectorXd x = Eigen::VectorXd::Zero(c.p);
          Eigen::VectorXd prev = x;
          std::size_t code = path;
          for (std::size_t t = 0; t <= t_max; ++t) {
            const Eigen::VectorXd e = x - x_star;
            const double f = 0.5 * e.dot(q * e);
            m1[t] += f / paths;
            m2[t] += f * f / paths;
            if (t == t_max) {
              break;
            }
            const unsigned mask = sets[code % sets.size()];
            code /= sets.size();
            const double td = static_cast<double>(t);
            const double momentum =
                optimizer == CurveOptimizer::kNesterov && t >= 1 ? (td - 1.0) / (td + 2.0) : 0.0;
            const Eigen::VectorXd y = x + momentum * (x - prev);
            const auto alpha = group_alpha(mask, c.groups, c.d, rescale, q_erased);
            Eigen::VectorXd grad = l2 * y;
            for (int g = 0; g < c.groups; ++g) {
              const auto gi = static_cast<std::size_t>(g);
              grad += alpha[gi] * (h[gi] * y - b[gi]);
            }
            prev = x;
            x = y - step * grad;
          }
        }
        LeastSquaresCurveInputs in;
        in.hessians = h;
        in.offsets = b;
        in.l2 = l2;
        in.step = step;
        in.optimizer = optimizer;
        in.moments = coefficient_moments(covered, rescale, q_erased);
        CoverageLaw law{covered, rescale, q_erased};
        const LeastSquaresGapSpread spread = least_squares_gap_spread(in, law, c.iterations, 1e12);
        REQUIRE(spread.sd.size() == t_max + 1);
        for (std::size_t t = 0; t <= t_max; ++t) {
          INFO("t = " << t);
          const double sd = std::sqrt(std::max(0.0, m2[t] - m1[t] * m1[t]));
          CHECK(spread.mean[t] == Approx(m1[t]).epsilon(1e-10).margin(1e-14));
          // sd = √(E[f²] − E[f]²) loses about half the digits where the spread is tiny.
          CHECK(spread.sd[t] == Approx(sd).epsilon(1e-6).margin(1e-6 * m1[t]));
        }
      }
    }
  }
}

TEST_CASE("sim: the gap spread stops at its flop budget and its mean is the exact curve",
          "[sim][theory][convergence]") {
  // Three uncoded groups of p = 3, first_r 2 of 3, Nesterov: the spread's mean must equal the
  // second-moment recursion at every t it computes, and it computes ⌊max_work / flops⌋ steps.
  std::vector<Eigen::MatrixXd> h;
  std::vector<Eigen::VectorXd> b;
  for (int g = 0; g < 3; ++g) {
    Eigen::MatrixXd a(4, 3);
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      a.data()[i] = std::cos(0.7 * static_cast<double>(i + 5 * g) + 0.1);
    }
    h.emplace_back(a.transpose() * a / 3.0);
    b.emplace_back(a.transpose() * Eigen::VectorXd::LinSpaced(4, -1.0, 1.0 + g) / 3.0);
  }
  LeastSquaresCurveInputs in;
  in.hessians = h;
  in.offsets = b;
  in.l2 = 0.1;
  in.step = 0.4;
  in.optimizer = CurveOptimizer::kNesterov;
  const auto covered = covered_groups_first_r(3, 1, 2);
  in.moments = coefficient_moments(covered, codes::Rescale::kEmpirical, 1.0 / 3.0);
  const CoverageLaw law{covered, codes::Rescale::kEmpirical, 1.0 / 3.0};
  const double flops = least_squares_gap_spread_flops(in);
  REQUIRE(flops > 0.0);
  const auto mean = least_squares_expected_gap(in, 12);
  const LeastSquaresGapSpread full = least_squares_gap_spread(in, law, 12, 100.0 * flops);
  REQUIRE(full.sd.size() == 13);
  for (std::size_t t = 0; t < mean.size(); ++t) {
    CHECK(full.mean[t] == Approx(mean[t]).epsilon(1e-10));
    CHECK(full.sd[t] >= 0.0);
  }
  CHECK(full.sd[0] == 0.0);  // x₀ is deterministic
  CHECK(full.sd[5] > 0.0);
  const LeastSquaresGapSpread cut = least_squares_gap_spread(in, law, 12, 4.5 * flops);
  REQUIRE(cut.sd.size() == 5);  // t = 0..4
  for (std::size_t t = 0; t < cut.sd.size(); ++t) {
    CHECK(cut.sd[t] == full.sd[t]);
  }
  CHECK(full.flops_per_iteration == flops);
}

TEST_CASE("sim: coverage product moments by hand", "[sim][theory][convergence]") {
  // K = 3, N = 2 with certainty: two given groups are both covered with probability 1/3.
  const CoverageLaw law{{0.0, 0.0, 1.0, 0.0}, codes::Rescale::kEmpirical, 0.0};
  CHECK(law.product_moment(1, 1) == Approx(1.5 * 2.0 / 3.0));
  CHECK(law.product_moment(4, 2) == Approx(std::pow(1.5, 4) / 3.0));
  CHECK(law.product_moment(3, 3) == 0.0);
  CHECK(law.product_moment(2, 4) == 0.0);
  CHECK(law.product_moment(0, 0) == Approx(1.0));
}

namespace {

/// The smallest case: f(x) = ½(x − 1)² + ½x² split into 100 equal partitions,
/// uncoded, first_r r = 50 of 100 (c = 1/2, λ₂ = 1, x* = 1/2, x₀ = 0), step 0.5.
CodedBoundInputs smallest_case_inputs() {
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
  return in;
}

}  // namespace

TEST_CASE("sim: the coded bound on the issue's smallest case", "[sim][theory][convergence]") {
  // f(x) = ½(x − 1)² + ½x² split into 100 equal partitions, uncoded, first_r r = 50 of 100:
  // exactly 50 partitions are heard, so x_t → x_c = 1/3 and f(x_c) − f* = 1/36 exactly.
  CodedBoundInputs in = smallest_case_inputs();
  in.initial_data_gradient_squared = 1.0;
  std::string why;
  const auto b = coded_pl_bound(in, 30, &why);
  REQUIRE(b);
  CHECK(b->mean == Approx(0.5));
  CHECK(b->minimiser_shift == Approx(1.0 / 6.0));
  CHECK(b->bound[30] >= 1.0 / 36.0);
  CHECK(b->bound[0] >= 0.25);
  CHECK(b->bound[0] == Approx(0.25).epsilon(1e-11));
  CHECK_FALSE(b->vacuous);
  // A step beyond 1/β_c has no bound, and says why.
  in.step = 1.0;
  CHECK_FALSE(coded_pl_bound(in, 30, &why));
  CHECK(why.find("step <= 1/beta_c") != std::string::npos);
}

TEST_CASE("sim: the tightened bound starts at c times the gap and converts with the l2 term",
          "[sim][theory][convergence][bounds]") {
  // The smallest case again (c = 1/2, λ₂ = 1, x* = 1/2), recomputed by hand: D₀ =
  // c(f(x₀) − f*) (c ≤ 1, x₀ = 0), one step of route A, then D/c + (λ₂/2)(1/c − 1)‖x*‖².
  CodedBoundInputs in = smallest_case_inputs();
  in.initial_data_gradient_squared = 100.0;  // large: the PL start would be 25/6
  in.value_scale = 0.5;
  std::string why;
  const auto b = coded_pl_bound(in, 5, &why);
  REQUIRE(b);
  const double c = in.mean;
  REQUIRE(c == Approx(0.5));
  const double beta_c = c * 1.0 + 1.0;
  const double mu_c = beta_c;
  const double kappa = 0.5 * beta_c * in.step * in.variance;
  const double delta = (1.0 - c) * 1.0 * 0.5 / mu_c;
  const double zeta_c = std::pow(std::sqrt(in.zeta_star_squared) + 0.1 * delta, 2);
  const double rho = 1.0 - in.step * mu_c + 4.0 * in.step * kappa * 0.01 / mu_c;
  const double d1 = rho * c * 0.25 + 2.0 * in.step * kappa * zeta_c;
  const double value = d1 / c + 0.5 * (1.0 / c - 1.0) * 0.25;
  const double distance = 0.5 * 2.0 * std::pow(std::sqrt(2.0 * d1 / mu_c) + delta, 2);
  const double margin = 1e-11 * 0.5;
  CHECK(b->rounding_margin == Approx(margin));
  CHECK(b->bound[1] == Approx(std::min(value, distance) * (1.0 + 1e-12) + margin).epsilon(1e-13));
  CHECK(b->bound[0] == Approx(0.25 * (1.0 + 1e-12) + margin).epsilon(1e-14));
  // Without x₀ = 0 the start falls back to PL at x₀, which is larger here.
  in.start_at_zero = false;
  const auto pl_start = coded_pl_bound(in, 5, &why);
  REQUIRE(pl_start);
  CHECK(pl_start->bound[1] > b->bound[1]);
  // An exact scheme (c = 1, no variance) decays to the rounding margin, never below it.
  in.start_at_zero = true;
  in.mean = 1.0;
  in.variance = 0.0;
  const auto exact = coded_pl_bound(in, 200, &why);
  REQUIRE(exact);
  CHECK(exact->bound[200] >= margin);
  CHECK(exact->bound[200] == Approx(margin).epsilon(1e-6));
}

TEST_CASE("sim: the convex route is the classical GD rate when there is no variance",
          "[sim][theory][convergence][bounds]") {
  // Exact decoding (c = 1, v = 0) with a tiny PL constant: route A decays as (1 − 10⁻⁶)^t,
  // the convex route as ‖x*‖²/(2γt) = 2/t, which is smaller from t = 3 on.
  // D₀ = c(f(x₀) − f*) = 1 (the large ‖∇F(x₀)‖² keeps the PL start out of it).
  const CodedBoundInputs in{.smoothness = 1.0,
                            .pl_constant = 1e-6,
                            .l2 = 0.0,
                            .step = 1.0,
                            .mean = 1.0,
                            .variance = 0.0,
                            .group_smoothness_max = 0.5,
                            .x_star_norm = 2.0,
                            .initial_gap = 1.0,
                            .initial_data_gradient_squared = 1e6};
  constexpr int kIterations = 40;
  std::string why;
  const auto b = coded_pl_bound(in, kIterations, &why);
  REQUIRE(b);
  CHECK(b->convex_route);
  CHECK(b->convex_iterations == kIterations - 2);
  for (int t = 1; t <= kIterations; ++t) {
    INFO("t = " << t);
    const double pl = std::pow(1.0 - 1e-6, t);
    const double expected = std::min(pl, 2.0 / t) * (1.0 + 1e-12);
    CHECK(b->bound[static_cast<std::size_t>(t)] == Approx(expected).epsilon(1e-14));
    CHECK(b->pl_bound[static_cast<std::size_t>(t)] == Approx(pl * (1.0 + 1e-12)).epsilon(1e-14));
  }
  CHECK(b->smallest_at == kIterations);
  CHECK_FALSE(b->vacuous);
  // Variance only adds: at every t the bound with v > 0 is at least the one without.
  CodedBoundInputs noisy = in;
  noisy.variance = 0.2;
  noisy.zeta_star_squared = 0.01;
  const auto n = coded_pl_bound(noisy, kIterations, &why);
  REQUIRE(n);
  for (int t = 1; t <= kIterations; ++t) {
    CHECK(n->bound[static_cast<std::size_t>(t)] >= b->bound[static_cast<std::size_t>(t)]);
  }
  // The route needs b² = 0, c ≤ 1, x₀ = 0 and β_max.
  for (int k = 0; k < 4; ++k) {
    CodedBoundInputs off = in;
    off.step = 0.8;  // γβ_c ≤ 1 also at c = 1.2
    off.bias = k == 0 ? 1e-3 : 0.0;
    off.mean = k == 1 ? 1.2 : 1.0;
    off.start_at_zero = k != 2;
    off.group_smoothness_max = k == 3 ? 0.0 : 0.5;
    const auto o = coded_pl_bound(off, kIterations, &why);
    REQUIRE(o);
    INFO("case " << k);
    CHECK_FALSE(o->convex_route);
    CHECK(o->convex_iterations == 0);
  }
}

}  // namespace stragglersim::sim

#include "sim/theory/coded_convergence.h"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/base/invariant.h"
#include "models/base/log_gamma.h"

namespace stragglersim::sim {
namespace {

/// Every bound entry is b(1 + kRelativeMargin) + kRoundingMargin·(|f*| + |f(x₀)|): the measured
/// gap f(x_t) − f* carries the rounding of two sums of m losses (about m·2⁻⁵³ of their size).
constexpr double kRelativeMargin = 1e-12;
constexpr double kRoundingMargin = 1e-11;

double log_choose(int n, int k) {
  return models::log_gamma(n + 1.0) - models::log_gamma(k + 1.0) - models::log_gamma(n - k + 1.0);
}

/// D₀ = F_c(x₀) − min F_c: at most c(f(x₀) − f*) when F_c ≥ c·f pointwise up to a constant
/// (c ≤ 1 with x₀ = 0, or λ₂ = 0), and at most c²‖∇F(x₀)‖²/(2μ_c) by PL at x₀ always.
double initial_biased_gap(const CodedBoundInputs& in, double c, double mu_c) {
  double d0 = c * c * in.initial_data_gradient_squared / (2.0 * mu_c);
  if ((c <= 1.0 && in.start_at_zero) || in.l2 == 0.0) {
    d0 = std::min(d0, c * in.initial_gap);
  }
  return d0;
}

/// E[f(x)] − f* from D = E[F_c(x)] − min F_c: D/c + (λ₂/2)(1/c − 1)‖x*‖² for c ≤ 1 (exact for
/// c = 1), D/c for λ₂ = 0, and (β/2)(√(2D/μ_c) + δ)² always; the smallest that applies.
double gap_from_biased(const CodedBoundInputs& in, double c, double mu_c, double delta, double d) {
  double out = 0.5 * in.smoothness * std::pow(std::sqrt(2.0 * d / mu_c) + delta, 2);
  if (c <= 1.0) {
    out = std::min(out, d / c + 0.5 * in.l2 * (1.0 / c - 1.0) * in.x_star_norm * in.x_star_norm);
  } else if (in.l2 == 0.0) {
    out = std::min(out, d / c);
  }
  return out;
}

}  // namespace

std::vector<double> covered_groups_first_r(int groups, int d, int r) {
  STRAGGLERSIM_ASSERT(groups >= 1 && d >= 1 && r >= 0 && r <= groups * d,
                      "covered groups needs K >= 1, d >= 1, 0 <= r <= Kd");
  // W_j = [x^r] ((1 + x)^d − 1)^j counts the r-subsets of j given groups that hit all of them:
  // every coefficient is positive, so the powers are built without cancellation, kept as
  // exp(scale)·poly to stay in range.
  std::vector<double> hit(static_cast<std::size_t>(d) + 1, 0.0);
  for (int k = 1; k <= d; ++k) {
    hit[static_cast<std::size_t>(k)] = std::exp(log_choose(d, k));
  }
  std::vector<double> poly(static_cast<std::size_t>(r) + 1, 0.0);
  poly[0] = 1.0;
  double scale = 0.0;
  std::vector<double> out(static_cast<std::size_t>(groups) + 1, 0.0);
  const double total = log_choose(groups * d, r);
  out[0] = r == 0 ? 1.0 : 0.0;
  for (int j = 1; j <= groups; ++j) {
    std::vector<double> next(poly.size(), 0.0);
    for (std::size_t e = 0; e < poly.size(); ++e) {
      if (poly[e] == 0.0) {
        continue;
      }
      for (std::size_t k = 1; k < hit.size() && e + k < next.size(); ++k) {
        next[e + k] += poly[e] * hit[k];
      }
    }
    const double top = *std::max_element(next.begin(), next.end());
    if (top > 0.0) {
      for (double& v : next) {
        v /= top;
      }
      scale += std::log(top);
    }
    poly = std::move(next);
    const double w = poly[static_cast<std::size_t>(r)];
    out[static_cast<std::size_t>(j)] =
        w > 0.0 ? std::exp(log_choose(groups, j) + scale + std::log(w) - total) : 0.0;
  }
  return out;
}

std::vector<double> covered_groups_independent(int groups, double q) {
  STRAGGLERSIM_ASSERT(groups >= 1 && q >= 0.0 && q <= 1.0,
                      "covered groups needs K >= 1, q in [0,1]");
  std::vector<double> out(static_cast<std::size_t>(groups) + 1, 0.0);
  for (int j = 0; j <= groups; ++j) {
    const double log_p = log_choose(groups, j) + (j > 0 ? j * std::log1p(-q) : 0.0) +
                         (groups - j > 0 ? (groups - j) * std::log(q) : 0.0);
    out[static_cast<std::size_t>(j)] = std::exp(log_p);
  }
  return out;
}

CoefficientMoments coefficient_moments(const std::vector<double>& covered,
                                       codes::Rescale rescale,
                                       double expected_q) {
  STRAGGLERSIM_ASSERT(covered.size() >= 2, "coefficient moments need K >= 1");
  const int k = static_cast<int>(covered.size()) - 1;
  const double kd = k;
  CoefficientMoments m;
  m.groups = k;
  double en = 0.0;
  double enn = 0.0;
  double inv = 0.0;
  double pair = 0.0;
  double any = 0.0;
  for (int j = 1; j <= k; ++j) {
    const double p = covered[static_cast<std::size_t>(j)];
    en += p * j;
    enn += p * j * (j - 1.0);
    inv += p * kd / j;
    pair += k > 1 ? p * kd * (j - 1.0) / (j * (kd - 1.0)) : 0.0;
    any += p;
  }
  switch (rescale) {
    case codes::Rescale::kEmpirical:
      // α_g = (K/N)·1{g covered}; exchangeability gives E[1{g} | N] = N/K and
      // E[1{g}1{h} | N] = N(N − 1)/(K(K − 1)).
      m.mean = any;
      m.second = inv;
      m.cross = pair;
      return m;
    case codes::Rescale::kNone:
    case codes::Rescale::kExpected:
      break;
  }
  m.mean = en / kd;
  m.second = m.mean;
  m.cross = k > 1 ? enn / (kd * (kd - 1.0)) : m.mean;
  if (rescale == codes::Rescale::kExpected) {
    STRAGGLERSIM_ASSERT(expected_q < 1.0, "expected rescale needs q < 1");
    const double s = 1.0 / (1.0 - expected_q);
    m.mean *= s;
    m.second *= s * s;
    m.cross *= s * s;
  }
  return m;
}

namespace {

/// Poisson-binomial P(Σ_i X_i = s) over the workers not in `skip`, X_i ~ Bernoulli(p_i).
std::vector<double> poisson_binomial(const HeardSetLaw& law, int skip_a, int skip_b) {
  std::vector<double> dist(static_cast<std::size_t>(law.workers) + 1, 0.0);
  dist[0] = 1.0;
  int seen = 0;
  for (int i = 0; i < law.workers; ++i) {
    if (i == skip_a || i == skip_b) {
      continue;
    }
    const double p = law.probability(i);
    ++seen;
    for (int s = seen; s >= 1; --s) {
      const auto us = static_cast<std::size_t>(s);
      dist[us] = dist[us] * (1.0 - p) + dist[us - 1] * p;
    }
    dist[0] *= 1.0 - p;
  }
  return dist;
}

}  // namespace

double HeardSetLaw::probability(int worker) const {
  return heard_probability.empty() ? p : heard_probability[static_cast<std::size_t>(worker)];
}

std::vector<double> HeardSetLaw::size_distribution() const {
  STRAGGLERSIM_ASSERT(workers >= 1 && r >= 0 && r <= workers && p >= 0.0 && p <= 1.0 &&
                          (heard_probability.empty() ||
                           heard_probability.size() == static_cast<std::size_t>(workers)),
                      "a heard-set law needs n >= 1, 0 <= r <= n, p in [0,1]");
  std::vector<double> out(static_cast<std::size_t>(workers) + 1, 0.0);
  switch (kind) {
    case Kind::kEveryone:
      out.back() = 1.0;
      break;
    case Kind::kUniformSubset:
      out[static_cast<std::size_t>(r)] = 1.0;
      break;
    case Kind::kIndependent:
      // Binomial(n, p) (the number of groups covered with d = 1), else Poisson-binomial.
      out = heard_probability.empty() ? covered_groups_independent(workers, 1.0 - p)
                                      : poisson_binomial(*this, -1, -1);
      break;
  }
  return out;
}

double HeardSetLaw::support_size() const {
  switch (kind) {
    case Kind::kEveryone:
      return 1.0;
    case Kind::kUniformSubset:
      return std::round(std::exp(log_choose(workers, r)));
    case Kind::kIndependent: {
      int random = 0;  // workers heard with probability strictly between 0 and 1
      for (int i = 0; i < workers; ++i) {
        random += probability(i) > 0.0 && probability(i) < 1.0 ? 1 : 0;
      }
      return std::ldexp(1.0, random);
    }
  }
  return 1.0;
}

namespace {

PartitionMoments one_step_moments_heterogeneous(const codes::GradientCode& code,
                                                const HeardSetLaw& law,
                                                double scale) {
  const int n = code.workers();
  STRAGGLERSIM_ASSERT(n <= 200, "heterogeneous one-step moments are limited to n <= 200");
  auto weight = [&](int s) { return scale * *code.one_step_weight(s); };
  Eigen::VectorXd a = Eigen::VectorXd::Zero(n);
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    const double pi = law.probability(i);
    const std::vector<double> others = poisson_binomial(law, i, -1);
    for (int s = 0; s < n; ++s) {
      const double ps = others[static_cast<std::size_t>(s)];
      a(i) += pi * ps * weight(s + 1);
      m(i, i) += pi * ps * weight(s + 1) * weight(s + 1);
    }
    for (int j = i + 1; j < n; ++j) {
      const double pj = law.probability(j);
      const std::vector<double> rest = poisson_binomial(law, i, j);
      double pair = 0.0;
      for (int s = 0; s + 2 <= n; ++s) {
        pair += rest[static_cast<std::size_t>(s)] * weight(s + 2) * weight(s + 2);
      }
      m(i, j) = m(j, i) = pi * pj * pair;
    }
  }
  const Eigen::MatrixXd& b = code.assignment();
  return {b.transpose() * a, b.transpose() * m * b};
}

}  // namespace

PartitionMoments one_step_moments(const codes::GradientCode& code,
                                  const HeardSetLaw& law,
                                  double scale) {
  STRAGGLERSIM_ASSERT(law.workers == code.workers() && code.one_step_weight(1).has_value(),
                      "one-step moments need a code with one-step weights and its n");
  if (law.kind == HeardSetLaw::Kind::kIndependent && !law.heard_probability.empty()) {
    return one_step_moments_heterogeneous(code, law, scale);
  }
  const double n = code.workers();
  const std::vector<double> size = law.size_distribution();
  double first = 0.0;  // Σ_s P(s)·a(s)·π₁
  double c1 = 0.0;
  double c2 = 0.0;
  for (int s = 1; s <= code.workers(); ++s) {
    const double ps = size[static_cast<std::size_t>(s)];
    if (ps == 0.0) {
      continue;
    }
    const double a = scale * *code.one_step_weight(s);
    const double pi1 = s / n;
    const double pi2 = code.workers() > 1 ? s * (s - 1.0) / (n * (n - 1.0)) : 0.0;
    first += ps * a * pi1;
    c1 += ps * a * a * (pi1 - pi2);
    c2 += ps * a * a * pi2;
  }
  const Eigen::MatrixXd& b = code.assignment();
  const Eigen::VectorXd u = b.transpose() * Eigen::VectorXd::Ones(code.workers());
  return {first * u, c2 * u * u.transpose() + c1 * b.transpose() * b};
}

PartitionMoments enumerated_moments(
    const HeardSetLaw& law,
    int partitions,
    const std::function<Eigen::VectorXd(std::span<const int>)>& decode) {
  const int n = law.workers;
  PartitionMoments out{Eigen::VectorXd::Zero(partitions),
                       Eigen::MatrixXd::Zero(partitions, partitions)};
  auto add = [&](std::span<const int> heard, double weight) {
    const Eigen::VectorXd alpha = decode(heard);
    out.mean += weight * alpha;
    out.second.noalias() += (weight * alpha) * alpha.transpose();
  };
  std::vector<int> heard;
  const bool one_set = law.kind == HeardSetLaw::Kind::kEveryone ||
                       (law.kind == HeardSetLaw::Kind::kIndependent &&
                        law.heard_probability.empty() && (law.p == 0.0 || law.p == 1.0));
  if (one_set) {
    if (law.kind == HeardSetLaw::Kind::kEveryone || law.p == 1.0) {
      heard.resize(static_cast<std::size_t>(n));
      std::iota(heard.begin(), heard.end(), 0);
    }
    add(heard, 1.0);
  } else if (law.kind == HeardSetLaw::Kind::kUniformSubset) {
    // Lexicographic r-subsets; each has probability 1/C(n, r).
    const double weight = 1.0 / law.support_size();
    heard.resize(static_cast<std::size_t>(law.r));
    std::iota(heard.begin(), heard.end(), 0);
    while (true) {
      add(heard, weight);
      int i = law.r - 1;
      while (i >= 0 && heard[static_cast<std::size_t>(i)] == n - law.r + i) {
        --i;
      }
      if (i < 0) {
        break;
      }
      ++heard[static_cast<std::size_t>(i)];
      for (int j = i + 1; j < law.r; ++j) {
        heard[static_cast<std::size_t>(j)] = heard[static_cast<std::size_t>(j) - 1] + 1;
      }
    }
  } else {
    STRAGGLERSIM_ASSERT(n < 63, "enumerating 2^n heard sets needs n < 63");
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << n); ++mask) {
      heard.clear();
      double weight = 1.0;
      for (int i = 0; i < n; ++i) {
        const bool in = ((mask >> i) & 1U) != 0;
        weight *= in ? law.probability(i) : 1.0 - law.probability(i);
        if (in) {
          heard.push_back(i);
        }
      }
      if (weight > 0.0) {
        add(heard, weight);
      }
    }
  }
  return out;
}

MomentSummary summarize_moments(const PartitionMoments& m) {
  MomentSummary out;
  out.mean = m.mean.mean();
  out.bias = (m.mean.array() - out.mean).square().sum();
  const Eigen::MatrixXd cov = m.second - m.mean * m.mean.transpose();
  // The eigensolver is backward stable: its λ_max is within a few ulps of ‖Cov‖ of the true
  // one, so a margin of 1e-12·‖Cov‖_F keeps v an upper bound.
  out.variance =
      std::max(0.0,
               Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(cov, Eigen::EigenvaluesOnly)
                   .eigenvalues()
                   .maxCoeff()) +
      1e-12 * cov.norm();
  return out;
}

double covariance_top_eigenvalue(const CoefficientMoments& m) {
  const double a = m.second - m.mean * m.mean;
  if (m.groups <= 1) {
    return std::max(0.0, a);
  }
  const double b = m.cross - m.mean * m.mean;
  return std::max({0.0, a - b, a + (m.groups - 1.0) * b});
}

namespace {

/// The biased objective's constants: the mean coefficient c, β_c = c(β − l2) + l2 and
/// μ_c = c(μ − l2) + l2.
struct BiasedConstants {
  double c = 1.0;
  double beta_c = 0.0;
  double mu_c = 0.0;
};

/// nullopt, with `why`, when there is no descent in expectation, no PL constant or the step is
/// longer than 1/β_c.
std::optional<BiasedConstants> biased_constants(const CodedBoundInputs& in, std::string* why) {
  // Unbiased rescales give c = 1 up to rounding ((1 − q)/(1 − q)); the minimisers then coincide.
  const double c = std::abs(in.mean - 1.0) <= 1e-12 ? 1.0 : in.mean;
  if (!(c > 0.0)) {
    *why = fmt::format("the estimator's mean coefficient is {:.6g}: no descent in expectation", c);
    return std::nullopt;
  }
  const double lambda = in.l2;
  const double beta_c = c * std::max(0.0, in.smoothness - lambda) + lambda;
  const double mu_c = c * std::max(0.0, in.pl_constant - lambda) + lambda;
  if (!(mu_c > 0.0)) {
    *why = "the biased objective has no PL constant";
    return std::nullopt;
  }
  if (in.step * beta_c > 1.0 + 1e-12) {
    *why = fmt::format(
        "the bound needs step <= 1/beta_c = {:.6g} (beta_c = c(beta - l2) + l2, "
        "c = {:.6g}); got {:.6g}",
        1.0 / beta_c,
        c,
        in.step);
    return std::nullopt;
  }
  return BiasedConstants{c, beta_c, mu_c};
}

/// The convex route's per-θ constants (docs/convergence.md, "Convex route").
struct ConvexConstants {
  double sigma_sq = 0.0;  ///< σ² = v[(1 + θ)ζ*² + (1 + 1/θ)2β_max κ₀]
  double ell = 0.0;       ///< ℓ = v(1 + 1/θ)2β_max/c
  double eps = 0.0;       ///< ε = β_cγ²ℓ/2
  double a = 0.0;         ///< γ(1 − β_cγ/2)
  double s = 0.0;         ///< β_cγ²σ²/2
  double b = 0.0;         ///< (γ/2)(1 + β_cγ)
};

ConvexConstants convex_constants(const CodedBoundInputs& in,
                                 const BiasedConstants& k,
                                 double theta) {
  const double gamma = in.step;
  const double kappa0 = 0.5 * in.l2 * (1.0 / k.c - 1.0) * in.x_star_norm * in.x_star_norm;
  ConvexConstants out;
  out.sigma_sq = in.variance * ((1.0 + theta) * in.zeta_star_squared +
                                (1.0 + 1.0 / theta) * 2.0 * in.group_smoothness_max * kappa0);
  out.ell = in.variance * (1.0 + 1.0 / theta) * 2.0 * in.group_smoothness_max / k.c;
  out.eps = 0.5 * k.beta_c * gamma * gamma * out.ell;
  out.a = gamma * (1.0 - 0.5 * k.beta_c * gamma);
  out.s = 0.5 * k.beta_c * gamma * gamma * out.sigma_sq;
  out.b = 0.5 * gamma * (1.0 + k.beta_c * gamma);
  return out;
}

/// Φ'_j = P_j·Φ'_1 + Q_j for the convex route run from any start (docs/convergence.md).
struct ConvexGrowth {
  std::vector<double> p;  ///< P_j = Π_{i<j}(1 + ω_i), j = 1..iterations
  std::vector<double> q;  ///< Q_j
};

ConvexGrowth convex_growth(const ConvexConstants& k, double gamma, int iterations) {
  ConvexGrowth out;
  out.p.assign(static_cast<std::size_t>(iterations) + 1, 1.0);
  out.q.assign(static_cast<std::size_t>(iterations) + 1, 0.0);
  for (int j = 1; j < iterations; ++j) {
    const double omega = std::max(k.b * k.ell / j, j * k.eps * k.eps * gamma / (2.0 * k.a));
    const auto u = static_cast<std::size_t>(j);
    out.p[u + 1] = (1.0 + omega) * out.p[u];
    out.q[u + 1] = (1.0 + omega) * out.q[u] + j * k.s + k.b * k.sigma_sq;
  }
  return out;
}

/// Route C: bounds on D_t, t = 0..iterations, without a PL constant, the smallest over a grid
/// of θ and over restarts at t₀ = t − j (j on a geometric grid), each restart from the bound at
/// t₀ and E‖x_{t₀} − x_c‖² ≤ ‖x*‖² + t₀γ²σ²; empty when it does not apply (b² > 0, c > 1,
/// x₀ ≠ 0 or β_max unknown).
std::vector<double> convex_route(const CodedBoundInputs& in,
                                 const BiasedConstants& k,
                                 const std::vector<double>& prior,
                                 int iterations) {
  const double bias_tolerance = 1e-24 * std::max(1.0, k.c * k.c);
  if (!(in.bias <= bias_tolerance) || k.c > 1.0 || !in.start_at_zero ||
      !(in.group_smoothness_max > 0.0)) {
    return {};
  }
  std::vector<double> out = prior;  // restarts begin from the best bound at t₀
  const double gamma = in.step;
  std::vector<int> spans;
  for (int j = 1; j <= iterations; j = std::max(j + 1, static_cast<int>(j * 1.15))) {
    spans.push_back(j);
  }
  for (const double theta : {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
    const ConvexConstants q = convex_constants(in, k, theta);
    if (gamma * q.ell > 2.0) {
      continue;  // the distance recursion below needs γℓ ≤ 2
    }
    const ConvexGrowth g = convex_growth(q, gamma, iterations);
    for (int t = 1; t <= iterations; ++t) {
      auto& slot = out[static_cast<std::size_t>(t)];
      for (std::size_t i = 0; i <= spans.size(); ++i) {
        const int j = i < spans.size() ? spans[i] : t;  // the last: from x₀
        if (j > t) {
          continue;
        }
        const int t0 = t - j;
        // ‖x_c‖ ≤ ‖x*‖ (the minimiser's norm does not grow with the regulariser λ₂/c), and each
        // step adds at most γ²σ² to E‖x_t − x_c‖² when γℓ ≤ 2.
        const double e0 =
            (in.x_star_norm * in.x_star_norm + t0 * gamma * gamma * q.sigma_sq) / (2.0 * gamma);
        const double phi1 = e0 + q.b * (q.sigma_sq + q.ell * out[static_cast<std::size_t>(t0)]);
        const auto uj = static_cast<std::size_t>(j);
        slot = std::min(slot, (g.p[uj] * phi1 + g.q[uj]) / j);
      }
    }
  }
  return out;
}

}  // namespace

namespace {

/// Routes A and B (docs/convergence.md): per-t bounds on D_t (+∞ where a route is off), their
/// limit and the contraction of the route that gives it.
struct PlRoutes {
  std::vector<double> d;
  double floor = std::numeric_limits<double>::infinity();
  double contraction = std::numeric_limits<double>::quiet_NaN();
};

PlRoutes pl_routes(
    const CodedBoundInputs& in, const BiasedConstants& k, double delta, double d0, int iterations) {
  const double gamma = in.step;
  const double l_sq = in.group_smoothness_squared;
  const double zeta_c = std::pow(std::sqrt(in.zeta_star_squared) + std::sqrt(l_sq) * delta, 2);
  const double kappa = 0.5 * (in.bias + k.beta_c * gamma * in.variance);
  // Route A: ζ² grows with the distance to x_c; route B: ζ² ≤ a global supremum.
  const double rho_a = 1.0 - gamma * k.mu_c + 4.0 * gamma * kappa * l_sq / k.mu_c;
  const double drive_a = 2.0 * gamma * kappa * zeta_c;
  const double rho_b = 1.0 - gamma * k.mu_c;
  const double drive_b = gamma * kappa * in.zeta_sup_squared;
  const bool use_a = rho_a < 1.0;
  const bool use_b = std::isfinite(drive_b) && rho_b < 1.0;
  const double inf = std::numeric_limits<double>::infinity();
  PlRoutes out;
  out.d.reserve(static_cast<std::size_t>(iterations) + 1);
  double da = use_a ? d0 : inf;
  double db = use_b ? d0 : inf;
  for (int t = 0; t <= iterations; ++t) {
    out.d.push_back(t == 0 ? d0 : std::min(da, db));
    da = use_a ? rho_a * da + drive_a : inf;
    db = use_b ? rho_b * db + drive_b : inf;
  }
  const double floor_a = use_a ? drive_a / (1.0 - rho_a) : inf;
  const double floor_b = use_b ? drive_b / (1.0 - rho_b) : inf;
  out.floor = std::min(floor_a, floor_b);
  if (use_a || use_b) {
    out.contraction = floor_b < floor_a || !use_a ? rho_b : rho_a;
  }
  return out;
}

/// `vacuous` and `smallest_at` from the finished bound.
void mark_vacuous(CodedBound& out, double initial_gap, int iterations) {
  out.vacuous = true;
  for (int t = 1; t <= iterations; ++t) {
    const double b = out.bound[static_cast<std::size_t>(t)];
    if (out.smallest_at == 0 || b < out.bound[static_cast<std::size_t>(out.smallest_at)]) {
      out.smallest_at = t;
    }
    out.vacuous = out.vacuous && !(b < initial_gap);
  }
  out.vacuous = out.vacuous && out.floor >= initial_gap;
}

}  // namespace

std::optional<CodedBound> coded_pl_bound(const CodedBoundInputs& in,
                                         int iterations,
                                         std::string* why) {
  STRAGGLERSIM_ASSERT(in.smoothness > 0.0 && in.pl_constant > 0.0 && in.step > 0.0 &&
                          in.l2 >= 0.0 && iterations >= 0,
                      "the coded bound needs beta, mu, step > 0 and l2 >= 0");
  const std::optional<BiasedConstants> biased = biased_constants(in, why);
  if (!biased) {
    return std::nullopt;
  }
  const double c = biased->c;
  const double delta = std::abs(1.0 - c) * in.l2 * in.x_star_norm / biased->mu_c;
  const double d0 = initial_biased_gap(in, c, biased->mu_c);
  const PlRoutes pl = pl_routes(in, *biased, delta, d0, iterations);
  const std::vector<double> dc = convex_route(in, *biased, pl.d, iterations);
  if (std::isnan(pl.contraction) && dc.empty()) {
    *why =
        "the estimator's variance grows faster than the contraction (rho >= 1), the loss has no "
        "bounded gradient, and the convex route does not apply";
    return std::nullopt;
  }
  const double margin = kRoundingMargin * in.value_scale;
  auto translate = [&](double d) {
    return gap_from_biased(in, c, biased->mu_c, delta, d) * (1.0 + kRelativeMargin) + margin;
  };
  CodedBound out;
  out.contraction = pl.contraction;
  out.mean = c;
  out.minimiser_shift = delta;
  out.rounding_margin = margin;
  out.convex_route = !dc.empty();
  out.bound.reserve(static_cast<std::size_t>(iterations) + 1);
  for (int t = 0; t <= iterations; ++t) {
    const auto u = static_cast<std::size_t>(t);
    const bool convex = !dc.empty() && dc[u] < pl.d[u];
    out.convex_iterations += convex && t > 0 ? 1 : 0;
    const double b = translate(convex ? dc[u] : pl.d[u]);
    out.pl_bound.push_back(
        t == 0 ? std::min(in.initial_gap * (1.0 + kRelativeMargin) + margin, translate(pl.d[u]))
               : translate(pl.d[u]));
    // x₀ is deterministic: its gap is known (up to the same margins).
    out.bound.push_back(t == 0 ? std::min(in.initial_gap * (1.0 + kRelativeMargin) + margin, b)
                               : b);
  }
  out.floor = std::isfinite(pl.floor) ? translate(pl.floor) : pl.floor;
  mark_vacuous(out, in.initial_gap, iterations);
  return out;
}

}  // namespace stragglersim::sim

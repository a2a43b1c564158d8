#include "sim/theory/coded_convergence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

double log_choose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

/// D₀ = F_c(x₀) − min F_c: exact when F_c is a multiple of f − f*, else the PL inequality at x₀.
double initial_biased_gap(const CodedBoundInputs& in, double c, double mu_c) {
  double d0 = c * c * in.initial_data_gradient_squared / (2.0 * mu_c);
  if (c == 1.0 || in.l2 == 0.0) {
    d0 = std::min(d0, c * in.initial_gap);
  }
  return d0;
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

double covariance_top_eigenvalue(const CoefficientMoments& m) {
  const double a = m.second - m.mean * m.mean;
  if (m.groups <= 1) {
    return std::max(0.0, a);
  }
  const double b = m.cross - m.mean * m.mean;
  return std::max({0.0, a - b, a + (m.groups - 1.0) * b});
}

std::optional<CodedBound> coded_pl_bound(const CodedBoundInputs& in,
                                         int iterations,
                                         std::string* why) {
  STRAGGLERSIM_ASSERT(in.smoothness > 0.0 && in.pl_constant > 0.0 && in.step > 0.0 &&
                          in.l2 >= 0.0 && iterations >= 0,
                      "the coded bound needs beta, mu, step > 0 and l2 >= 0");
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
  const double gamma = in.step;
  const double l_sq = in.group_smoothness_squared;
  const double delta = std::abs(1.0 - c) * lambda * in.x_star_norm / mu_c;
  const double zeta_c = std::pow(std::sqrt(in.zeta_star_squared) + std::sqrt(l_sq) * delta, 2);
  const double kappa = 0.5 * (in.bias + beta_c * gamma * in.variance);
  // Route A: ζ² grows with the distance to x_c; route B: ζ² ≤ a global supremum.
  const double rho_a = 1.0 - gamma * mu_c + 4.0 * gamma * kappa * l_sq / mu_c;
  const double drive_a = 2.0 * gamma * kappa * zeta_c;
  const double rho_b = 1.0 - gamma * mu_c;
  const double drive_b = gamma * kappa * in.zeta_sup_squared;
  const bool use_a = rho_a < 1.0;
  const bool use_b = std::isfinite(drive_b) && rho_b < 1.0;
  if (!use_a && !use_b) {
    *why = fmt::format(
        "the estimator's variance grows faster than the contraction (rho = {:.6g} >= 1) and the "
        "loss has no bounded gradient",
        rho_a);
    return std::nullopt;
  }
  const double d0 = initial_biased_gap(in, c, mu_c);
  const bool same_minimiser = delta == 0.0;
  auto translate = [&](double d) {
    const double via_distance =
        0.5 * in.smoothness * std::pow(std::sqrt(2.0 * d / mu_c) + delta, 2);
    return same_minimiser ? std::min(d / c, via_distance) : via_distance;
  };
  const double inf = std::numeric_limits<double>::infinity();
  CodedBound out;
  out.contraction = use_a ? rho_a : rho_b;
  out.mean = c;
  out.minimiser_shift = delta;
  out.bound.reserve(static_cast<std::size_t>(iterations) + 1);
  double da = use_a ? d0 : inf;
  double db = use_b ? d0 : inf;
  for (int t = 0; t <= iterations; ++t) {
    const double b = translate(std::min(da, db));
    // x₀ is deterministic: its gap is known exactly.
    out.bound.push_back(t == 0 ? std::min(in.initial_gap, b) : b);
    da = use_a ? rho_a * da + drive_a : inf;
    db = use_b ? rho_b * db + drive_b : inf;
  }
  const double floor_a = use_a ? drive_a / (1.0 - rho_a) : inf;
  const double floor_b = use_b ? drive_b / (1.0 - rho_b) : inf;
  out.floor = translate(std::min(floor_a, floor_b));
  if (floor_b < floor_a) {
    out.contraction = rho_b;
  }
  out.vacuous = out.floor >= in.initial_gap;
  return out;
}

}  // namespace stragglersim::sim

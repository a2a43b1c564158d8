#include "fit/delay_fit.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <boost/math/constants/constants.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/exponential.hpp>
#include <boost/math/distributions/gamma.hpp>
#include <boost/math/distributions/lognormal.hpp>
#include <boost/math/distributions/pareto.hpp>
#include <boost/math/distributions/weibull.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <boost/math/tools/minima.hpp>
#include <boost/math/tools/roots.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "models/base/invariant.h"
#include "models/base/stop_request.h"

namespace stragglersim::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Relative change of log L below which EM and alternating maximisation stop.
constexpr double kTolerance = 1e-10;
/// A fitted probability this close to 0 or 1 flags the fit as degenerate.
constexpr double kProbabilityEdge = 1e-6;

using LogLikelihood = std::function<double(const Eigen::VectorXd&)>;

/// sqrt(diag((−H)⁻¹)) of the log-likelihood at `x` by central differences; nullopt entries when
/// −H is not positive definite there (a boundary optimum).
std::vector<std::optional<double>> standard_errors(const LogLikelihood& ll,
                                                   const Eigen::VectorXd& x) {
  const Eigen::Index k = x.size();
  Eigen::VectorXd h(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    h(i) = 1e-4 * std::max(std::abs(x(i)), 1e-3);
  }
  const double f0 = ll(x);
  Eigen::MatrixXd hessian(k, k);
  auto at = [&](Eigen::Index i, double si, Eigen::Index j, double sj) {
    Eigen::VectorXd y = x;
    y(i) += si * h(i);
    y(j) += sj * h(j);
    return ll(y);
  };
  for (Eigen::Index i = 0; i < k; ++i) {
    hessian(i, i) = (at(i, 1.0, i, 0.0) - 2.0 * f0 + at(i, -1.0, i, 0.0)) / (h(i) * h(i));
    for (Eigen::Index j = 0; j < i; ++j) {
      hessian(i, j) = (at(i, 1, j, 1) - at(i, 1, j, -1) - at(i, -1, j, 1) + at(i, -1, j, -1)) /
                      (4.0 * h(i) * h(j));
      hessian(j, i) = hessian(i, j);
    }
  }
  std::vector<std::optional<double>> out(static_cast<std::size_t>(k));
  const Eigen::LLT<Eigen::MatrixXd> llt(-hessian);
  if (llt.info() != Eigen::Success || !hessian.allFinite()) {
    return out;
  }
  const Eigen::MatrixXd covariance = llt.solve(Eigen::MatrixXd::Identity(k, k));
  for (Eigen::Index i = 0; i < k; ++i) {
    out[static_cast<std::size_t>(i)] = std::sqrt(covariance(i, i));
  }
  return out;
}

std::vector<double> sorted_copy(std::span<const double> times) {
  std::vector<double> s(times.begin(), times.end());
  std::sort(s.begin(), s.end());
  return s;
}

/// Fills log L, AIC and the KS test of a fitted family.
void finish(FamilyFit& fit,
            double log_likelihood,
            const std::vector<double>& sorted,
            const std::function<double(double)>& cdf) {
  fit.log_likelihood = log_likelihood;
  fit.aic = 2.0 * fit.parameter_count - 2.0 * log_likelihood;
  fit.ks = kolmogorov_smirnov(sorted, cdf);
}

FamilyFit unfitted(const std::string& family, std::string problem) {
  FamilyFit f;
  f.family = family;
  f.problem = std::move(problem);
  return f;
}

/// A family fitted by `fit`, or not fitted when its estimate is not finite: times near 1e308
/// overflow the sums and moments of the estimators (a Pareto shape of 0, an infinite log L), and
/// Boost.Math refuses such parameters with std::domain_error. No family is ranked on them.
template <typename Fit>
FamilyFit guarded(const std::string& family, Fit&& fit) {
  constexpr const char* kProblem =
      "estimate not finite (times too large or too spread for double precision)";
  FamilyFit f;
  try {
    f = std::forward<Fit>(fit)();
  } catch (const std::domain_error&) {
    return unfitted(family, kProblem);
  } catch (const std::overflow_error&) {
    return unfitted(family, kProblem);
  }
  if (!f.fitted()) {
    return f;
  }
  bool finite = std::isfinite(f.log_likelihood) && std::isfinite(f.aic) &&
                std::isfinite(f.ks.statistic) && std::isfinite(f.ks.p_value);
  for (const auto& p : f.parameters) {
    finite = finite && std::isfinite(p.value);
  }
  for (const double c : f.factors) {
    finite = finite && std::isfinite(c);
  }
  return finite ? f : unfitted(family, kProblem);
}

/// P(T ≤ t) of a shifted exponential (Boost.Math).
double shifted_exponential_cdf(double shift, double rate, double t) {
  return t <= shift ? 0.0 : cdf(boost::math::exponential_distribution<double>(rate), t - shift);
}

/// log(e^x + e^y) without overflow; −∞ terms allowed.
double log_sum_exp(double x, double y) {
  const double m = std::max(x, y);
  return m == -kInf ? -kInf : m + std::log(std::exp(x - m) + std::exp(y - m));
}

/// Boost's Brent minimum of `f` on [low, high] to `bits` bits, in at most kBrentSteps
/// evaluations, a NaN value counting as +inf: unbounded, the search cycled forever on the NaN
/// log-likelihoods of a trace holding a time of 1e308 (`fit` hung).
constexpr std::uintmax_t kBrentSteps = 500;

template <typename F>
std::pair<double, double> brent_minimum(F&& f, double low, double high, int bits) {
  std::uintmax_t steps = kBrentSteps;
  return boost::math::tools::brent_find_minima(
      [&](double v) {
        const double y = f(v);
        return std::isnan(y) ? kInf : y;
      },
      low,
      high,
      bits,
      steps);
}

/// The shift c ∈ [0, low) (low = min t) that maximises a profile log-likelihood, `negative(c)`
/// being minus its value: an 81-point grid in u = log(1 − c/low) ∈ [log 1e-8, 0], then Brent
/// around the best point. at_bound: the best is the grid's end c = low(1 − 1e-8), where the
/// law's scale collapses onto the smallest time (a degenerate fit).
struct ProfiledShift {
  double shift = 0.0;
  bool at_bound = false;
};

ProfiledShift profile_shift(double low, const std::function<double(double)>& negative) {
  constexpr int kGrid = 81;
  const double u_low = std::log(1e-8);
  const auto shift_at = [&](double u) { return low * -std::expm1(u); };
  double best_u = 0.0;
  double best = kInf;
  for (int i = 0; i < kGrid; ++i) {
    const double u = u_low * (1.0 - static_cast<double>(i) / (kGrid - 1));
    const double v = negative(shift_at(u));
    if (v < best) {
      best = v;
      best_u = u;
    }
  }
  const double step = -u_low / (kGrid - 1);
  const auto [u, value] = brent_minimum([&](double v) { return negative(shift_at(v)); },
                                        std::max(u_low, best_u - step),
                                        std::min(0.0, best_u + step),
                                        50);
  const double chosen = value < best ? u : best_u;
  return {shift_at(chosen), chosen <= u_low + 1e-3 * step};
}

/// Appends `why` to the fit's degeneracy flag ("degenerate: a; b").
void add_flag(FamilyFit& fit, const std::string& why) {
  fit.flag += (fit.flag.empty() ? "degenerate: " : "; ") + why;
}

/// Flags each named parameter (a probability) within 1e-6 of 0 or 1.
void flag_probabilities(FamilyFit& fit, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const double p = fit.value(name);
    if (p < kProbabilityEdge || p > 1.0 - kProbabilityEdge) {
      add_flag(fit, fmt::format("{} at {:.3g}", name, p));
    }
  }
}

// ---- bimodal -------------------------------------------------------------------------------

struct Bimodal {
  double shift, rate, slow_probability, slowdown;
};

/// log f₁(t), log f₂(t) of the bimodal components.
std::array<double, 2> bimodal_log_components(const Bimodal& b, double t) {
  const double normal = std::log(b.rate) - b.rate * (t - b.shift);
  const double slow = t >= b.slowdown * b.shift ? std::log(b.rate) - std::log(b.slowdown) -
                                                      b.rate * (t / b.slowdown - b.shift)
                                                : -kInf;
  return {normal, slow};
}

double bimodal_log_likelihood(const Bimodal& b, std::span<const double> times) {
  double ll = 0.0;
  for (const double t : times) {
    const auto [normal, slow] = bimodal_log_components(b, t);
    ll +=
        log_sum_exp(std::log1p(-b.slow_probability) + normal, std::log(b.slow_probability) + slow);
  }
  return ll;
}

/// EM for (λ, π) at the fixed shift and slowdown of `b`, at most `max_iterations` steps; returns
/// the final parameters, log L and the steps taken. κ is profiled outside: EM cannot raise it
/// past a time with zero slow responsibility (the slow component's support starts at κa).
std::tuple<Bimodal, double, int> bimodal_em(Bimodal b,
                                            std::span<const double> times,
                                            int max_iterations) {
  const auto n = static_cast<double>(times.size());
  double previous = -kInf;
  int iteration = 0;
  for (; iteration < max_iterations; ++iteration) {
    models::throw_if_stop_requested();  // a pass over every time: a caller's Ctrl-C (Python)
    double ll = 0.0;
    double w_sum = 0.0;
    double s1 = 0.0;
    double s2 = 0.0;
    for (const double t : times) {
      const auto [normal, slow] = bimodal_log_components(b, t);
      const double a = std::log1p(-b.slow_probability) + normal;
      const double c = std::log(b.slow_probability) + slow;
      const double total = log_sum_exp(a, c);
      ll += total;
      const double w = std::exp(c - total);
      w_sum += w;
      s1 += (1.0 - w) * (t - b.shift);
      s2 += w * t;
    }
    if (std::abs(ll - previous) <= kTolerance * std::max(1.0, std::abs(ll))) {
      previous = ll;
      break;
    }
    previous = ll;
    // λ maximises (n − W) log λ − λS₁ + W log(λ/κ) − λ(S₂/κ − aW); π = W/n, kept inside (0, 1).
    b.rate = n / (s1 + s2 / b.slowdown - b.shift * w_sum);
    b.slow_probability = std::clamp(w_sum / n, 1e-9, 1.0 - 1e-9);
  }
  return {b, previous, iteration};
}

/// The excesses t − c of sorted times (all > 0 for c < min t), their mean and mean log.
struct Excess {
  std::vector<double> x;
  double mean = 0.0;
  double mean_log = 0.0;
};

Excess excess_over(const std::vector<double>& sorted, double c) {
  Excess e;
  e.x.reserve(sorted.size());
  for (const double t : sorted) {
    e.x.push_back(t - c);
    e.mean += t - c;
    e.mean_log += std::log(t - c);
  }
  e.mean /= static_cast<double>(sorted.size());
  e.mean_log /= static_cast<double>(sorted.size());
  return e;
}

/// The checks shared by the three-parameter shifted families; empty when they can be fitted.
std::string shifted_family_problem(const std::vector<double>& sorted) {
  if (sorted.size() < 3 || sorted.front() == sorted.back()) {
    return "needs at least three distinct times";
  }
  if (sorted.front() <= 0.0) {
    return "needs every time > 0 (the shift is >= 0)";
  }
  return "";
}

/// Log-normal MLE of (μ, σ) at shift c: the mean and (biased) sd of log(t − c).
std::array<double, 2> lognormal_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  double ss = 0.0;
  for (const double x : e.x) {
    ss += (std::log(x) - e.mean_log) * (std::log(x) - e.mean_log);
  }
  return {e.mean_log, std::sqrt(ss / static_cast<double>(sorted.size()))};
}

/// Gamma MLE of (k, θ) at shift c: log k − ψ(k) = log mean − mean log (Newton from the
/// Minka/Thom start, in log k), θ = mean / k.
std::array<double, 2> gamma_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  const double s = std::log(e.mean) - e.mean_log;
  if (!(s > 0.0)) {
    return {kInf, 0.0};
  }
  double k = (3.0 - s + std::sqrt((s - 3.0) * (s - 3.0) + 24.0 * s)) / (12.0 * s);
  for (int i = 0; i < 50; ++i) {
    const double g = std::log(k) - boost::math::digamma(k) - s;
    const double dg = 1.0 / k - boost::math::trigamma(k);
    const double next = std::max(k - g / dg, 0.5 * k);
    if (std::abs(next - k) <= 1e-14 * k) {
      k = next;
      break;
    }
    k = next;
  }
  return {k, e.mean / k};
}

/// Weibull MLE of (k, λ) at shift c: Σx^k log x / Σx^k − 1/k = mean log x (increasing in k,
/// bracketed in [1e-3, 1e3]; times scaled by their maximum first), λ = (mean x^k)^{1/k}.
std::array<double, 2> weibull_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  const double top = e.x.back();
  std::vector<double> logs;
  for (const double x : e.x) {
    logs.push_back(std::log(x / top));
  }
  const double mean_log = e.mean_log - std::log(top);
  const auto g = [&](double k) {
    double num = 0.0;
    double den = 0.0;
    for (const double l : logs) {
      const double p = std::exp(k * l);
      num += p * l;
      den += p;
    }
    return num / den - 1.0 / k - mean_log;
  };
  constexpr double kLow = 1e-3;
  constexpr double kHigh = 1e3;
  double k = g(kLow) >= 0.0 ? kLow : kHigh;
  if (g(kLow) < 0.0 && g(kHigh) > 0.0) {
    std::uintmax_t its = 200;
    const auto r = boost::math::tools::toms748_solve(
        g, kLow, kHigh, boost::math::tools::eps_tolerance<double>(50), its);
    k = 0.5 * (r.first + r.second);
  }
  double mean_power = 0.0;
  for (const double l : logs) {
    mean_power += std::exp(k * l);
  }
  mean_power /= static_cast<double>(logs.size());
  return {k, top * std::pow(mean_power, 1.0 / k)};
}

/// A three-parameter shifted family: its name and the keys of its two tail parameters.
struct ShiftedFamily {
  std::string name;
  std::array<const char*, 2> keys;
};

/// Fits T = c + Y by profile likelihood: `at(sorted, c)` is the MLE of Y's two parameters at
/// shift c, `ll(sorted, (c, p1, p2))` the full log-likelihood (its information gives the standard
/// errors), `tail_cdf((c, p1, p2), y)` = P(Y ≤ y); c by profile_shift, flagged at its bound.
FamilyFit fit_profiled(
    const ShiftedFamily& family,
    std::span<const double> times,
    const std::function<double(const std::vector<double>&, const Eigen::VectorXd&)>& ll,
    const std::function<std::array<double, 2>(const std::vector<double>&, double)>& at,
    const std::function<double(const Eigen::Vector3d&, double)>& tail_cdf) {
  const std::vector<double> sorted = sorted_copy(times);
  if (const std::string why = shifted_family_problem(sorted); !why.empty()) {
    return unfitted(family.name, why);
  }
  const LogLikelihood log_l = [&](const Eigen::VectorXd& x) { return ll(sorted, x); };
  const auto full = [&](double c) {
    const auto [p1, p2] = at(sorted, c);
    return Eigen::Vector3d(c, p1, p2);
  };
  const ProfiledShift c =
      profile_shift(sorted.front(), [&](double shift) { return -log_l(full(shift)); });
  const Eigen::Vector3d x = full(c.shift);
  const auto se = standard_errors(log_l, x);
  FamilyFit fit;
  fit.family = family.name;
  fit.parameters = {
      {"shift", x(0), se[0]}, {family.keys[0], x(1), se[1]}, {family.keys[1], x(2), se[2]}};
  fit.parameter_count = 3;
  if (c.at_bound) {
    add_flag(fit, "shift at the smallest time (the search bound; the tail's scale collapses)");
  }
  finish(fit, log_l(x), sorted, [&](double t) { return t <= x(0) ? 0.0 : tail_cdf(x, t - x(0)); });
  return fit;
}

// ---- markov --------------------------------------------------------------------------------

struct Markov {
  double shift, rate, slow_shift, slow_rate, to_slow, to_normal;
};

/// Sufficient statistics of one E-step (Baum–Welch).
struct MarkovStatistics {
  double log_likelihood = 0.0;
  double normal_weight = 0.0, normal_excess = 0.0, slow_weight = 0.0, slow_excess = 0.0;
  double from_normal = 0.0, normal_to_slow = 0.0, from_slow = 0.0, slow_to_normal = 0.0;
};

std::array<double, 2> markov_log_emissions(const Markov& m, double t) {
  return {std::log(m.rate) - m.rate * (t - m.shift),
          t >= m.slow_shift ? std::log(m.slow_rate) - m.slow_rate * (t - m.slow_shift) : -kInf};
}

/// Forward–backward with per-step scaling over every worker's sequence; `expectations` false
/// runs the forward pass only (log L).
MarkovStatistics markov_e_step(const Markov& m,
                               const std::vector<std::vector<double>>& sequences,
                               bool expectations) {
  models::throw_if_stop_requested();  // a forward-backward pass over every sequence
  MarkovStatistics s;
  const double stationary_slow = m.to_slow / (m.to_slow + m.to_normal);
  const std::array<std::array<double, 2>, 2> p = {
      {{1.0 - m.to_slow, m.to_slow}, {m.to_normal, 1.0 - m.to_normal}}};
  std::vector<std::array<double, 2>> alpha;
  std::vector<std::array<double, 2>> emission;
  for (const auto& seq : sequences) {
    const std::size_t len = seq.size();
    alpha.assign(len, {0.0, 0.0});
    emission.assign(len, {0.0, 0.0});
    for (std::size_t t = 0; t < len; ++t) {
      const auto le = markov_log_emissions(m, seq[t]);
      const double top = std::max(le[0], le[1]);
      emission[t] = {std::exp(le[0] - top), std::exp(le[1] - top)};
      std::array<double, 2> a{};
      if (t == 0) {
        a = {1.0 - stationary_slow, stationary_slow};
      } else {
        for (int k = 0; k < 2; ++k) {
          a[static_cast<std::size_t>(k)] = alpha[t - 1][0] * p[0][static_cast<std::size_t>(k)] +
                                           alpha[t - 1][1] * p[1][static_cast<std::size_t>(k)];
        }
      }
      a[0] *= emission[t][0];
      a[1] *= emission[t][1];
      const double c = a[0] + a[1];
      s.log_likelihood += std::log(c) + top;
      alpha[t] = {a[0] / c, a[1] / c};
      // Keep the scale with the emission so that the backward pass reuses it.
      emission[t] = {emission[t][0] / c, emission[t][1] / c};
    }
    if (!expectations) {
      continue;
    }
    std::array<double, 2> beta = {1.0, 1.0};
    for (std::size_t t = len; t-- > 0;) {
      const double g0 = alpha[t][0] * beta[0];
      const double g1 = alpha[t][1] * beta[1];
      const double g = g0 + g1;
      s.normal_weight += g0 / g;
      s.normal_excess += g0 / g * (seq[t] - m.shift);
      s.slow_weight += g1 / g;
      s.slow_excess += g1 / g * (seq[t] - m.slow_shift);
      if (t == 0) {
        break;
      }
      // ξ_{t−1}(j, k) ∝ α_{t−1}(j) p_jk e_k(t) β_t(k), normalised to sum to one.
      std::array<std::array<double, 2>, 2> xi{};
      double xi_sum = 0.0;
      for (std::size_t j = 0; j < 2; ++j) {
        for (std::size_t k = 0; k < 2; ++k) {
          xi[j][k] = alpha[t - 1][j] * p[j][k] * emission[t][k] * beta[k];
          xi_sum += xi[j][k];
        }
      }
      s.from_normal += (xi[0][0] + xi[0][1]) / xi_sum;
      s.normal_to_slow += xi[0][1] / xi_sum;
      s.from_slow += (xi[1][0] + xi[1][1]) / xi_sum;
      s.slow_to_normal += xi[1][0] / xi_sum;
      beta = {p[0][0] * emission[t][0] * beta[0] + p[0][1] * emission[t][1] * beta[1],
              p[1][0] * emission[t][0] * beta[0] + p[1][1] * emission[t][1] * beta[1]};
    }
  }
  return s;
}

/// Baum–Welch at fixed shifts from `m`, at most `max_iterations` steps.
std::tuple<Markov, double, int> baum_welch(Markov m,
                                           const std::vector<std::vector<double>>& sequences,
                                           int max_iterations) {
  constexpr double kFloor = 1e-9;  // keeps both states and both transitions possible
  double previous = -kInf;
  int iteration = 0;
  for (; iteration < max_iterations; ++iteration) {
    const MarkovStatistics s = markov_e_step(m, sequences, true);
    if (!std::isfinite(s.log_likelihood) ||
        std::abs(s.log_likelihood - previous) <= kTolerance * std::abs(s.log_likelihood)) {
      previous = s.log_likelihood;
      break;
    }
    previous = s.log_likelihood;
    if (s.normal_excess <= 0.0 || s.slow_excess <= 0.0 || s.slow_weight < kFloor) {
      break;
    }
    m.rate = s.normal_weight / s.normal_excess;
    m.slow_rate = s.slow_weight / s.slow_excess;
    m.to_slow = std::clamp(s.normal_to_slow / s.from_normal, kFloor, 1.0 - kFloor);
    m.to_normal = std::clamp(s.slow_to_normal / s.from_slow, kFloor, 1.0 - kFloor);
  }
  return {m, previous, iteration};
}

}  // namespace

double FamilyFit::value(const std::string& name) const {
  for (const auto& p : parameters) {
    if (p.name == name) {
      return p.value;
    }
  }
  STRAGGLERSIM_ASSERT(false, "no such fitted parameter: " + name);
  return 0.0;
}

FamilyFit fit_shifted_exponential(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 2 || sorted.front() == sorted.back()) {
    return unfitted("shifted_exponential", "needs at least two distinct times");
  }
  const auto n = static_cast<double>(sorted.size());
  const double shift = sorted.front();
  const double excess = std::accumulate(sorted.begin(), sorted.end(), 0.0) - n * shift;
  const double rate = n / excess;
  auto ll = [&](const Eigen::VectorXd& x) { return n * std::log(x(0)) - x(0) * excess; };
  const auto se = standard_errors(ll, Eigen::VectorXd::Constant(1, rate));
  FamilyFit fit;
  fit.family = "shifted_exponential";
  fit.parameters = {{"shift", shift, std::nullopt}, {"rate", rate, se[0]}};
  fit.parameter_count = 2;
  finish(fit, ll(Eigen::VectorXd::Constant(1, rate)), sorted, [&](double t) {
    return shifted_exponential_cdf(shift, rate, t);
  });
  return fit;
}

FamilyFit fit_pareto(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 3 || sorted.front() == sorted.back()) {
    return unfitted("pareto", "needs at least three distinct times");
  }
  if (sorted.front() <= 0.0) {
    return unfitted("pareto", "needs every time > 0 (the Pareto scale is positive)");
  }
  const auto n = static_cast<double>(sorted.size());
  const double low = sorted.front();
  // Full log L in (shift c, shape α) with scale x_m = min t − c (its maximum in x_m).
  auto ll = [&](const Eigen::VectorXd& x) {
    double sum_log = 0.0;
    for (const double t : sorted) {
      sum_log += std::log(t - x(0));
    }
    return n * std::log(x(1)) + n * x(1) * std::log(low - x(0)) - (x(1) + 1.0) * sum_log;
  };
  auto shape_at = [&](double c) {
    double s = 0.0;
    for (const double t : sorted) {
      s += std::log((t - c) / (low - c));
    }
    return n / s;
  };
  const ProfiledShift profiled = profile_shift(low, [&](double c) {
    Eigen::VectorXd x(2);
    x << c, shape_at(c);
    return -ll(x);
  });
  const double c = profiled.shift;
  Eigen::VectorXd x(2);
  x << c, shape_at(c);
  const auto se = standard_errors(ll, x);
  FamilyFit fit;
  fit.family = "pareto";
  fit.parameters = {{"shift", c, se[0]}, {"scale", low - c, se[0]}, {"shape", x(1), se[1]}};
  fit.parameter_count = 3;
  if (profiled.at_bound) {
    add_flag(fit, fmt::format("scale at {:.3g} (the search bound 1e-8 min t)", low - c));
  }
  const boost::math::pareto_distribution<double> pareto(low - c, x(1));
  finish(fit, ll(x), sorted, [&](double t) { return t <= low ? 0.0 : cdf(pareto, t - c); });
  return fit;
}

FamilyFit fit_lognormal(std::span<const double> times) {
  const double half_log_2pi = 0.5 * std::log(2.0 * boost::math::constants::pi<double>());
  return fit_profiled(
      {"lognormal", {"log_mean", "log_sd"}},
      times,
      [&](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          const double z = std::log(t - x(0));
          sum += -z - std::log(x(2)) - half_log_2pi - (z - x(1)) * (z - x(1)) / (2.0 * x(2) * x(2));
        }
        return sum;
      },
      lognormal_at,
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::lognormal_distribution<double>(x(1), x(2)), y);
      });
}

FamilyFit fit_gamma(std::span<const double> times) {
  return fit_profiled(
      {"gamma", {"shape", "scale"}},
      times,
      [](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          sum += (x(1) - 1.0) * std::log(t - x(0)) - (t - x(0)) / x(2);
        }
        const auto n = static_cast<double>(sorted.size());
        return sum - n * (std::lgamma(x(1)) + x(1) * std::log(x(2)));
      },
      gamma_at,
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::gamma_distribution<double>(x(1), x(2)), y);
      });
}

FamilyFit fit_weibull(std::span<const double> times) {
  FamilyFit fit = fit_profiled(
      {"weibull", {"shape", "scale"}},
      times,
      [](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          const double z = (t - x(0)) / x(2);
          sum += (x(1) - 1.0) * std::log(z) - std::pow(z, x(1));
        }
        const auto n = static_cast<double>(sorted.size());
        return sum + n * (std::log(x(1)) - std::log(x(2)));
      },
      weibull_at,
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::weibull_distribution<double>(x(1), x(2)), y);
      });
  if (fit.fitted() && (fit.value("shape") <= 1.001e-3 || fit.value("shape") >= 0.999e3)) {
    add_flag(fit, fmt::format("shape at {:.3g} (the search bound)", fit.value("shape")));
  }
  return fit;
}

FamilyFit fit_bimodal(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 5 || sorted.front() == sorted.back()) {
    return unfitted("bimodal", "needs at least five distinct times");
  }
  const double shift = sorted.front();
  const double median = sorted[sorted.size() / 2];
  const double rate0 =
      median > shift ? std::log(2.0) / (median - shift) : 1.0 / (sorted.back() - shift);
  // Profile log L over κ: a log-spaced grid on [1, max t / a], then Brent around the best.
  const double kappa_high =
      std::max(2.0, shift > 0.0 ? sorted.back() / shift : sorted.back() / median);
  constexpr int kGrid = 40;
  Bimodal best{shift, rate0, 0.1, 1.0};
  double best_ll = -kInf;
  for (int i = 0; i < kGrid; ++i) {
    const double kappa = std::exp(std::log(kappa_high) * i / (kGrid - 1));
    const auto [b, ll, its] = bimodal_em({shift, rate0, 0.1, kappa}, sorted, 60);
    if (ll > best_ll) {
      best = b;
      best_ll = ll;
    }
  }
  const double step = std::log(kappa_high) / (kGrid - 1);
  const double centre = std::log(best.slowdown);
  const Bimodal from = best;
  const auto [log_kappa, negative] = brent_minimum(
      [&](double v) {
        Bimodal b = from;
        b.slowdown = std::exp(v);
        return -std::get<1>(bimodal_em(b, sorted, 60));
      },
      std::max(0.0, centre - step),
      centre + step,
      30);
  if (-negative > best_ll) {
    best.slowdown = std::exp(log_kappa);
  }
  const auto [refined, refined_ll, best_iterations] = bimodal_em(best, sorted, 2000);
  best = refined;
  best_ll = refined_ll;
  // κ fixes where the slow component's support starts (κa): a boundary estimate like a, so
  // the information is taken over (λ, π) only.
  auto ll = [&](const Eigen::VectorXd& x) {
    return bimodal_log_likelihood({shift, x(0), x(1), best.slowdown}, sorted);
  };
  Eigen::VectorXd x(2);
  x << best.rate, best.slow_probability;
  const auto se = standard_errors(ll, x);
  FamilyFit fit;
  fit.family = "bimodal";
  fit.parameters = {{"shift", shift, std::nullopt},
                    {"rate", best.rate, se[0]},
                    {"slow_probability", best.slow_probability, se[1]},
                    {"slowdown", best.slowdown, std::nullopt}};
  fit.parameter_count = 4;
  fit.iterations = best_iterations;
  flag_probabilities(fit, {"slow_probability"});
  if (best.slowdown <= 1.0 + kProbabilityEdge) {
    add_flag(fit, "slowdown at 1 (the two components coincide)");
  }
  finish(fit, best_ll, sorted, [&](double t) {
    return (1.0 - best.slow_probability) * shifted_exponential_cdf(shift, best.rate, t) +
           best.slow_probability * shifted_exponential_cdf(shift, best.rate, t / best.slowdown);
  });
  return fit;
}

/// P(T ≤ t) of the stationary marginal of a fitted markov family.
double markov_marginal_cdf(const FamilyFit& markov, double t) {
  const double p = markov.value("to_slow");
  const double slow = p / (p + markov.value("to_normal"));
  return (1.0 - slow) * shifted_exponential_cdf(markov.value("shift"), markov.value("rate"), t) +
         slow * shifted_exponential_cdf(markov.value("slow_shift"), markov.value("slow_rate"), t);
}

FamilyFit fit_markov(const std::vector<std::vector<double>>& sequences) {
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      return unfitted("markov", "needs at least two iterations per worker");
    }
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  const FamilyFit start = fit_bimodal(pooled);
  if (!start.fitted()) {
    return unfitted("markov", start.problem);
  }
  std::sort(pooled.begin(), pooled.end());
  const double shift = pooled.front();
  // The bimodal fit's slow component is the starting slow state.
  const double pi = std::clamp(start.value("slow_probability"), 0.01, 0.5);
  const Markov init{shift,
                    start.value("rate"),
                    shift,
                    start.value("rate") / start.value("slowdown"),
                    0.1 * pi,
                    0.1 * (1.0 - pi)};
  // EM cannot move the slow shift b (points below it have zero slow responsibility): profile
  // log L over b on a grid of quantiles, then refine by golden section around the best.
  auto profile = [&](double b, int iterations, Markov from) {
    from.slow_shift = b;
    return baum_welch(from, sequences, iterations);
  };
  constexpr int kGrid = 40;
  double best_b = shift;
  Markov best_model = init;
  double best_ll = -kInf;
  for (int i = 0; i < kGrid; ++i) {
    const auto q =
        static_cast<std::size_t>(0.995 * static_cast<double>(pooled.size() - 1) * i / (kGrid - 1));
    const auto [m, ll, its] = profile(pooled[q], 40, init);
    if (ll > best_ll) {
      best_ll = ll;
      best_b = pooled[q];
      best_model = m;
    }
  }
  const double span = (pooled[pooled.size() * 995 / 1000] - shift) / (kGrid - 1);
  const auto [b, negative] =
      brent_minimum([&](double v) { return -std::get<1>(profile(v, 40, best_model)); },
                    std::max(shift, best_b - span),
                    best_b + span,
                    20);
  if (-negative > best_ll) {
    best_b = b;
  }
  const auto fitted = profile(best_b, 2000, best_model);
  const Markov& m = std::get<0>(fitted);
  const double ll = std::get<1>(fitted);
  const int iterations = std::get<2>(fitted);
  auto log_l = [&](const Eigen::VectorXd& x) {
    return markov_e_step({shift, x(0), m.slow_shift, x(1), x(2), x(3)}, sequences, false)
        .log_likelihood;
  };
  Eigen::VectorXd x(4);
  x << m.rate, m.slow_rate, m.to_slow, m.to_normal;
  const auto se = standard_errors(log_l, x);
  FamilyFit fit;
  fit.family = "markov";
  fit.parameters = {{"shift", shift, std::nullopt},
                    {"rate", m.rate, se[0]},
                    {"slow_shift", m.slow_shift, std::nullopt},
                    {"slow_rate", m.slow_rate, se[1]},
                    {"to_slow", m.to_slow, se[2]},
                    {"to_normal", m.to_normal, se[3]}};
  fit.parameter_count = 6;
  fit.iterations = iterations;
  flag_probabilities(fit, {"to_slow", "to_normal"});
  finish(fit, ll, pooled, [&](double t) { return markov_marginal_cdf(fit, t); });
  return fit;
}

/// The median of `s` (not empty).
double median_of(std::vector<double> s) {
  const auto mid = s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2);
  std::nth_element(s.begin(), mid, s.end());
  return *mid;
}

/// Worker `seq`'s log L under the fitted chain `m` at factor c: log L_m(seq/c) − n log c.
double scaled_markov_log_likelihood(const Markov& m, const std::vector<double>& seq, double c) {
  std::vector<double> scaled = seq;
  for (double& t : scaled) {
    t /= c;
  }
  return markov_e_step(m, {scaled}, false).log_likelihood -
         static_cast<double>(seq.size()) * std::log(c);
}

/// One alternation step for the factors: each c_i maximises its worker's log L under the fitted
/// chain (Brent on log c within ±0.5 of the start, c ≤ min_i t / a so that every t/c_i stays in
/// the normal state's support). Returns Σ_i of the maximised log L.
double refine_factors(const Markov& m,
                      const std::vector<std::vector<double>>& sequences,
                      std::vector<double>& factors) {
  double total = 0.0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const double smallest = *std::min_element(sequences[i].begin(), sequences[i].end());
    const double high = std::min(std::log(factors[i]) + 0.5, std::log(smallest / m.shift));
    const double low = std::min(std::log(factors[i]) - 0.5, high);
    const auto [log_c, negative] = brent_minimum(
        [&](double v) { return -scaled_markov_log_likelihood(m, sequences[i], std::exp(v)); },
        low,
        high,
        30);
    const double start = scaled_markov_log_likelihood(m, sequences[i], factors[i]);
    if (-negative > start) {
      factors[i] = std::exp(log_c);
      total -= negative;
    } else {
      total += start;
    }
  }
  return total;
}

FamilyFit fit_heterogeneous_markov(const std::vector<std::vector<double>>& sequences) {
  const std::string family = "heterogeneous_markov";
  if (sequences.size() < 2) {
    return unfitted(family, "needs at least two workers");
  }
  // Medians, not means: a worker's mean moves with its number of slow spells.
  std::vector<double> factors;
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      return unfitted(family, "needs at least two iterations per worker");
    }
    factors.push_back(median_of(s));
  }
  const double fastest = *std::min_element(factors.begin(), factors.end());
  if (!(fastest > 0.0)) {
    return unfitted(family, "needs a positive median time for every worker");
  }
  std::vector<std::vector<double>> scaled = sequences;
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    factors[i] /= fastest;
    for (double& t : scaled[i]) {
      t /= factors[i];
    }
  }
  FamilyFit fit = fit_markov(scaled);
  if (!fit.fitted()) {
    return unfitted(family, fit.problem);
  }
  const Markov m{fit.value("shift"),
                 fit.value("rate"),
                 fit.value("slow_shift"),
                 fit.value("slow_rate"),
                 fit.value("to_slow"),
                 fit.value("to_normal")};
  const double log_likelihood = refine_factors(m, sequences, factors);
  // Back to the fastest worker at c = 1: T = c_i·M is unchanged when c_i → c_i/k and the chain's
  // times scale by k (shifts × k, rates / k), and so is log L.
  const double k = *std::min_element(factors.begin(), factors.end());
  for (double& c : factors) {
    c /= k;
  }
  for (auto& p : fit.parameters) {
    const double scale = p.name.ends_with("shift") ? k : p.name.ends_with("rate") ? 1.0 / k : 1.0;
    p.value *= scale;
    if (p.standard_error) {
      *p.standard_error *= scale;
    }
  }
  fit.family = family;
  fit.factors = factors;
  fit.parameter_count += static_cast<int>(factors.size()) - 1;
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  const FamilyFit markov = fit;
  finish(fit, log_likelihood, pooled, [&](double t) {
    double f = 0.0;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      f += static_cast<double>(sequences[i].size()) * markov_marginal_cdf(markov, t / factors[i]);
    }
    return f / static_cast<double>(pooled.size());
  });
  return fit;
}

FamilyFit fit_heterogeneous(const std::vector<std::vector<double>>& sequences) {
  if (sequences.size() < 2) {
    return unfitted("heterogeneous", "needs at least two workers");
  }
  std::vector<double> means;
  std::vector<double> minima;
  double total = 0.0;
  for (const auto& s : sequences) {
    if (s.empty()) {
      return unfitted("heterogeneous", "needs times of every worker");
    }
    means.push_back(std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size()));
    minima.push_back(*std::min_element(s.begin(), s.end()));
    total += static_cast<double>(s.size());
  }
  if (*std::min_element(means.begin(), means.end()) <= 0.0) {
    return unfitted("heterogeneous", "needs a positive mean time for every worker");
  }
  std::vector<double> factors = means;
  double shift = 0.0;
  double rate = 1.0;
  double previous = -kInf;
  double ll = -kInf;
  int iteration = 0;
  for (; iteration < 500; ++iteration) {
    const double smallest = *std::min_element(factors.begin(), factors.end());
    double log_factors = 0.0;
    double sum_z = 0.0;
    shift = kInf;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      factors[i] /= smallest;
      shift = std::min(shift, minima[i] / factors[i]);
      sum_z += means[i] * static_cast<double>(sequences[i].size()) / factors[i];
      log_factors += static_cast<double>(sequences[i].size()) * std::log(factors[i]);
    }
    if (sum_z - total * shift <= 0.0) {
      return unfitted("heterogeneous", "needs at least two distinct times per worker");
    }
    rate = total / (sum_z - total * shift);
    ll = total * std::log(rate) - total - log_factors;
    if (std::abs(ll - previous) <= kTolerance * std::abs(ll)) {
      break;
    }
    previous = ll;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      factors[i] = shift > 0.0 ? std::min(rate * means[i], minima[i] / shift) : rate * means[i];
    }
  }
  FamilyFit fit;
  fit.family = "heterogeneous";
  fit.parameters = {{"shift", shift, std::nullopt}, {"rate", rate, rate / std::sqrt(total)}};
  fit.factors = factors;
  fit.parameter_count = 2 + static_cast<int>(sequences.size()) - 1;
  fit.iterations = iteration;
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  finish(fit, ll, pooled, [&](double t) {
    double f = 0.0;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      f += static_cast<double>(sequences[i].size()) *
           shifted_exponential_cdf(shift, rate, t / factors[i]);
    }
    return f / total;
  });
  return fit;
}

HeterogeneityTest test_equal_rates(const std::vector<std::vector<double>>& sequences,
                                   double level) {
  HeterogeneityTest test;
  test.level = level;
  double shift = kInf;
  double total = 0.0;
  for (const auto& s : sequences) {
    for (const double t : s) {
      shift = std::min(shift, t);
    }
    total += static_cast<double>(s.size());
  }
  double excess = 0.0;
  double within = 0.0;  // Σ (batches − 1)·(long-run variance)
  double within_df = 0.0;
  for (const auto& s : sequences) {
    const double sum = std::accumulate(s.begin(), s.end(), 0.0);
    const auto n = static_cast<double>(s.size());
    test.mean_excess.push_back(n > 0.0 ? sum / n - shift : 0.0);
    excess += sum - n * shift;
    const auto size = static_cast<std::size_t>(std::max(1.0, std::floor(std::sqrt(n))));
    const std::size_t batches = s.size() / size;
    if (batches < 2) {
      continue;
    }
    std::vector<double> batch(batches, 0.0);
    for (std::size_t b = 0; b < batches; ++b) {
      batch[b] = std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(b * size),
                                 s.begin() + static_cast<std::ptrdiff_t>((b + 1) * size),
                                 0.0) /
                 static_cast<double>(size);
    }
    const double mean =
        std::accumulate(batch.begin(), batch.end(), 0.0) / static_cast<double>(batches);
    double ss = 0.0;
    for (const double v : batch) {
      ss += (v - mean) * (v - mean);
    }
    within += static_cast<double>(size) * ss;
    within_df += static_cast<double>(batches) - 1.0;
  }
  const double mean_excess = excess / total;
  if (sequences.size() < 2 || !(mean_excess > 0.0) || within_df < 1.0) {
    return test;
  }
  test.degrees_of_freedom = static_cast<int>(sequences.size()) - 1;
  test.dispersion = within / within_df / (mean_excess * mean_excess);
  double statistic = total * std::log(mean_excess);
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    statistic -= static_cast<double>(sequences[i].size()) * std::log(test.mean_excess[i]);
  }
  test.statistic = 2.0 * statistic;
  if (!std::isfinite(test.dispersion) || std::isnan(test.statistic)) {
    // Times near 1e308 overflow the variances: no test (printed as not tested, never as nan).
    test.degrees_of_freedom = 0;
    test.statistic = 0.0;
    test.dispersion = 1.0;
    return test;
  }
  if (!std::isfinite(test.statistic) || test.dispersion <= 0.0) {
    test.p_value = 0.0;
    return test;
  }
  const boost::math::chi_squared_distribution<double> chi2(test.degrees_of_freedom);
  test.p_value = cdf(complement(chi2, std::max(0.0, test.statistic / test.dispersion)));
  return test;
}

/// Picks the smallest AIC among the fits that may be chosen and says why (DelayFitReport).
void choose_best(DelayFitReport& report) {
  std::vector<std::string> excluded;
  for (std::size_t i = 0; i < report.fits.size(); ++i) {
    const FamilyFit& f = report.fits[i];
    if (!f.fitted()) {
      continue;
    }
    // Per-worker factors only when the test of equal rates rejects: AIC alone would let a
    // handful of noisy factors win on a large homogeneous sample.
    if (f.family.starts_with("heterogeneous") && !report.heterogeneity.heterogeneous()) {
      excluded.push_back(f.family + " (equal rates not rejected)");
      continue;
    }
    if (f.degenerate()) {
      excluded.push_back(f.family + " (degenerate)");
      continue;
    }
    if (!report.best || f.aic < report.fits[*report.best].aic) {
      report.best = i;
    }
  }
  if (!report.best) {
    report.choice = "no family fitted without a degenerate flag";
    return;
  }
  report.choice =
      fmt::format("{}: smallest AIC among the fitted families", report.fits[*report.best].family);
  if (!excluded.empty()) {
    report.choice += fmt::format("; not eligible: {}", fmt::join(excluded, ", "));
  }
}

DelayFitReport fit_delay_models(const std::vector<std::vector<double>>& sequences, bool ordered) {
  DelayFitReport report;
  report.workers = static_cast<int>(sequences.size());
  report.ordered = ordered;
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  report.observations = pooled.size();
  report.fits.push_back(
      guarded("shifted_exponential", [&] { return fit_shifted_exponential(pooled); }));
  report.fits.push_back(guarded("pareto", [&] { return fit_pareto(pooled); }));
  report.fits.push_back(guarded("lognormal", [&] { return fit_lognormal(pooled); }));
  report.fits.push_back(guarded("gamma", [&] { return fit_gamma(pooled); }));
  report.fits.push_back(guarded("weibull", [&] { return fit_weibull(pooled); }));
  report.fits.push_back(guarded("bimodal", [&] { return fit_bimodal(pooled); }));
  const std::string unordered = "needs iteration order (an iteration column)";
  report.fits.push_back(ordered ? guarded("markov", [&] { return fit_markov(sequences); })
                                : unfitted("markov", unordered));
  report.fits.push_back(guarded("heterogeneous", [&] { return fit_heterogeneous(sequences); }));
  report.fits.push_back(
      ordered ? guarded("heterogeneous_markov", [&] { return fit_heterogeneous_markov(sequences); })
              : unfitted("heterogeneous_markov", unordered));
  report.heterogeneity = test_equal_rates(sequences);
  choose_best(report);
  return report;
}

}  // namespace stragglersim::sim

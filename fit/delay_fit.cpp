#include "fit/delay_fit.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <atomic>
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
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <thread>
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
  if (!std::is_sorted(s.begin(), s.end())) {
    std::sort(s.begin(), s.end());
  }
  return s;
}

/// Traces of more times than this are searched on a sample of this many and the estimate is
/// then polished on every time (docs/fit.md "Large traces"): the grids and profile searches
/// cost hundreds of passes over the data, the polish a few dozen.
constexpr std::size_t kSearchSample = 4096;
/// The bimodal and Markov fits profile a boundary parameter (κ, b) whose log-likelihood jumps
/// at every time: their grid runs on the search sample, the local search around its best and EM
/// to convergence on a sample of this many times (every time when there are no more), then,
/// beyond it, a polish on every time.
constexpr std::size_t kLocalSearchLimit = 32768;
/// At most this many EM (Baum–Welch) passes over every time in a polish; each starts at the
/// sample's estimate, within its sampling error of the optimum.
constexpr int kPolishPasses = 25;

/// Every ((n − 1)/(m − 1))-th order statistic of `sorted` (the first and the last included), m =
/// `size`; all of `sorted` when it is no larger. A deterministic sample with the trace's
/// quantiles and its smallest time (the support of the shifted families).
std::vector<double> search_sample(const std::vector<double>& sorted,
                                  std::size_t size = kSearchSample) {
  if (sorted.size() <= size) {
    return sorted;
  }
  std::vector<double> sample(size);
  const std::size_t last = sorted.size() - 1;
  for (std::size_t i = 0; i < size; ++i) {
    sample[i] = sorted[i * last / (size - 1)];
  }
  return sample;
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
/// around the best point. With `polish` (minus the profile over every time, `negative` being
/// over the search sample), Brent again on the polish within a grid step of the sample's best.
/// at_bound: the best is the grid's end c = low(1 − 1e-8), where the law's scale collapses onto
/// the smallest time (a degenerate fit).
struct ProfiledShift {
  double shift = 0.0;
  bool at_bound = false;
};

ProfiledShift profile_shift(double low,
                            const std::function<double(double)>& negative,
                            const std::function<double(double)>* polish = nullptr) {
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
  double chosen = value < best ? u : best_u;
  if (polish != nullptr) {
    const double start = (*polish)(shift_at(chosen));
    const auto [v, polished] = brent_minimum([&](double w) { return (*polish)(shift_at(w)); },
                                             std::max(u_low, chosen - step),
                                             std::min(0.0, chosen + step),
                                             30);
    chosen = polished < start ? v : chosen;
  }
  return {shift_at(chosen), chosen <= u_low + 1e-3 * step};
}

/// profile_shift of sorted times with `log_likelihood(data, c)` the profile log L of `data` at
/// shift c: the grid and its Brent step on the search sample, the polish on every time.
ProfiledShift profile_shift_over(
    const std::vector<double>& sorted,
    const std::function<double(const std::vector<double>&, double)>& log_likelihood) {
  const std::vector<double> sample = search_sample(sorted);
  const std::function<double(double)> on_sample = [&](double c) {
    return -log_likelihood(sample, c);
  };
  const std::function<double(double)> on_all = [&](double c) { return -log_likelihood(sorted, c); };
  return profile_shift(
      sorted.front(), on_sample, sample.size() < sorted.size() ? &on_all : nullptr);
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

/// Runs every task once, on this thread and one more, each taking the next task not yet taken;
/// rethrows the exception of the first task (in order) that threw, after all have ended.
void run_on_two_threads(const std::vector<std::function<void()>>& tasks) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(tasks.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::thread helper(work);
  work();
  helper.join();
  for (const auto& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
}

// ---- bimodal -------------------------------------------------------------------------------

struct Bimodal {
  double shift, rate, slow_probability, slowdown;
};

/// log((1 − π) f₁(t)) and log(π f₂(t)) of the bimodal components, their logarithms of the
/// parameters computed once (a pass calls it for every time).
class BimodalTerms {
 public:
  explicit BimodalTerms(const Bimodal& b)
      : b_(b),
        normal_(std::log1p(-b.slow_probability) + std::log(b.rate)),
        slow_(std::log(b.slow_probability) + std::log(b.rate) - std::log(b.slowdown)),
        start_(b.slowdown * b.shift) {}

  [[nodiscard]] std::array<double, 2> operator()(double t) const {
    return {normal_ - b_.rate * (t - b_.shift),
            t >= start_ ? slow_ - b_.rate * (t / b_.slowdown - b_.shift) : -kInf};
  }

 private:
  Bimodal b_;
  double normal_, slow_, start_;
};

/// log(e^a + e^c) and the weight e^c / (e^a + e^c), with one exp and one log1p.
std::array<double, 2> log_total_and_weight(double a, double c) {
  if (c == -kInf) {
    return {a, 0.0};
  }
  const double d = c - a;
  const double e = std::exp(-std::abs(d));
  return {std::max(a, c) + std::log1p(e), d > 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e)};
}

double bimodal_log_likelihood(const Bimodal& b, std::span<const double> times) {
  const BimodalTerms terms(b);
  double ll = 0.0;
  for (const double t : times) {
    const auto [a, c] = terms(t);
    ll += log_total_and_weight(a, c)[0];
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
    const BimodalTerms terms(b);
    double ll = 0.0;
    double w_sum = 0.0;
    double s1 = 0.0;
    double s2 = 0.0;
    for (const double t : times) {
      const auto [a, c] = terms(t);
      const auto [total, w] = log_total_and_weight(a, c);
      ll += total;
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

/// The logarithms of the excesses t − c of sorted times (all > 0 for c < min t), and the means
/// of the excesses and of their logarithms.
struct Excess {
  std::vector<double> log_x;
  double mean = 0.0;
  double mean_log = 0.0;
};

Excess excess_over(const std::vector<double>& sorted, double c) {
  Excess e;
  e.log_x.reserve(sorted.size());
  for (const double t : sorted) {
    e.log_x.push_back(std::log(t - c));
    e.mean += t - c;
    e.mean_log += e.log_x.back();
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

/// The MLE of a shifted family's two tail parameters at shift c and the profile log-likelihood
/// there (log L at those parameters, in closed form from the pass's sums).
struct AtShift {
  double first = 0.0;
  double second = 0.0;
  double log_likelihood = -kInf;
};

/// Log-normal MLE of (μ, σ) at shift c: the mean and (biased) sd of log(t − c); log L =
/// −Σ log x − n log σ − n log √(2π) − n/2.
AtShift lognormal_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  double ss = 0.0;
  for (const double z : e.log_x) {
    ss += (z - e.mean_log) * (z - e.mean_log);
  }
  const auto n = static_cast<double>(sorted.size());
  const double sd = std::sqrt(ss / n);
  const double half_log_2pi = 0.5 * std::log(2.0 * boost::math::constants::pi<double>());
  return {e.mean_log, sd, -n * (e.mean_log + std::log(sd) + half_log_2pi + 0.5)};
}

/// Gamma MLE of (k, θ) at shift c: log k − ψ(k) = log mean − mean log (Newton from the
/// Minka/Thom start, in log k), θ = mean / k; log L = n((k − 1) mean log − k − log Γ(k) − k log θ).
AtShift gamma_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  const double s = std::log(e.mean) - e.mean_log;
  if (!(s > 0.0)) {
    return {kInf, 0.0, -kInf};
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
  const auto n = static_cast<double>(sorted.size());
  const double theta = e.mean / k;
  return {k, theta, n * ((k - 1.0) * e.mean_log - k - std::lgamma(k) - k * std::log(theta))};
}

/// The Weibull shape equation g(k) = Σp·l / Σp − 1/k − mean l = 0 (p = e^{kl}, l = log(x / max x))
/// with its derivative g′(k) = var_p(l) + 1/k² > 0, from one pass.
std::array<double, 2> weibull_equation(const Excess& e, double k) {
  const double log_top = e.log_x.back();
  double p_sum = 0.0;
  double pl_sum = 0.0;
  double pll_sum = 0.0;
  for (const double z : e.log_x) {
    const double l = z - log_top;
    const double p = std::exp(k * l);
    p_sum += p;
    pl_sum += p * l;
    pll_sum += p * l * l;
  }
  const double mean_l = pl_sum / p_sum;
  return {mean_l - 1.0 / k - (e.mean_log - log_top),
          pll_sum / p_sum - mean_l * mean_l + 1.0 / (k * k)};
}

/// Weibull MLE of (k, λ) at shift c: g(k) = 0 (increasing in k, bracketed in [1e-3, 1e3]; times
/// scaled by their maximum first), λ = (mean x^k)^{1/k}; log L = n(log k − k log λ − 1) +
/// (k − 1)Σ log x. `hint` (the shape at the previous shift, NaN for none) starts Newton's
/// method, a few passes; without one, or when Newton leaves the bracket, TOMS 748 on it.
AtShift weibull_at(const std::vector<double>& sorted, double c, double& hint) {
  const Excess e = excess_over(sorted, c);
  const double log_top = e.log_x.back();
  constexpr double kLow = 1e-3;
  constexpr double kHigh = 1e3;
  double k = std::isnan(hint) ? kInf : hint;
  for (int i = 0; i < 30 && std::isfinite(k); ++i) {
    const auto [g, dg] = weibull_equation(e, k);
    const double next = k - g / dg;
    if (!(next > kLow && next < kHigh)) {
      k = kInf;
    } else if (std::abs(next - k) <= 1e-7 * k) {
      k = next;  // quadratic convergence: the next step would be ~1e-14 k
      break;
    } else {
      k = next;
    }
  }
  if (!std::isfinite(k)) {
    const auto g = [&](double v) { return weibull_equation(e, v)[0]; };
    k = g(kLow) >= 0.0 ? kLow : kHigh;
    if (g(kLow) < 0.0 && g(kHigh) > 0.0) {
      std::uintmax_t its = 200;
      const auto r = boost::math::tools::toms748_solve(
          g, kLow, kHigh, boost::math::tools::eps_tolerance<double>(50), its);
      k = 0.5 * (r.first + r.second);
    }
  }
  hint = k;
  double mean_power = 0.0;
  for (const double z : e.log_x) {
    mean_power += std::exp(k * (z - log_top));
  }
  mean_power /= static_cast<double>(e.log_x.size());
  const auto n = static_cast<double>(sorted.size());
  const double log_scale = log_top + std::log(mean_power) / k;
  return {
      k, std::exp(log_scale), n * (std::log(k) - k * log_scale - 1.0) + (k - 1.0) * n * e.mean_log};
}

/// A three-parameter shifted family: its name and the keys of its two tail parameters.
struct ShiftedFamily {
  std::string name;
  std::array<const char*, 2> keys;
};

/// Fits T = c + Y by profile likelihood: `at(sorted, c)` is the MLE of Y's two parameters at
/// shift c with the profile log L, `ll(sorted, (c, p1, p2))` the full log-likelihood (its
/// information gives the standard errors), `tail_cdf((c, p1, p2), y)` = P(Y ≤ y); c by
/// profile_shift on the search sample, polished on every time, flagged at its bound.
FamilyFit fit_profiled(
    const ShiftedFamily& family,
    std::span<const double> times,
    const std::function<double(const std::vector<double>&, const Eigen::VectorXd&)>& ll,
    const std::function<AtShift(const std::vector<double>&, double)>& at,
    const std::function<double(const Eigen::Vector3d&, double)>& tail_cdf) {
  const std::vector<double> sorted = sorted_copy(times);
  if (const std::string why = shifted_family_problem(sorted); !why.empty()) {
    return unfitted(family.name, why);
  }
  const ProfiledShift c = profile_shift_over(
      sorted,
      [&](const std::vector<double>& data, double v) { return at(data, v).log_likelihood; });
  const AtShift best = at(sorted, c.shift);
  const Eigen::Vector3d x(c.shift, best.first, best.second);
  const LogLikelihood log_l = [&](const Eigen::VectorXd& y) { return ll(sorted, y); };
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

/// log f_normal(t), log f_slow(t) of the chain's states, their log rates computed once.
class MarkovEmissions {
 public:
  explicit MarkovEmissions(const Markov& m)
      : m_(m), log_rate_(std::log(m.rate)), log_slow_rate_(std::log(m.slow_rate)) {}

  [[nodiscard]] std::array<double, 2> operator()(double t) const {
    return {log_rate_ - m_.rate * (t - m_.shift),
            t >= m_.slow_shift ? log_slow_rate_ - m_.slow_rate * (t - m_.slow_shift) : -kInf};
  }

 private:
  Markov m_;
  double log_rate_, log_slow_rate_;
};

/// The emissions e^{le − max le} (the larger is 1 exactly: one exp per time) and max le.
std::pair<std::array<double, 2>, double> relative_emissions(const std::array<double, 2>& le) {
  const double top = std::max(le[0], le[1]);
  return {le[0] >= le[1] ? std::array<double, 2>{1.0, std::exp(le[1] - top)}
                         : std::array<double, 2>{std::exp(le[0] - top), 1.0},
          top};
}

/// Adds Σ log c of the forward pass's per-step scales c to a log-likelihood: their product is
/// kept and its logarithm added only when it nears the ends of the double range (no log per
/// time), the rest at the end of the sequence.
class LogOfScales {
 public:
  void multiply(double c, double& log_likelihood) {
    product_ *= c;
    if (!(product_ > 1e-200 && product_ < 1e200)) {
      log_likelihood += std::log(product_);
      product_ = 1.0;
    }
  }
  void finish(double& log_likelihood) const { log_likelihood += std::log(product_); }

 private:
  double product_ = 1.0;
};

/// log L of the chain for one worker's times seq[t] / divisor: the forward pass with per-step
/// scaling.
double markov_sequence_log_likelihood(const Markov& m,
                                      const MarkovEmissions& log_emissions,
                                      std::span<const double> seq,
                                      double divisor) {
  const double stationary_slow = m.to_slow / (m.to_slow + m.to_normal);
  double log_likelihood = 0.0;
  LogOfScales scales;
  std::array<double, 2> alpha = {1.0 - stationary_slow, stationary_slow};
  for (std::size_t t = 0; t < seq.size(); ++t) {
    const auto [e, top] = relative_emissions(log_emissions(seq[t] / divisor));
    std::array<double, 2> a = alpha;
    if (t > 0) {
      a = {alpha[0] * (1.0 - m.to_slow) + alpha[1] * m.to_normal,
           alpha[0] * m.to_slow + alpha[1] * (1.0 - m.to_normal)};
    }
    a[0] *= e[0];
    a[1] *= e[1];
    const double c = a[0] + a[1];
    log_likelihood += top;
    scales.multiply(c, log_likelihood);
    const double inverse = 1.0 / c;
    alpha = {a[0] * inverse, a[1] * inverse};
  }
  scales.finish(log_likelihood);
  return log_likelihood;
}

/// log L of the chain over every worker's sequence (markov_sequence_log_likelihood, summed).
double markov_log_likelihood(const Markov& m, const std::vector<std::vector<double>>& sequences) {
  models::throw_if_stop_requested();  // a forward pass over every sequence
  const MarkovEmissions log_emissions(m);
  double log_likelihood = 0.0;
  for (const auto& seq : sequences) {
    log_likelihood += markov_sequence_log_likelihood(m, log_emissions, seq, 1.0);
  }
  return log_likelihood;
}

using MarkovTransitions = std::array<std::array<double, 2>, 2>;

/// The scaled forward pass over one sequence: α_t normalised to sum to one, each step's
/// emissions divided by the same scale (so that the backward pass reuses it); adds the
/// sequence's log L to `log_likelihood`.
inline void scaled_forward(const MarkovEmissions& log_emissions,
                           const MarkovTransitions& p,
                           double stationary_slow,
                           const std::vector<double>& seq,
                           std::vector<std::array<double, 2>>& alpha,
                           std::vector<std::array<double, 2>>& emission,
                           double& log_likelihood) {
  const std::size_t len = seq.size();
  alpha.assign(len, {0.0, 0.0});
  emission.assign(len, {0.0, 0.0});
  LogOfScales scales;
  for (std::size_t t = 0; t < len; ++t) {
    const auto [e, top] = relative_emissions(log_emissions(seq[t]));
    emission[t] = e;
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
    log_likelihood += top;
    scales.multiply(c, log_likelihood);
    const double inverse = 1.0 / c;
    alpha[t] = {a[0] * inverse, a[1] * inverse};
    // Keep the scale with the emission so that the backward pass reuses it.
    emission[t] = {emission[t][0] * inverse, emission[t][1] * inverse};
  }
  scales.finish(log_likelihood);
}

/// The backward pass over one sequence after scaled_forward: adds the posterior state weights
/// and the expected transition counts to `s`.
inline void backward_statistics(const Markov& m,
                                const MarkovTransitions& p,
                                const std::vector<double>& seq,
                                const std::vector<std::array<double, 2>>& alpha,
                                const std::vector<std::array<double, 2>>& emission,
                                MarkovStatistics& s) {
  std::array<double, 2> beta = {1.0, 1.0};
  for (std::size_t t = seq.size(); t-- > 0;) {
    const double g0 = alpha[t][0] * beta[0];
    const double g1 = alpha[t][1] * beta[1];
    const double inverse = 1.0 / (g0 + g1);
    const double w0 = g0 * inverse;
    const double w1 = g1 * inverse;
    s.normal_weight += w0;
    s.normal_excess += w0 * (seq[t] - m.shift);
    s.slow_weight += w1;
    s.slow_excess += w1 * (seq[t] - m.slow_shift);
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
    const double xi_inverse = 1.0 / xi_sum;
    s.from_normal += (xi[0][0] + xi[0][1]) * xi_inverse;
    s.normal_to_slow += xi[0][1] * xi_inverse;
    s.from_slow += (xi[1][0] + xi[1][1]) * xi_inverse;
    s.slow_to_normal += xi[1][0] * xi_inverse;
    beta = {p[0][0] * emission[t][0] * beta[0] + p[0][1] * emission[t][1] * beta[1],
            p[1][0] * emission[t][0] * beta[0] + p[1][1] * emission[t][1] * beta[1]};
  }
}

/// Forward–backward with per-step scaling over every worker's sequence: the E-step's
/// statistics and log L.
MarkovStatistics markov_e_step(const Markov& m, const std::vector<std::vector<double>>& sequences) {
  models::throw_if_stop_requested();  // a forward-backward pass over every sequence
  MarkovStatistics s;
  const double stationary_slow = m.to_slow / (m.to_slow + m.to_normal);
  const MarkovTransitions p = {{{1.0 - m.to_slow, m.to_slow}, {m.to_normal, 1.0 - m.to_normal}}};
  std::vector<std::array<double, 2>> alpha;
  std::vector<std::array<double, 2>> emission;
  const MarkovEmissions log_emissions(m);
  for (const auto& seq : sequences) {
    scaled_forward(log_emissions, p, stationary_slow, seq, alpha, emission, s.log_likelihood);
    backward_statistics(m, p, seq, alpha, emission, s);
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
    const MarkovStatistics s = markov_e_step(m, sequences);
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
  // At shift c the shape's MLE is α = n / Σ log((t − c)/(min t − c)), and log L in closed form
  // from the one sum Σ log(t − c).
  struct Profile {
    double shape, log_likelihood;
  };
  auto profile_at = [&](const std::vector<double>& data, double c) {
    const auto m = static_cast<double>(data.size());
    double sum_log = 0.0;
    for (const double t : data) {
      sum_log += std::log(t - c);
    }
    const double log_scale = std::log(low - c);
    const double shape = m / (sum_log - m * log_scale);
    return Profile{shape, m * std::log(shape) + m * shape * log_scale - (shape + 1.0) * sum_log};
  };
  auto shape_at = [&](double c) { return profile_at(sorted, c).shape; };
  const ProfiledShift profiled =
      profile_shift_over(sorted, [&](const std::vector<double>& data, double c) {
        return profile_at(data, c).log_likelihood;
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
          const double log_z = std::log((t - x(0)) / x(2));
          sum += (x(1) - 1.0) * log_z - std::exp(x(1) * log_z);
        }
        const auto n = static_cast<double>(sorted.size());
        return sum + n * (std::log(x(1)) - std::log(x(2)));
      },
      [hint = std::numeric_limits<double>::quiet_NaN()](const std::vector<double>& sorted,
                                                        double c) mutable {
        return weibull_at(sorted, c, hint);
      },
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::weibull_distribution<double>(x(1), x(2)), y);
      });
  if (fit.fitted() && (fit.value("shape") <= 1.001e-3 || fit.value("shape") >= 0.999e3)) {
    add_flag(fit, fmt::format("shape at {:.3g} (the search bound)", fit.value("shape")));
  }
  return fit;
}

namespace {

/// The profile search of the bimodal fit: a κ grid on sorted times `grid` (EM for (λ, π) at
/// each), then on sorted times `local` (with the same smallest time) Brent around the best κ and
/// EM to convergence there. Returns the estimate, log L and EM's steps.
std::tuple<Bimodal, double, int> search_bimodal(const std::vector<double>& grid,
                                                const std::vector<double>& local) {
  const std::vector<double>& sorted = grid;
  const double shift = sorted.front();
  const double median = sorted[sorted.size() / 2];
  const double rate0 =
      median > shift ? std::numbers::ln2 / (median - shift) : 1.0 / (sorted.back() - shift);
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
        return -std::get<1>(bimodal_em(b, local, 60));
      },
      std::max(0.0, centre - step),
      centre + step,
      30);
  if (&local != &grid) {  // other times than the grid's: its best log L, again on `local`
    best_ll = std::get<1>(bimodal_em(best, local, 60));
  }
  if (-negative > best_ll) {
    best.slowdown = std::exp(log_kappa);
  }
  return bimodal_em(best, local, 2000);
}

/// The bimodal estimate on every time from the search sample's `start`: EM at the sample's κ,
/// then κ by Brent within ±0.1 of log κ at that (λ, π) (one pass per step), then EM again; each EM
/// at most kPolishPasses passes. Returns the estimate, its log L and the EM passes taken.
std::tuple<Bimodal, double, int> polish_bimodal(Bimodal start, const std::vector<double>& sorted) {
  // Named, not structured bindings: the lambdas below capture them (C++20 allows it; Clang 14,
  // which clang-tidy runs on, does not).
  Bimodal b{};
  double ll = 0.0;
  int passes = 0;
  std::tie(b, ll, passes) = bimodal_em(start, sorted, kPolishPasses);
  const double centre = std::log(b.slowdown);
  const auto [log_kappa, negative] = brent_minimum(
      [&](double v) {
        Bimodal at = b;
        at.slowdown = std::exp(v);
        return -bimodal_log_likelihood(at, sorted);
      },
      std::max(0.0, centre - 0.1),
      centre + 0.1,
      30);
  if (-negative > bimodal_log_likelihood(b, sorted)) {
    b.slowdown = std::exp(log_kappa);
  }
  const auto [polished, polished_ll, more] = bimodal_em(b, sorted, kPolishPasses);
  // EM's log L is the one before its last step: the returned estimate's own, recomputed.
  return {polished, bimodal_log_likelihood(polished, sorted), passes + more};
}

}  // namespace

FamilyFit fit_bimodal(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 5 || sorted.front() == sorted.back()) {
    return unfitted("bimodal", "needs at least five distinct times");
  }
  const double shift = sorted.front();
  const std::vector<double> sample = search_sample(sorted);
  const bool local = sorted.size() <= kLocalSearchLimit;
  const std::vector<double>& grid = sample.size() < sorted.size() ? sample : sorted;
  Bimodal best{};
  double best_ll = 0.0;
  int best_iterations = 0;
  std::tie(best, best_ll, best_iterations) =
      search_bimodal(grid, local ? sorted : search_sample(sorted, kLocalSearchLimit));
  if (!local) {
    std::tie(best, best_ll, best_iterations) = polish_bimodal(best, sorted);
  }
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

namespace {

/// P(T ≤ t) of the chain's stationary marginal.
double markov_marginal_cdf(const Markov& m, double t) {
  const double slow = m.to_slow / (m.to_slow + m.to_normal);
  return (1.0 - slow) * shifted_exponential_cdf(m.shift, m.rate, t) +
         slow * shifted_exponential_cdf(m.slow_shift, m.slow_rate, t);
}

/// The chain of a fitted markov family.
Markov chain_of(const FamilyFit& f) {
  return Markov{f.value("shift"),
                f.value("rate"),
                f.value("slow_shift"),
                f.value("slow_rate"),
                f.value("to_slow"),
                f.value("to_normal")};
}

}  // namespace

namespace {

/// About kSearchSample times of `sequences` (`total` in all) for the Markov search, as windows of
/// consecutive iterations (the chain's order kept within each): every worker contributes
/// windows of up to 64 iterations, evenly spread over its sequence. All of `sequences` when
/// they are no larger.
std::vector<std::vector<double>> markov_search_sample(
    const std::vector<std::vector<double>>& sequences,
    std::size_t total,
    std::size_t size = kSearchSample) {
  if (total <= size) {
    return sequences;
  }
  const std::size_t per_worker = std::max<std::size_t>(2, size / sequences.size());
  std::vector<std::vector<double>> windows;
  for (const auto& seq : sequences) {
    const std::size_t width = std::min({per_worker, std::size_t{64}, seq.size()});
    const std::size_t count = std::max<std::size_t>(1, per_worker / width);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t start = (seq.size() - width) * (2 * j + 1) / (2 * count);
      windows.emplace_back(seq.begin() + static_cast<std::ptrdiff_t>(start),
                           seq.begin() + static_cast<std::ptrdiff_t>(start + width));
    }
  }
  return windows;
}

/// Every worker's times in one sorted sample.
std::vector<double> sorted_pool(const std::vector<std::vector<double>>& sequences) {
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  return pooled;
}

/// The profile search of the Markov fit from `init`: EM cannot move the slow shift b (points
/// below it have zero slow responsibility), so log L is profiled over b on a grid of quantiles
/// of `sequences`, then refined by Brent around the best on `local` (the same or more of the
/// workers' times); Baum–Welch to convergence there. Returns the estimate, log L and the passes
/// of the last Baum–Welch.
std::tuple<Markov, double, int> search_markov(const std::vector<std::vector<double>>& sequences,
                                              const std::vector<std::vector<double>>& local,
                                              const Markov& init) {
  const std::vector<double> pooled = sorted_pool(sequences);
  const double shift = init.shift;
  auto profile = [&](double b, int iterations, Markov from) {
    from.slow_shift = b;
    return baum_welch(from, sequences, iterations);
  };
  auto profile_local = [&](double b, int iterations, Markov from) {
    from.slow_shift = b;
    return baum_welch(from, local, iterations);
  };
  constexpr int kGrid = 40;
  std::array<double, kGrid> grid{};
  double best_b = shift;
  int best_i = 0;
  Markov best_model = init;
  double best_ll = -kInf;
  for (int i = 0; i < kGrid; ++i) {
    const auto q =
        static_cast<std::size_t>(0.995 * static_cast<double>(pooled.size() - 1) * i / (kGrid - 1));
    grid[static_cast<std::size_t>(i)] = pooled[q];
    const auto [m, ll, its] = profile(pooled[q], 40, init);
    if (ll > best_ll) {
      best_ll = ll;
      best_b = pooled[q];
      best_i = i;
      best_model = m;
    }
  }
  // Brent between the best quantile's neighbours (the grid is in quantiles, not in seconds).
  const auto at = [&](int i) { return grid[static_cast<std::size_t>(i)]; };
  const double low = best_i > 0 ? at(best_i - 1) : shift;
  const double high = best_i + 1 < kGrid ? at(best_i + 1) : best_b + (best_b - at(best_i - 1));
  const auto [b, negative] =
      brent_minimum([&](double v) { return -std::get<1>(profile_local(v, 40, best_model)); },
                    std::max(shift, low),
                    std::max(high, low),
                    20);
  if (&local != &sequences) {  // other times than the grid's: its best log L on `local`
    best_ll = std::get<1>(profile_local(best_b, 40, best_model));
  }
  if (-negative > best_ll) {
    best_b = b;
  }
  return profile_local(best_b, 2000, best_model);
}

/// The Markov estimate on every sequence from the search's `start`: Baum–Welch at the start's b,
/// then b by Brent within ±5 % of b − a at those parameters (one forward pass per step), then
/// Baum–Welch again; each at most kPolishPasses passes. Returns the estimate, its log L and the
/// passes taken.
std::tuple<Markov, double, int> polish_markov(const Markov& start,
                                              const std::vector<std::vector<double>>& sequences) {
  Markov m{};
  double ll = 0.0;
  int passes = 0;
  std::tie(m, ll, passes) = baum_welch(start, sequences, kPolishPasses);
  const double reach = 0.05 * (m.slow_shift - m.shift);
  const auto forward = [&](const Markov& at) { return markov_log_likelihood(at, sequences); };
  const auto [b, negative] = brent_minimum(
      [&](double v) {
        Markov at = m;
        at.slow_shift = v;
        return -forward(at);
      },
      std::max(m.shift, m.slow_shift - reach),
      m.slow_shift + reach,
      30);
  if (-negative > forward(m)) {
    m.slow_shift = b;
  }
  const auto [polished, polished_ll, more] = baum_welch(m, sequences, kPolishPasses);
  return {polished, forward(polished), passes + more};
}

}  // namespace

FamilyFit fit_markov(const std::vector<std::vector<double>>& sequences) {
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      return unfitted("markov", "needs at least two iterations per worker");
    }
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  if (pooled.size() < 5 || pooled.front() == pooled.back()) {
    return unfitted("markov", "needs at least five distinct times");
  }
  const double shift = pooled.front();
  const auto sample = markov_search_sample(sequences, pooled.size());
  // The bimodal estimate of the search sample's times is the start: its slow component the
  // starting slow state.
  std::vector<double> sample_pooled;
  for (const auto& s : sample) {
    sample_pooled.insert(sample_pooled.end(), s.begin(), s.end());
  }
  std::sort(sample_pooled.begin(), sample_pooled.end());
  const std::vector<double> start_sample = search_sample(sample_pooled);
  const Bimodal start = std::get<0>(search_bimodal(start_sample, start_sample));
  const double pi = std::clamp(start.slow_probability, 0.01, 0.5);
  const Markov init{
      shift, start.rate, shift, start.rate / start.slowdown, 0.1 * pi, 0.1 * (1.0 - pi)};
  const bool local = pooled.size() <= kLocalSearchLimit;
  auto fitted = search_markov(
      pooled.size() > kSearchSample ? sample : sequences,
      local ? sequences : markov_search_sample(sequences, pooled.size(), kLocalSearchLimit),
      init);
  if (!local) {
    fitted = polish_markov(std::get<0>(fitted), sequences);
  }
  const Markov& m = std::get<0>(fitted);
  const double ll = std::get<1>(fitted);
  const int iterations = std::get<2>(fitted);
  auto log_l = [&](const Eigen::VectorXd& x) {
    return markov_log_likelihood({shift, x(0), m.slow_shift, x(1), x(2), x(3)}, sequences);
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
  finish(fit, ll, pooled, [&](double t) { return markov_marginal_cdf(m, t); });
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
  models::throw_if_stop_requested();  // a forward pass over one worker's times
  return markov_sequence_log_likelihood(m, MarkovEmissions(m), seq, c) -
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

namespace {

/// The workers' times divided by their median factors c_i = median_i / min_j median_j (medians,
/// not means: a worker's mean moves with its number of slow spells), or why they cannot be.
struct MedianScaled {
  std::vector<double> factors;
  std::vector<std::vector<double>> scaled;
  std::string problem;
};

MedianScaled median_scaled(const std::vector<std::vector<double>>& sequences) {
  MedianScaled out;
  if (sequences.size() < 2) {
    out.problem = "needs at least two workers";
    return out;
  }
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      out.problem = "needs at least two iterations per worker";
      return out;
    }
    out.factors.push_back(median_of(s));
  }
  const double fastest = *std::min_element(out.factors.begin(), out.factors.end());
  if (!(fastest > 0.0)) {
    out.problem = "needs a positive median time for every worker";
    return out;
  }
  out.scaled = sequences;
  for (std::size_t i = 0; i < out.scaled.size(); ++i) {
    out.factors[i] /= fastest;
    for (double& t : out.scaled[i]) {
      t /= out.factors[i];
    }
  }
  return out;
}

/// The heterogeneous Markov fit from its two starts: `fit`, the chain fitted to the times
/// scaled by the median `factors`, and `unscaled`, the markov family's fit (factors 1).
FamilyFit heterogeneous_markov_from(const std::vector<std::vector<double>>& sequences,
                                    std::vector<double> factors,
                                    FamilyFit fit,
                                    const FamilyFit& unscaled) {
  const std::string family = "heterogeneous_markov";
  // The second start, factors 1 under the chain of the unscaled times, taken when the first
  // fits worse than that chain alone: the family nests the markov family, and this start keeps
  // its fit at least as good (refine_factors only accepts gains). Otherwise the first start is
  // kept even where the second's log L is higher: one alternation from the unscaled chain keeps
  // that chain, whose rates are pulled by the slower workers' times (the first start's are not).
  // The two alternations are independent and run side by side.
  std::vector<double> ones(sequences.size(), 1.0);
  double from_ones = -kInf;
  double log_likelihood = 0.0;
  run_on_two_threads({[&] { log_likelihood = refine_factors(chain_of(fit), sequences, factors); },
                      [&] {
                        if (unscaled.fitted()) {
                          from_ones = refine_factors(chain_of(unscaled), sequences, ones);
                        }
                      }});
  if (unscaled.fitted() && log_likelihood < unscaled.log_likelihood && from_ones > log_likelihood) {
    fit = unscaled;
    factors = ones;
    log_likelihood = from_ones;
  }
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
  const std::vector<double> pooled = sorted_pool(sequences);
  const Markov m = chain_of(fit);
  finish(fit, log_likelihood, pooled, [&](double t) {
    double f = 0.0;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      f += static_cast<double>(sequences[i].size()) * markov_marginal_cdf(m, t / factors[i]);
    }
    return f / static_cast<double>(pooled.size());
  });
  return fit;
}

}  // namespace

FamilyFit fit_heterogeneous_markov(const std::vector<std::vector<double>>& sequences,
                                   const FamilyFit* markov) {
  const std::string family = "heterogeneous_markov";
  MedianScaled start = median_scaled(sequences);
  if (!start.problem.empty()) {
    return unfitted(family, start.problem);
  }
  FamilyFit fit = fit_markov(start.scaled);
  if (!fit.fitted()) {
    return unfitted(family, fit.problem);
  }
  return heterogeneous_markov_from(sequences,
                                   std::move(start.factors),
                                   std::move(fit),
                                   markov != nullptr ? *markov : fit_markov(sequences));
}

namespace {

/// Each worker's mean and fastest time, and the count of all times.
struct WorkerSummaries {
  std::vector<double> means;
  std::vector<double> minima;
  double total = 0.0;
};

WorkerSummaries worker_summaries(const std::vector<std::vector<double>>& sequences) {
  WorkerSummaries w;
  for (const auto& s : sequences) {
    w.means.push_back(std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size()));
    w.minima.push_back(*std::min_element(s.begin(), s.end()));
    w.total += static_cast<double>(s.size());
  }
  return w;
}

/// Batch means of one worker's times (⌊√n⌋ batches of ⌊√n⌋): (batch size · Σ (batch mean −
/// their mean)², batches − 1), the worker's part of the long-run variance and its degrees of
/// freedom; (0, 0) with fewer than two batches.
std::pair<double, double> batch_means_spread(const std::vector<double>& s) {
  const auto n = static_cast<double>(s.size());
  const auto size = static_cast<std::size_t>(std::max(1.0, std::floor(std::sqrt(n))));
  const std::size_t batches = s.size() / size;
  if (batches < 2) {
    return {0.0, 0.0};
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
  return {static_cast<double>(size) * ss, static_cast<double>(batches) - 1.0};
}

}  // namespace

FamilyFit fit_heterogeneous(const std::vector<std::vector<double>>& sequences) {
  if (sequences.size() < 2) {
    return unfitted("heterogeneous", "needs at least two workers");
  }
  if (std::any_of(sequences.begin(), sequences.end(), [](const auto& s) { return s.empty(); })) {
    return unfitted("heterogeneous", "needs times of every worker");
  }
  const WorkerSummaries w = worker_summaries(sequences);
  const double total = w.total;
  if (*std::min_element(w.means.begin(), w.means.end()) <= 0.0) {
    return unfitted("heterogeneous", "needs a positive mean time for every worker");
  }
  std::vector<double> factors = w.means;
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
      shift = std::min(shift, w.minima[i] / factors[i]);
      sum_z += w.means[i] * static_cast<double>(sequences[i].size()) / factors[i];
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
      factors[i] =
          shift > 0.0 ? std::min(rate * w.means[i], w.minima[i] / shift) : rate * w.means[i];
    }
  }
  FamilyFit fit;
  fit.family = "heterogeneous";
  fit.parameters = {{"shift", shift, std::nullopt}, {"rate", rate, rate / std::sqrt(total)}};
  fit.factors = factors;
  fit.parameter_count = 2 + static_cast<int>(sequences.size()) - 1;
  fit.iterations = iteration;
  const std::vector<double> pooled = sorted_pool(sequences);
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
    const auto [spread, df] = batch_means_spread(s);
    within += spread;
    within_df += df;
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
  std::sort(pooled.begin(), pooled.end());
  const std::string unordered = "needs iteration order (an iteration column)";
  const MedianScaled start = ordered ? median_scaled(sequences) : MedianScaled{};
  // Each family (and the chain of the median-scaled times, the heterogeneous Markov fit's first
  // start) is a task writing its own slot; two threads take them in this order, the slowest
  // first. The fits are independent, so the report is the same bytes on one core or two.
  constexpr std::size_t kFamilies = 9;
  std::vector<FamilyFit> fits(kFamilies);
  FamilyFit scaled_chain;
  const std::vector<std::function<void()>> tasks = {
      [&] {
        fits[6] = ordered ? guarded("markov", [&] { return fit_markov(sequences); })
                          : unfitted("markov", unordered);
      },
      [&] {
        scaled_chain =
            !ordered || !start.problem.empty()
                ? FamilyFit{}
                : guarded("heterogeneous_markov", [&] { return fit_markov(start.scaled); });
      },
      [&] { fits[4] = guarded("weibull", [&] { return fit_weibull(pooled); }); },
      [&] { fits[5] = guarded("bimodal", [&] { return fit_bimodal(pooled); }); },
      [&] { fits[3] = guarded("gamma", [&] { return fit_gamma(pooled); }); },
      [&] { fits[2] = guarded("lognormal", [&] { return fit_lognormal(pooled); }); },
      [&] { fits[1] = guarded("pareto", [&] { return fit_pareto(pooled); }); },
      [&] {
        fits[0] = guarded("shifted_exponential", [&] { return fit_shifted_exponential(pooled); });
      },
      [&] { fits[7] = guarded("heterogeneous", [&] { return fit_heterogeneous(sequences); }); },
  };
  run_on_two_threads(tasks);
  if (!ordered) {
    fits[8] = unfitted("heterogeneous_markov", unordered);
  } else if (!start.problem.empty()) {
    fits[8] = unfitted("heterogeneous_markov", start.problem);
  } else if (!scaled_chain.fitted()) {
    fits[8] = unfitted("heterogeneous_markov", scaled_chain.problem);
  } else {
    fits[8] = guarded("heterogeneous_markov", [&] {
      return heterogeneous_markov_from(sequences, start.factors, scaled_chain, fits[6]);
    });
  }
  report.fits = std::move(fits);
  report.heterogeneity = test_equal_rates(sequences);
  choose_best(report);
  return report;
}

}  // namespace stragglersim::sim

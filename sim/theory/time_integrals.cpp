#include "sim/theory/time_integrals.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/policies/error_handling.hpp>
#include <boost/math/quadrature/exp_sinh.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace stragglersim::sim {
namespace {

constexpr unsigned kMaxDepth = 15;

/// Whether every worker's marginal is purely discrete (DelayModel::atoms non-empty).
bool purely_atomic(const DelayModel& delay) {
  bool atomic = delay.workers() > 0;
  for (int i = 0; i < delay.workers() && atomic; ++i) {
    atomic = !delay.atoms(i).empty();
  }
  return atomic;
}

}  // namespace

Jumps distinct_atoms(const DelayModel& delay) {
  Jumps jumps;
  if (!purely_atomic(delay)) {
    return jumps;
  }
  for (int i = 0; i < delay.workers(); ++i) {
    const auto a = delay.atoms(i);
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (k == 0 || a[k] != a[k - 1]) {
        jumps.push_back({a[k], i, delay.cdf(i, a[k])});
      }
    }
  }
  std::sort(jumps.begin(), jumps.end(), [](const Jump& x, const Jump& y) {
    return x.at < y.at || (x.at == y.at && x.worker < y.worker);
  });
  return jumps;
}

double quantile(const std::function<StopProbability(double)>& dist,
                double lower,
                double upper,
                double p) {
  double lo = lower;
  double step = std::max(1e-3, 1e-3 * std::abs(lower));
  double hi = std::min(upper, lower + step);
  for (int i = 0; i < 2000 && dist(hi).stopped < p && hi < upper; ++i) {
    lo = hi;
    step *= 2.0;
    hi = std::min(upper, lower + step);
  }
  if (dist(hi).stopped < p) {
    return upper;
  }
  for (int i = 0; i < 200 && hi - lo > 1e-14 * std::max(1.0, std::abs(hi)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (dist(mid).stopped < p ? lo : hi) = mid;
  }
  return hi;
}

/// The breaks of a delay model: every worker's lower bound, and (a model mixing discrete and
/// continuous workers) every atom, so that no quadrature piece straddles a jump. (Purely discrete
/// models never integrate here: discrete_moments sums over the atoms.)
std::vector<double> delay_breaks(const DelayModel& delay) {
  std::vector<double> breaks;
  for (int i = 0; i < delay.workers(); ++i) {
    breaks.push_back(delay.lower_bound(i));
    const auto a = delay.atoms(i);
    breaks.insert(breaks.end(), a.begin(), a.end());
  }
  return breaks;
}

/// Z ≥ min(breaks), pieces split at `breaks`, Z ≤ upper.
Support make_support(const std::function<StopProbability(double)>& dist,
                     std::vector<double> breaks,
                     double upper) {
  Support s;
  s.upper = upper;
  s.lower = breaks.empty() ? 0.0 : *std::min_element(breaks.begin(), breaks.end());
  s.breaks = std::move(breaks);
  s.centre = quantile(dist, s.lower, upper, 0.5);
  s.q90 = quantile(dist, s.lower, upper, 0.9);
  s.width = s.q90 - s.centre;
  if (!(s.width > 0.0)) {
    s.width = std::max(s.centre - s.lower, 1e-9 * std::max(1.0, std::abs(s.centre)));
  }
  s.breaks.push_back(s.centre);
  if (std::isfinite(upper)) {
    s.breaks.push_back(upper);
  }
  std::sort(s.breaks.begin(), s.breaks.end());
  s.breaks.erase(std::unique(s.breaks.begin(), s.breaks.end()), s.breaks.end());
  std::erase_if(s.breaks, [&](double b) { return b < s.lower || b > upper; });
  return s;
}

Support make_support(const std::function<StopProbability(double)>& dist,
                     const DelayModel& delay,
                     double upper) {
  return make_support(dist, delay_breaks(delay), upper);
}

namespace {

/// Boost's quadratures throw when the integrand is not finite where they evaluate it (delays
/// near 1e300, rates near 1e-300 push the support beyond double range): numerical trouble of the
/// prediction (exit status 3, or a skipped prediction), not a bug.
template <typename Integrate>
double guarded(Integrate&& integrate) {
  try {
    return std::forward<Integrate>(integrate)();
  } catch (const std::domain_error& e) {
    throw NumericalError(fmt::format(
        "iteration-time integral not finite (delays too extreme for the quadrature): {}",
        e.what()));
  } catch (const boost::math::evaluation_error& e) {
    throw NumericalError(fmt::format(
        "iteration-time integral did not converge (delays too extreme for the quadrature): {}",
        e.what()));
  }
}

double integrate_piece(const Integrand& g, double lo, double hi, double tolerance) {
  if (!(hi > lo)) {
    return 0.0;
  }
  auto f = [&](double t) { return g(t, lo, hi); };
  return guarded([&] {
    return boost::math::quadrature::gauss_kronrod<double, 61>::integrate(
        f, lo, hi, kMaxDepth, tolerance);
  });
}

/// ∫_from^∞ g(t) dt with t = from + width·(e^v − 1), v ∈ [0, ∞).
double integrate_tail(const Integrand& g, double from, double width, double tolerance) {
  auto f = [&](double v) {
    const double t = from + width * std::expm1(v);
    if (!std::isfinite(t)) {
      return 0.0;
    }
    const double value = g(t, from, kInfinity);
    return value == 0.0 ? 0.0 : value * width * std::exp(v);
  };
  boost::math::quadrature::exp_sinh<double> integrator;
  return guarded([&] { return integrator.integrate(f, tolerance); });
}

}  // namespace

/// ∫_a^b g over the support's pieces (b may be +∞: the tail starts at the last break).
double integrate_range(const Integrand& g, const Support& s, double a, double b, double tolerance) {
  double total = 0.0;
  double at = a;
  const auto piece = [&](double lo, double hi) { return integrate_piece(g, lo, hi, tolerance); };
  for (const double brk : s.breaks) {
    if (brk > at && brk < b) {
      total += piece(at, brk);
      at = brk;
    }
  }
  if (std::isfinite(b)) {
    return total + piece(at, b);
  }
  return total + integrate_tail(g, at, s.width, tolerance);
}

namespace {

/// Tails falling faster than t^−10 over a decade are integrated to ∞ like exponential ones: every
/// moment the theory needs exists, and the quadrature converges quickly.
constexpr double kLightSlope = -10.0;
constexpr double kTailProbability = 1e-8;
constexpr double kTailReach = 3.0;

/// The far tail of Z. Light tails (P(Z > t) underflows, or falls faster than t^kLightSlope, over
/// the probe) are integrated to ∞;
/// algebraic tails are integrated up to `cut` and continued analytically as
/// P(Z > t) ≈ P(Z > cut)·((t − L)/(cut − L))^slope, the slope measured between `cut` and the
/// point kTailReach times as far from L. The cut is deep enough that offsets such as a Pareto's
/// x_m no longer bend the log-log slope, and shallow enough that P(Z > t) keeps ~6 digits despite
/// the 1e-16 resolution of 1 − F.
struct Tail {
  bool heavy = false;
  double cut = kInfinity;
  double waiting = 0.0;  ///< P(Z > cut)
  double slope = -kInfinity;
};

Tail probe_tail(const std::function<StopProbability(double)>& dist, const Support& s) {
  Tail tail;
  double cut = quantile(dist, s.lower, kInfinity, 1.0 - kTailProbability);
  if (!s.breaks.empty()) {
    cut = std::max(cut, s.breaks.back());
  }
  if (!(cut > s.lower) || !std::isfinite(cut)) {
    return tail;
  }
  const double far = s.lower + kTailReach * (cut - s.lower);
  const double w1 = dist(cut).waiting;
  const double w2 = dist(far).waiting;
  if (w1 <= 0.0 || w2 <= 0.0) {
    return tail;
  }
  const double slope = std::log(w2 / w1) / std::log(kTailReach);
  if (slope < kLightSlope) {
    return tail;
  }
  tail.heavy = true;
  tail.cut = cut;
  tail.waiting = w1;
  tail.slope = slope;
  return tail;
}

}  // namespace

TimeMoments numerical_moments(const std::function<StopProbability(double)>& dist,
                              std::vector<double> breaks,
                              double upper) {
  const double lowest = breaks.empty() ? 0.0 : *std::min_element(breaks.begin(), breaks.end());
  if (upper <= lowest) {
    return {upper, 0.0};  // the deadline passes before anyone can arrive
  }
  const Support s = make_support(dist, std::move(breaks), upper);
  const double c = s.centre;
  const double lower = s.lower;
  const Integrand waiting = [&](double t, double, double) { return dist(t).waiting; };
  const Integrand stopped = [&](double t, double, double) { return dist(t).stopped; };
  const Integrand waiting_moment = [&](double t, double, double) {
    return (t - c) * dist(t).waiting;
  };
  const Integrand stopped_moment = [&](double t, double, double) {
    return (c - t) * dist(t).stopped;
  };
  const Tail tail = std::isfinite(upper) ? Tail{} : probe_tail(dist, s);
  const double end = tail.heavy ? tail.cut : upper;
  if (tail.heavy && !(tail.slope < -1.0)) {
    return {kInfinity, kInfinity};
  }
  // ∫_cut^∞ (t − L)^k P(Z > t) dt = P(Z > cut)·(cut − L)^{k+1} / (−slope − k − 1).
  const double span = tail.cut - lower;
  const double tail0 = tail.heavy ? tail.waiting * span / (-tail.slope - 1.0) : 0.0;
  const double shift =
      integrate_range(waiting, s, c, end) - integrate_range(stopped, s, lower, c) + tail0;
  if (tail.heavy && !(tail.slope < -2.0)) {
    return {c + shift, kInfinity};
  }
  const double tail1 = tail.heavy ? tail.waiting * span * span / (-tail.slope - 2.0) : 0.0;
  // (t − c) = (t − L) + (L − c) beyond the cut.
  const double second =
      2.0 * (integrate_range(waiting_moment, s, c, end) +
             integrate_range(stopped_moment, s, lower, c) + tail1 + (lower - c) * tail0);
  return {c + shift, std::sqrt(std::max(0.0, second - shift * shift))};
}

/// Every marginal purely discrete: Z is one of the delays (or the deadline), so E[Z] and Var[Z]
/// are finite sums over the distinct atoms, with P(Z = a) = P(Z ≤ a) − P(Z ≤ a⁻). The sweep
/// raises t through `jumps` (distinct_atoms) and changes only the workers that jump there: one
/// evaluation of P(Z ≤ t) (O(n), O(n·r) for first_r) per distinct atom below the deadline.
TimeMoments discrete_moments(const StopDistribution& stop, const Jumps& jumps, double upper) {
  stop.set_all_waiting();
  std::vector<std::pair<double, double>> masses;  // (value of Z, its probability)
  StopProbability before{0.0, 1.0};
  for (std::size_t k = 0; k < jumps.size() && jumps[k].at < upper;) {
    const double t = jumps[k].at;
    for (; k < jumps.size() && jumps[k].at == t; ++k) {
      stop.set_arrived(jumps[k].worker, jumps[k].cdf);
    }
    const StopProbability now = stop.evaluate();
    // The difference of the smaller tail: no cancellation against 1 on either side.
    const double mass =
        now.stopped <= 0.5 ? now.stopped - before.stopped : before.waiting - now.waiting;
    if (mass > 0.0) {
      masses.emplace_back(t, mass);
    }
    before = now;
  }
  if (std::isfinite(upper) && before.waiting > 0.0) {
    masses.emplace_back(upper, before.waiting);  // the deadline stops what is still waiting
  }
  double mean = 0.0;
  for (const auto& [value, mass] : masses) {
    mean += value * mass;
  }
  double second = 0.0;
  for (const auto& [value, mass] : masses) {
    second += (value - mean) * (value - mean) * mass;
  }
  return {mean, std::sqrt(second)};
}

}  // namespace stragglersim::sim

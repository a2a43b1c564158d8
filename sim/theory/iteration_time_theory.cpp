#include "sim/theory/iteration_time_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/math/constants/constants.hpp>
#include <boost/math/policies/error_handling.hpp>
#include <boost/math/quadrature/exp_sinh.hpp>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <utility>

#include "models/base/invariant.h"
#include "sim/scheme.h"
#include "sim/theory/group_order.h"

namespace stragglersim::sim {

namespace {
/// Terms up to which the harmonic sums are added directly (exact to an ulp or two per term);
/// longer sums use the digamma and trigamma differences (sums at n up to 2^30 in microseconds).
constexpr int kDirectSumTerms = 1 << 16;
}  // namespace
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Relative tolerance of every quadrature: far below the 1e-6 the closed forms are checked to.
constexpr double kQuadratureTolerance = 1e-11;
/// Integrals of numerically differentiated CDFs carry ~1e-12 relative noise: a tolerance below it
/// would only exhaust the subdivision depth.
constexpr double kDensityTolerance = 1e-9;
constexpr unsigned kMaxDepth = 15;
/// Beyond this many pairs of groups, q₂ for non-identical workers averages a fixed sample.
constexpr int kMaxExactPairs = 500;
/// The numerical path on a model whose workers are dependent within an iteration.
constexpr const char* kMarginalsMethod =
    "numerical (independent marginals: the model's workers are dependent, the prediction is an "
    "approximation)";
/// Cost of one CDF evaluation in DP operations (a Boost.Math CDF or two exp/log).
constexpr double kCdfOperations = 50.0;
/// Integrand evaluations assumed per quadrature piece by the cost estimate (61-point
/// Gauss–Kronrod refined a few times) and per quantile search.
constexpr double kEvaluationsPerPiece = 61.0 * 7.0;
constexpr double kEvaluationsPerQuantile = 260.0;
/// Beyond this many classes, or this many workers, workers are not merged into classes.
constexpr int kMaxClasses = 64;
constexpr int kMaxMergedWorkers = 1 << 16;

std::size_t index(int i) { return static_cast<std::size_t>(i); }

/// The scheme as the theory sees it through GroupOrderedDelay: groups of consecutive workers,
/// loads in group order.
SchemeDescription in_group_order(const SchemeDescription& scheme) {
  SchemeDescription out = scheme;
  out.order.clear();
  if (!scheme.loads.empty()) {
    for (std::size_t j = 0; j < scheme.order.size(); ++j) {
      out.loads[j] = scheme.loads[index(scheme.order[j])];
    }
  }
  return out;
}

/// What the stopping time is a function of, once scheme and rule are combined.
enum class StopShape { kOrderStatistic, kFrcDecodable, kFrcFirstROrDecodable, kDeadline };

struct Shape {
  StopShape kind = StopShape::kOrderStatistic;
  int order = 0;  ///< m of T_(m:n) for kOrderStatistic
};

void validate(const SchemeDescription& s) {
  STRAGGLERSIM_ASSERT(s.workers >= 1, "a scheme needs at least one worker");
  STRAGGLERSIM_ASSERT(s.d >= 1, "a scheme needs d >= 1");
  switch (s.code) {
    case CodeFamily::kUncoded:
      STRAGGLERSIM_ASSERT(s.d == 1, "an uncoded scheme has d = 1");
      break;
    case CodeFamily::kFractionalRepetition:
      STRAGGLERSIM_ASSERT(s.workers % s.d == 0, "FRC needs d | n");
      break;
    case CodeFamily::kCyclic:
      STRAGGLERSIM_ASSERT(s.d <= s.workers, "a cyclic code needs d = s + 1 <= n");
      break;
  }
  if (s.rule == RuleKind::kFirstR || s.rule == RuleKind::kFirstROrDecodable) {
    STRAGGLERSIM_ASSERT(s.r >= 1 && s.r <= s.workers, "first_r needs 1 <= r <= n");
  }
  if (s.rule == RuleKind::kDeadline) {
    STRAGGLERSIM_ASSERT(s.deadline > 0.0, "a deadline rule needs a positive deadline");
  }
  STRAGGLERSIM_ASSERT(s.order.empty() || (s.code != CodeFamily::kCyclic &&
                                          is_permutation_of_workers(s.order, s.workers)),
                      "a group order is a permutation of a group code's workers");
  STRAGGLERSIM_ASSERT(
      s.loads.empty() ||
          (s.loads.size() == index(s.workers) &&
           std::ranges::all_of(s.loads, [](double x) { return x > 0.0 && std::isfinite(x); })),
      "loads are one positive number per worker");
}

Shape stop_shape(const SchemeDescription& s) {
  const int n = s.workers;
  const int exact_from = s.code == CodeFamily::kCyclic ? n - s.d + 1 : n;
  switch (s.rule) {
    case RuleKind::kAll:
      return {StopShape::kOrderStatistic, n};
    case RuleKind::kFirstR:
      return {StopShape::kOrderStatistic, s.r};
    case RuleKind::kDeadline:
      return {StopShape::kDeadline, 0};
    case RuleKind::kDecodable:
      if (s.code == CodeFamily::kFractionalRepetition) {
        return {StopShape::kFrcDecodable, 0};
      }
      return {StopShape::kOrderStatistic, exact_from};
    case RuleKind::kFirstROrDecodable:
      if (s.code == CodeFamily::kFractionalRepetition) {
        return {StopShape::kFrcFirstROrDecodable, 0};
      }
      return {StopShape::kOrderStatistic, std::min(s.r, exact_from)};
  }
  return {};
}

/// Operations of the exact computation, counted as it runs (one DP multiply-add is one; a CDF
/// evaluation kCdfOperations): past `limit` it throws WorkExceeded and the prediction falls back
/// to simulation. The count depends only on the inputs, never on the machine.
struct WorkExceeded {};

class WorkBudget {
 public:
  explicit WorkBudget(double limit) : limit_(limit) {}
  void charge(double operations) const {
    used_ += operations;
    if (used_ > limit_) {
      throw WorkExceeded{};
    }
  }
  [[nodiscard]] double used() const { return used_; }

 private:
  double limit_;
  mutable double used_ = 0.0;
};

/// Workers with equal marginals: class_of[i] indexes representative (its first worker) and
/// size. One class per worker when merging is off or finds more than kMaxClasses.
struct WorkerClasses {
  std::vector<int> class_of;
  std::vector<int> representative;
  std::vector<int> size;
  [[nodiscard]] int count() const { return static_cast<int>(representative.size()); }
};

/// P(at least r of the workers with arrival probabilities f (waiting probabilities w = 1 − f,
/// given separately for accuracy) have arrived): Poisson-binomial DP with the state "≥ r"
/// absorbing.
StopProbability at_least(std::span<const double> f,
                         std::span<const double> w,
                         std::span<const char> skip,
                         int r,
                         std::vector<double>& p) {
  if (r <= 0) {
    return {1.0, 0.0};
  }
  p.assign(index(r) + 1, 0.0);
  p[0] = 1.0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (!skip.empty() && skip[i] != 0) {
      continue;
    }
    // Top state first: it reads the old p[r − 1].
    p[index(r)] += p[index(r) - 1] * f[i];
    for (std::size_t k = index(r) - 1; k >= 1; --k) {
      p[k] = p[k] * w[i] + p[k - 1] * f[i];
    }
    p[0] *= w[i];
  }
  double waiting = 0.0;
  for (int k = 0; k < r; ++k) {
    waiting += p[index(k)];
  }
  return {p[index(r)], waiting};
}

/// Evaluates P(Z ≤ t) for one scheme and delay model, with scratch space for the DPs.
class StopDistribution {
 public:
  /// `classes` (optional) evaluates each class's CDF once per point; `budget` (optional)
  /// counts the work of every evaluation.
  StopDistribution(const SchemeDescription& scheme,
                   const DelayModel& delay,
                   const WorkerClasses* classes = nullptr,
                   const WorkBudget* budget = nullptr)
      : scheme_(scheme),
        delay_(delay),
        shape_(stop_shape(scheme)),
        classes_(classes),
        budget_(budget),
        f_(index(scheme.workers)),
        w_(index(scheme.workers)) {}

  void fill(double t) const {
    if (classes_ == nullptr) {
      for (int i = 0; i < scheme_.workers; ++i) {
        set_worker(i, t);
      }
      return;
    }
    class_f_.resize(index(classes_->count()));
    for (int c = 0; c < classes_->count(); ++c) {
      class_f_[index(c)] = delay_.cdf(classes_->representative[index(c)], t);
    }
    for (int i = 0; i < scheme_.workers; ++i) {
      set_arrived(i, class_f_[index(classes_->class_of[index(i)])]);
    }
  }

  /// DP operations of one evaluate() (CDF reads excluded).
  [[nodiscard]] double operations() const {
    const double n = scheme_.workers;
    switch (shape_.kind) {
      case StopShape::kOrderStatistic:
        return n * shape_.order;
      case StopShape::kDeadline:
        return n * n;
      case StopShape::kFrcDecodable:
        return n;
      case StopShape::kFrcFirstROrDecodable:
        return n / scheme_.d * (scheme_.r + 1.0) * (scheme_.d + 1.0) + n * scheme_.d;
    }
    return n;
  }

  /// Worker i's arrival probability becomes P(T_i ≤ t); the others keep theirs.
  void set_worker(int i, double t) const { set_arrived(i, delay_.cdf(i, t)); }

  /// Worker i has arrived with probability `f`.
  void set_arrived(int i, double f) const {
    f_[index(i)] = f;
    w_[index(i)] = 1.0 - f;
  }

  /// Every worker still waiting (P(T_i ≤ t) = 0 below every worker's support), no CDF read.
  void set_all_waiting() const {
    std::fill(f_.begin(), f_.end(), 0.0);
    std::fill(w_.begin(), w_.end(), 1.0);
  }

  [[nodiscard]] StopProbability operator()(double t) const {
    if (shape_.kind == StopShape::kDeadline && t >= scheme_.deadline) {
      return {1.0, 0.0};
    }
    fill(t);
    if (budget_ != nullptr) {
      const int reads = classes_ != nullptr ? classes_->count() : scheme_.workers;
      budget_->charge(reads * kCdfOperations + operations());
    }
    return evaluate();
  }

  /// P(Z ≤ t) from the arrival probabilities as they stand (fill or set_worker; no deadline
  /// check).
  [[nodiscard]] StopProbability evaluate() const {
    switch (shape_.kind) {
      case StopShape::kOrderStatistic:
        return at_least(f_, w_, {}, shape_.order, p_);
      case StopShape::kDeadline:
        return at_least(f_, w_, {}, scheme_.workers, p_);
      case StopShape::kFrcDecodable:
        return frc_decodable();
      case StopShape::kFrcFirstROrDecodable:
        return frc_first_r_or_decodable();
    }
    return {};
  }

 private:
  [[nodiscard]] StopProbability frc_decodable() const {
    double log_all_covered = 0.0;
    for (int g = 0; g < scheme_.workers / scheme_.d; ++g) {
      double erased = 1.0;
      for (int i = g * scheme_.d; i < (g + 1) * scheme_.d; ++i) {
        erased *= w_[index(i)];
      }
      log_all_covered += std::log1p(-erased);
    }
    return {std::exp(log_all_covered), -std::expm1(log_all_covered)};
  }

  // State after each group: (arrivals so far, capped at r) × (every group so far covered).
  [[nodiscard]] StopProbability frc_first_r_or_decodable() const {
    const int r = scheme_.r;
    const int d = scheme_.d;
    uncovered_.assign(index(r) + 1, 0.0);
    covered_.assign(index(r) + 1, 0.0);
    covered_[0] = 1.0;
    for (int g = 0; g < scheme_.workers / d; ++g) {
      const std::span<const double> fg(f_.data() + g * d, index(d));
      const std::span<const double> wg(w_.data() + g * d, index(d));
      group_count(fg, wg);
      next_uncovered_.assign(index(r) + 1, 0.0);
      next_covered_.assign(index(r) + 1, 0.0);
      for (int c = 0; c <= r; ++c) {
        const double u = uncovered_[index(c)];
        const double v = covered_[index(c)];
        if (u == 0.0 && v == 0.0) {
          continue;
        }
        for (int j = 0; j <= d; ++j) {
          const std::size_t to = index(std::min(r, c + j));
          const double pj = count_[index(j)];
          next_uncovered_[to] += u * pj;
          (j == 0 ? next_uncovered_ : next_covered_)[to] += v * pj;
        }
      }
      std::swap(uncovered_, next_uncovered_);
      std::swap(covered_, next_covered_);
    }
    double stopped = uncovered_[index(r)] + covered_[index(r)];
    double waiting = 0.0;
    for (int c = 0; c < r; ++c) {
      stopped += covered_[index(c)];
      waiting += uncovered_[index(c)];
    }
    return {stopped, waiting};
  }

  /// Distribution of the number of arrivals within one group.
  void group_count(std::span<const double> f, std::span<const double> w) const {
    count_.assign(f.size() + 1, 0.0);
    count_[0] = 1.0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      for (std::size_t k = i + 1; k >= 1; --k) {
        count_[k] = count_[k] * w[i] + count_[k - 1] * f[i];
      }
      count_[0] *= w[i];
    }
  }

  const SchemeDescription& scheme_;
  const DelayModel& delay_;
  Shape shape_;
  const WorkerClasses* classes_;
  const WorkBudget* budget_;
  mutable std::vector<double> class_f_;
  mutable std::vector<double> f_;
  mutable std::vector<double> w_;
  mutable std::vector<double> p_;
  mutable std::vector<double> count_;
  mutable std::vector<double> uncovered_;
  mutable std::vector<double> covered_;
  mutable std::vector<double> next_uncovered_;
  mutable std::vector<double> next_covered_;
};

using Integrand = std::function<double(double t, double lo, double hi)>;

/// Where the iteration time lives: integration starts at `lower`, pieces break at every worker's
/// lower bound, and the infinite tail is mapped with scale `width`.
struct Support {
  double lower = 0.0;
  double upper = kInfinity;  ///< the deadline, if any
  double centre = 0.0;       ///< the median of Z
  double q90 = 0.0;          ///< the 90% quantile of Z
  double width = 1.0;        ///< tail scale, q90 − median (or a fallback)
  std::vector<double> breaks;
};

/// Whether every worker's marginal is purely discrete (DelayModel::atoms non-empty).
bool purely_atomic(const DelayModel& delay) {
  bool atomic = delay.workers() > 0;
  for (int i = 0; i < delay.workers() && atomic; ++i) {
    atomic = !delay.atoms(i).empty();
  }
  return atomic;
}

/// A jump of a discrete marginal: worker's CDF reaches `cdf` at `at`.
struct Jump {
  double at = 0.0;
  int worker = 0;
  double cdf = 0.0;
};
using Jumps = std::vector<Jump>;

/// Every distinct atom of every worker with the CDF there, in increasing order of the atom (ties
/// by worker): Σ_i (distinct atoms of worker i) CDF evaluations, the only ones the discrete
/// theory makes. Empty unless every marginal is purely discrete.
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

/// ∫_a^b g over the support's pieces (b may be +∞: the tail starts at the last break).
double integrate_range(const Integrand& g,
                       const Support& s,
                       double a,
                       double b,
                       double tolerance = kQuadratureTolerance) {
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

struct TimeMoments {
  double mean = 0.0;
  double sd = 0.0;
};

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

/// Whether workers i and j have the same delay distribution: by lower bound, moments and the CDF
/// at a few points (relative 1e-14).
bool same_marginal(const DelayModel& delay, int i, int j) {
  const auto same = [](double x, double y) {
    return x == y || std::abs(x - y) <= 1e-14 * std::max(std::abs(x), std::abs(y));
  };
  const double lb = delay.lower_bound(j);
  const double unit = std::max(1.0, std::abs(lb));
  if (!same(delay.lower_bound(i), lb) || !same(delay.mean(i), delay.mean(j)) ||
      !same(delay.variance(i), delay.variance(j))) {
    return false;
  }
  constexpr std::array<double, 7> kProbes = {0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 100.0};
  return std::ranges::all_of(kProbes, [&](double x) {
    return same(delay.cdf(i, lb + x * unit), delay.cdf(j, lb + x * unit));
  });
}

/// Whether every worker has the same delay distribution (exactly, for the shifted exponential;
/// by same_marginal otherwise).
bool identical_workers(const DelayModel& delay) {
  if (const auto se = delay.shifted_exponential()) {
    for (std::size_t i = 1; i < se->worker_shift.size(); ++i) {
      if (se->worker_shift[i] != se->worker_shift[0] ||
          se->worker_scale[i] != se->worker_scale[0]) {
        return false;
      }
    }
    return true;
  }
  for (int i = 1; i < delay.workers(); ++i) {
    if (!same_marginal(delay, i, 0)) {
      return false;
    }
  }
  return true;
}

/// One class per worker.
WorkerClasses singleton_classes(int n) {
  WorkerClasses c;
  for (int i = 0; i < n; ++i) {
    c.class_of.push_back(i);
    c.representative.push_back(i);
    c.size.push_back(1);
  }
  return c;
}

/// Workers merged by same_marginal against each class's first worker, in worker order
/// (singletons when `merge` is off, n > kMaxMergedWorkers or more than kMaxClasses classes).
WorkerClasses worker_classes(const DelayModel& delay, bool merge) {
  const int n = delay.workers();
  if (!merge || n > kMaxMergedWorkers) {
    return singleton_classes(n);
  }
  WorkerClasses c;
  for (int i = 0; i < n; ++i) {
    int found = -1;
    for (int k = 0; k < c.count() && found < 0; ++k) {
      if (same_marginal(delay, i, c.representative[index(k)])) {
        found = k;
      }
    }
    if (found < 0) {
      if (c.count() == kMaxClasses) {
        return singleton_classes(n);
      }
      found = c.count();
      c.representative.push_back(i);
      c.size.push_back(0);
    }
    c.class_of.push_back(found);
    ++c.size[index(found)];
  }
  return c;
}

/// Group g = workers g·d … g·d + d − 1 (each worker its own group when uncoded).
struct Groups {
  int count = 0;
  int size = 1;
};

/// P(every worker in `erased` is still unheard when the first-r stop happens):
/// ∫ P(≥ r of the others arrived by t) dF_{min over erased}(t), with a central-difference density.
/// Classes and the work budget of the numerical erasure integrals.
struct ErasureContext {
  const WorkerClasses& classes;
  const WorkBudget& budget;
};

// Discrete marginals (a replayed trace) have no density: dF_min is a sum of point masses at
// the erased workers' atoms and the integral an exact finite sum, swept through the distinct
// atoms in order with only the jumping workers' CDFs re-read. A tie between an erased worker
// and another counts the other as arrived first (every jump at t is applied before the sum).
double first_r_erasure_discrete(const SchemeDescription& scheme,
                                const Jumps& jumps,
                                std::span<const int> erased,
                                const std::vector<char>& skip) {
  const int n = scheme.workers;
  std::vector<double> f(index(n), 0.0);
  std::vector<double> w(index(n), 1.0);
  std::vector<double> p;
  const auto waiting = [&] {
    double product = 1.0;
    for (const int i : erased) {
      product *= w[index(i)];
    }
    return product;
  };
  double total = 0.0;
  for (std::size_t k = 0; k < jumps.size();) {
    const double t = jumps[k].at;
    const double before = waiting();
    bool erased_jump = false;
    for (; k < jumps.size() && jumps[k].at == t; ++k) {
      const int i = jumps[k].worker;
      f[index(i)] = jumps[k].cdf;
      w[index(i)] = 1.0 - f[index(i)];
      erased_jump = erased_jump || skip[index(i)] != 0;
    }
    const double mass = erased_jump ? before - waiting() : 0.0;
    if (mass > 0.0) {
      total += at_least(f, w, skip, scheme.r, p).stopped * mass;
    }
  }
  return total;
}

double first_r_erasure_numerical(const SchemeDescription& scheme,
                                 const DelayModel& delay,
                                 const Support& s,
                                 const Jumps& jumps,
                                 std::span<const int> erased,
                                 const ErasureContext& context) {
  const int n = scheme.workers;
  std::vector<char> skip(index(n), 0);
  for (const int i : erased) {
    skip[index(i)] = 1;
  }
  std::vector<double> f(index(n));
  std::vector<double> w(index(n));
  std::vector<double> p;
  std::vector<double> class_f;
  const auto all_waiting = [&](double t) {
    double product = 1.0;
    for (const int i : erased) {
      product *= 1.0 - delay.cdf(i, t);
    }
    return product;
  };
  if (!jumps.empty()) {
    return first_r_erasure_discrete(scheme, jumps, erased, skip);
  }
  // Five-point central differences (error O(h⁴)) with h a thousandth of the piece, shrunk to
  // stay inside it so that no stencil straddles a kink at a worker's lower bound.
  const Integrand g = [&](double t, double lo, double hi) {
    const double span = std::isfinite(hi) ? hi - lo : t - lo + s.width;
    double h = std::min(1e-3 * span, 0.5 * (t - lo));
    if (std::isfinite(hi)) {
      h = std::min(h, 0.5 * (hi - t));
    }
    if (!(h > 0.0)) {
      return 0.0;
    }
    const double density = (8.0 * (all_waiting(t - h) - all_waiting(t + h)) -
                            (all_waiting(t - 2.0 * h) - all_waiting(t + 2.0 * h))) /
                           (12.0 * h);
    const WorkerClasses& classes = context.classes;
    context.budget.charge(4.0 * static_cast<double>(erased.size()) * kCdfOperations);
    if (density == 0.0) {
      return 0.0;
    }
    class_f.resize(index(classes.count()));
    for (int c = 0; c < classes.count(); ++c) {
      class_f[index(c)] = delay.cdf(classes.representative[index(c)], t);
    }
    for (int i = 0; i < n; ++i) {
      f[index(i)] = class_f[index(classes.class_of[index(i)])];
      w[index(i)] = 1.0 - f[index(i)];
    }
    context.budget.charge(classes.count() * kCdfOperations + static_cast<double>(n) * scheme.r);
    return at_least(f, w, skip, scheme.r, p).stopped * density;
  };
  return integrate_range(g, s, s.lower, kInfinity, kDensityTolerance);
}

struct Erasure {
  double q = 0.0;
  double q2 = 0.0;
};

std::vector<int> group_members(const Groups& groups, std::initializer_list<int> ids) {
  std::vector<int> members;
  for (const int g : ids) {
    for (int i = g * groups.size; i < (g + 1) * groups.size; ++i) {
      members.push_back(i);
    }
  }
  return members;
}

/// Pairs (g, h), g < h, averaged for q₂: all of them, or a fixed sample of neighbours and
/// antipodes when there are too many.
std::vector<std::pair<int, int>> group_pairs(int count) {
  std::vector<std::pair<int, int>> pairs;
  if (count * (count - 1) / 2 <= kMaxExactPairs) {
    for (int g = 0; g < count; ++g) {
      for (int h = g + 1; h < count; ++h) {
        pairs.emplace_back(g, h);
      }
    }
    return pairs;
  }
  for (int g = 0; g < count; ++g) {
    pairs.emplace_back(g, (g + 1) % count);
    pairs.emplace_back(g, (g + count / 2) % count);
  }
  return pairs;
}

/// The erasures fixed by the scheme alone: none under all and decodable, none for a cyclic code
/// that waits for n − s arrivals, undefined (NaN) for one that decodes by least squares;
/// nullopt when they depend on the delays.
std::optional<Erasure> structural_erasure(const SchemeDescription& scheme) {
  if (scheme.rule == RuleKind::kAll || scheme.rule == RuleKind::kDecodable) {
    return Erasure{0.0, 0.0};
  }
  if (scheme.code == CodeFamily::kCyclic) {
    const bool exact =
        scheme.rule != RuleKind::kDeadline && scheme.r >= scheme.workers - scheme.d + 1;
    return exact ? Erasure{0.0, 0.0} : Erasure{kNaN, kNaN};
  }
  return std::nullopt;
}

/// The erasure sets of the numerical erasure path: every group, and the pairs group_pairs keeps.
std::array<std::vector<std::vector<int>>, 2> erasure_sets(const Groups& groups) {
  std::array<std::vector<std::vector<int>>, 2> sets;
  for (int g = 0; g < groups.count; ++g) {
    sets[0].push_back(group_members(groups, {g}));
  }
  if (groups.count >= 2) {
    for (const auto& [g, h] : group_pairs(groups.count)) {
      sets[1].push_back(group_members(groups, {g, h}));
    }
  }
  return sets;
}

/// The sorted classes of `members`.
std::vector<int> class_multiset(const std::vector<int>& members, const WorkerClasses& classes) {
  std::vector<int> key;
  key.reserve(members.size());
  for (const int i : members) {
    key.push_back(classes.class_of[index(i)]);
  }
  std::sort(key.begin(), key.end());
  return key;
}

/// How many distinct class multisets `sets` has (the erasure integrals computed).
std::size_t distinct_class_sets(const std::vector<std::vector<int>>& sets,
                                const WorkerClasses& classes) {
  std::vector<std::vector<int>> keys;
  keys.reserve(sets.size());
  for (const auto& set : sets) {
    keys.push_back(class_multiset(set, classes));
  }
  std::sort(keys.begin(), keys.end());
  return static_cast<std::size_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

/// The mean of integral(set) over `sets` of erased workers, computed once per distinct multiset
/// of classes (the integral depends on the erased workers only through their classes, the others
/// being the complement).
double class_average(const std::vector<std::vector<int>>& sets,
                     const WorkerClasses& classes,
                     const std::function<double(const std::vector<int>&)>& integral) {
  std::vector<std::pair<std::vector<int>, std::size_t>> seen;  // (class multiset, first set)
  double total = 0.0;
  std::vector<double> values;
  for (const auto& set : sets) {
    std::vector<int> key = class_multiset(set, classes);
    const auto it = std::find_if(
        seen.begin(), seen.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == seen.end()) {
      seen.emplace_back(std::move(key), values.size());
      values.push_back(integral(set));
      total += values.back();
    } else {
      total += values[it->second];
    }
  }
  return total / static_cast<double>(sets.size());
}

/// `jumps`: distinct_atoms(delay), empty unless every marginal is discrete.
Erasure erasure(const SchemeDescription& scheme,
                const DelayModel& delay,
                PredictionMethod method,
                const Jumps& jumps,
                const ErasureContext& context) {
  const int n = scheme.workers;
  if (const auto fixed = structural_erasure(scheme)) {
    return *fixed;
  }
  const Groups groups{n / scheme.d, scheme.d};
  const bool identical = identical_workers(delay);

  if (scheme.rule == RuleKind::kDeadline && identical) {
    // (1 − F(τ))^d per group, independent across groups: O(1) at any n.
    const double q = std::pow(1.0 - delay.cdf(0, scheme.deadline), groups.size);
    return {q, groups.count < 2 ? kNaN : q * q};
  }
  if (scheme.rule == RuleKind::kDeadline) {
    std::vector<double> group_erased(index(groups.count), 1.0);
    for (int i = 0; i < n; ++i) {
      group_erased[index(i / groups.size)] *= 1.0 - delay.cdf(i, scheme.deadline);
    }
    Erasure e;
    for (const double x : group_erased) {
      e.q += x / groups.count;
    }
    if (groups.count < 2) {
      e.q2 = kNaN;
      return e;
    }
    const auto pairs = group_pairs(groups.count);
    for (const auto& [g, h] : pairs) {
      e.q2 += group_erased[index(g)] * group_erased[index(h)] / static_cast<double>(pairs.size());
    }
    return e;
  }

  // first_r and first_r_or_decodable share their erasure events (see the header).
  if (identical && method == PredictionMethod::kAuto) {
    return {erasure_probability_first_r(n, groups.size, scheme.r),
            groups.count < 2 ? kNaN : erasure_probability_first_r(n, 2 * groups.size, scheme.r)};
  }
  SchemeDescription first_r = scheme;
  first_r.rule = RuleKind::kFirstR;
  const std::function<StopProbability(double)> first_r_dist =
      StopDistribution(first_r, delay, &context.classes, &context.budget);
  // Discrete marginals sum over their atoms and need no integration support.
  const Support s = jumps.empty() ? make_support(first_r_dist, delay, kInfinity) : Support{};
  const auto integral = [&](const std::vector<int>& members) {
    return first_r_erasure_numerical(scheme, delay, s, jumps, members, context);
  };
  const auto sets = erasure_sets(groups);
  Erasure e;
  e.q = class_average(sets[0], context.classes, integral);
  e.q2 = groups.count < 2 ? kNaN : class_average(sets[1], context.classes, integral);
  return e;
}

/// One row of a replayed table: the workers' delays and the same, sorted.
struct Row {
  std::span<const double> delay;
  std::span<const double> sorted;
};

/// max_g min_{i∈g} T_i: the moment every FRC group has been heard from.
double frc_covered_time(const SchemeDescription& scheme, std::span<const double> v) {
  double covered = -kInfinity;
  for (int g = 0; g < scheme.workers / scheme.d; ++g) {
    const auto group = v.subspan(index(g * scheme.d), index(scheme.d));
    covered = std::max(covered, *std::min_element(group.begin(), group.end()));
  }
  return covered;
}

/// The row's stopping time Z under the scheme's rule.
double row_stop(const SchemeDescription& scheme, const Shape& shape, const Row& row) {
  switch (shape.kind) {
    case StopShape::kOrderStatistic:
      return row.sorted[index(shape.order - 1)];
    case StopShape::kDeadline:
      return std::min(scheme.deadline, row.sorted.back());
    case StopShape::kFrcDecodable:
      return frc_covered_time(scheme, row.delay);
    case StopShape::kFrcFirstROrDecodable:
      return std::min(row.sorted[index(scheme.r - 1)], frc_covered_time(scheme, row.delay));
  }
  return kNaN;
}

/// Whether every worker of the groups `ids` is unheard when the row stops: under a deadline,
/// every one later than τ; under first_r (and first_r_or_decodable, whose erasures are first_r's)
/// at least r others arrived by the groups' first arrival m, ties counting the others first
/// (as the marginal sums do): #{j : T_j ≤ m} − #{i in the groups : T_i = m} ≥ r.
bool row_erased(const SchemeDescription& scheme, const Row& row, std::initializer_list<int> ids) {
  double first = kInfinity;
  for (const int g : ids) {
    const auto group = row.delay.subspan(index(g * scheme.d), index(scheme.d));
    first = std::min(first, *std::min_element(group.begin(), group.end()));
  }
  if (scheme.rule == RuleKind::kDeadline) {
    return first > scheme.deadline;
  }
  auto arrived = std::upper_bound(row.sorted.begin(), row.sorted.end(), first) - row.sorted.begin();
  for (const int g : ids) {
    const auto group = row.delay.subspan(index(g * scheme.d), index(scheme.d));
    arrived -= std::count(group.begin(), group.end(), first);
  }
  return arrived >= scheme.r;
}

/// Calls visit(k, row) for every row k of a DelayModel::rows() table with n workers, the row's
/// delays and the same sorted.
template <typename Visit>
void for_each_row(int workers, std::span<const double> table, Visit visit) {
  const auto n = index(workers);
  std::vector<double> sorted(n);
  for (std::size_t k = 0; k < table.size() / n; ++k) {
    const Row row{table.subspan(k * n, n), sorted};
    std::copy(row.delay.begin(), row.delay.end(), sorted.begin());
    std::sort(sorted.begin(), sorted.end());
    visit(k, row);
  }
}

/// The exact averages over the rows of a DelayModel::rows() table (method "trace rows"): Z of
/// every row by the rule, E[Z] and sd over rows; q the mean over rows and groups of the indicator
/// that the group is unheard, q₂ the same over the pairs of group_pairs.
IterationTimePrediction rows_prediction(const SchemeDescription& scheme,
                                        std::span<const double> table) {
  const std::size_t count = table.size() / index(scheme.workers);
  const Shape shape = stop_shape(scheme);
  const std::optional<Erasure> fixed = structural_erasure(scheme);
  const int groups = scheme.workers / scheme.d;
  const auto pairs = group_pairs(groups);
  std::vector<double> times(count);
  Erasure sum;
  for_each_row(scheme.workers, table, [&](std::size_t k, const Row& row) {
    times[k] = row_stop(scheme, shape, row);
    if (fixed) {
      return;
    }
    for (int g = 0; g < groups; ++g) {
      sum.q += row_erased(scheme, row, {g}) ? 1.0 : 0.0;
    }
    for (const auto& [g, h] : pairs) {
      sum.q2 += row_erased(scheme, row, {g, h}) ? 1.0 : 0.0;
    }
  });
  IterationTimePrediction out;
  const auto rows = static_cast<double>(count);
  for (const double z : times) out.mean += z / rows;
  double square = 0.0;
  for (const double z : times) square += (z - out.mean) * (z - out.mean);
  out.sd = std::sqrt(square / rows);
  if (fixed) {
    out.q = fixed->q;
    out.q2 = fixed->q2;
  } else {
    out.q = sum.q / (rows * groups);
    out.q2 = groups < 2 ? kNaN : sum.q2 / (rows * static_cast<double>(pairs.size()));
  }
  out.method = "trace rows";
  return out;
}

/// Whether erasure() integrates (first_r rules on groups, non-identical workers or forced).
bool erasure_integrates(const SchemeDescription& scheme,
                        PredictionMethod method,
                        const WorkerClasses& classes) {
  const bool first_r =
      scheme.rule == RuleKind::kFirstR || scheme.rule == RuleKind::kFirstROrDecodable;
  return first_r && scheme.code != CodeFamily::kCyclic &&
         (classes.count() > 1 || method == PredictionMethod::kNumerical);
}

/// The operations (WorkBudget units) the exact computation is expected to take: integrand
/// evaluations × (CDF reads × kCdfOperations + DP operations), with kEvaluationsPerPiece
/// evaluations per quadrature piece (pieces split at the classes' distinct lower bounds, plus
/// the median and the tail), four integrals for the moments, one per distinct erasure set of
/// classes, and kEvaluationsPerQuantile per quantile search; discrete marginals evaluate once
/// per distinct atom instead.
double estimated_operations(const SchemeDescription& scheme,
                            const DelayModel& delay,
                            PredictionMethod method,
                            const Jumps& jumps,
                            const WorkerClasses& classes) {
  const double n = scheme.workers;
  const double reads = classes.count() * kCdfOperations;
  std::vector<double> bounds;
  bounds.reserve(classes.representative.size());
  for (const int rep : classes.representative) {
    bounds.push_back(delay.lower_bound(rep));
  }
  std::sort(bounds.begin(), bounds.end());
  const auto pieces =
      static_cast<double>(std::unique(bounds.begin(), bounds.end()) - bounds.begin()) + 2.0;
  const StopDistribution stop(scheme, delay);
  double total = jumps.empty()
                     ? (4.0 * pieces * kEvaluationsPerPiece + 3.0 * kEvaluationsPerQuantile) *
                           (reads + stop.operations())
                     : static_cast<double>(jumps.size()) * stop.operations();
  if (!erasure_integrates(scheme, method, classes)) {
    return total;
  }
  const Groups groups{scheme.workers / scheme.d, scheme.d};
  const auto sets = erasure_sets(groups);
  const double integrals = static_cast<double>(distinct_class_sets(sets[0], classes) +
                                               distinct_class_sets(sets[1], classes));
  const double per_point = reads + 8.0 * scheme.d * kCdfOperations + n * scheme.r;
  total += jumps.empty() ? integrals * pieces * kEvaluationsPerPiece * per_point +
                               2.0 * kEvaluationsPerQuantile * (reads + n * scheme.r)
                         : integrals * static_cast<double>(jumps.size()) * n * scheme.r;
  return total;
}

}  // namespace

std::vector<double> scheme_loads(const SchemeDescription& scheme) {
  validate(scheme);
  if (!scheme.loads.empty()) {
    return scheme.loads;
  }
  return std::vector<double>(index(scheme.workers), static_cast<double>(scheme.d));
}

double harmonic_number(int n) {
  if (n > kDirectSumTerms) {
    return boost::math::digamma(n + 1.0) + boost::math::constants::euler<double>();
  }
  double h = 0.0;
  for (int i = n; i >= 1; --i) {  // smallest terms first
    h += 1.0 / i;
  }
  return h;
}

double exponential_order_statistic_mean(int n, int m) {
  STRAGGLERSIM_ASSERT(m >= 0 && m <= n, "order statistic needs 0 <= m <= n");
  if (m > kDirectSumTerms) {
    // H_n − H_{n−m} = ψ(n + 1) − ψ(n − m + 1): absolute error ~1e-14, against a sum ≥ m/n.
    return boost::math::digamma(n + 1.0) - boost::math::digamma(n - m + 1.0);
  }
  double sum = 0.0;
  for (int i = n; i > n - m; --i) {
    sum += 1.0 / i;
  }
  return sum;
}

double exponential_order_statistic_variance(int n, int m) {
  STRAGGLERSIM_ASSERT(m >= 0 && m <= n, "order statistic needs 0 <= m <= n");
  if (m > kDirectSumTerms) {
    // Σ_{n−m<i≤n} 1/i² = ψ₁(n − m + 1) − ψ₁(n + 1).
    return boost::math::trigamma(n - m + 1.0) - boost::math::trigamma(n + 1.0);
  }
  double sum = 0.0;
  for (int i = n; i > n - m; --i) {
    sum += 1.0 / (static_cast<double>(i) * i);
  }
  return sum;
}

double erasure_probability_first_r(int n, int k, int r) {
  STRAGGLERSIM_ASSERT(k >= 0 && r >= 0 && k <= n && r <= n, "needs 0 <= k, r <= n");
  double q = 1.0;
  for (int j = 0; j < k; ++j) {
    if (n - r - j <= 0) {
      return 0.0;
    }
    q *= static_cast<double>(n - r - j) / (n - j);
  }
  return q;
}

StopProbability stop_probability(const SchemeDescription& scheme,
                                 const DelayModel& delay,
                                 double t) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return stop_probability(in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), t);
  }
  return StopDistribution(scheme, delay)(t);
}

double iteration_time_quantile(const SchemeDescription& scheme, const DelayModel& delay, double p) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return iteration_time_quantile(
        in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), p);
  }
  STRAGGLERSIM_ASSERT(p > 0.0 && p < 1.0, "a quantile's level lies in (0, 1)");
  if (!delay.rows().empty()) {
    const Shape shape = stop_shape(scheme);
    std::vector<double> times;
    for_each_row(scheme.workers, delay.rows(), [&](std::size_t /*k*/, const Row& row) {
      times.push_back(row_stop(scheme, shape, row));
    });
    std::sort(times.begin(), times.end());
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(times.size())));
    return times[std::max<std::size_t>(k, 1) - 1];
  }
  const StopDistribution stop(scheme, delay);
  double lo = kInfinity;
  for (int i = 0; i < scheme.workers; ++i) lo = std::min(lo, delay.lower_bound(i));
  if (stop(lo).stopped >= p) {
    return lo;
  }
  // Grow the bracket geometrically from the lower bound, then bisect to rounding.
  double step = delay.mean(0);
  if (!(std::isfinite(step) && step > 0.0)) {
    step = std::max(1.0, std::abs(lo));
  }
  double hi = lo + step;
  for (int k = 0; stop(hi).stopped < p; ++k) {
    if (k == 2000 || !std::isfinite(hi)) {
      return kInfinity;
    }
    lo = hi;
    step *= 2.0;
    hi = lo + step;
  }
  for (int k = 0; k < 200 && hi - lo > 1e-13 * std::abs(hi); ++k) {
    const double mid = lo + 0.5 * (hi - lo);
    (stop(mid).stopped >= p ? hi : lo) = mid;
  }
  return hi;
}

bool has_closed_form(const SchemeDescription& scheme, const DelayModel& delay) {
  validate(scheme);
  const Shape shape = stop_shape(scheme);
  return delay.shifted_exponential().has_value() && identical_workers(delay) &&
         (shape.kind == StopShape::kOrderStatistic || shape.kind == StopShape::kFrcDecodable);
}

namespace {

/// The closed forms of an i.i.d. shifted exponential (has_closed_form).
IterationTimePrediction closed_form(const SchemeDescription& scheme, const DelayModel& delay) {
  const Shape shape = stop_shape(scheme);
  const auto se = delay.shifted_exponential();
  const double shift = se->worker_shift[0];
  const double scale = se->worker_scale[0];
  const int n = scheme.workers;
  IterationTimePrediction out;
  if (shape.kind == StopShape::kOrderStatistic) {
    out.mean = shift + scale * exponential_order_statistic_mean(n, shape.order);
    out.sd = scale * std::sqrt(exponential_order_statistic_variance(n, shape.order));
  } else {
    const int groups = n / scheme.d;
    const double group_scale = scale / scheme.d;
    out.mean = shift + group_scale * exponential_order_statistic_mean(groups, groups);
    out.sd = group_scale * std::sqrt(exponential_order_statistic_variance(groups, groups));
  }
  out.method = "closed form";
  return out;
}

/// The exact (numerical or discrete) prediction, charging `budget`.
IterationTimePrediction exact_prediction(const SchemeDescription& scheme,
                                         const DelayModel& delay,
                                         PredictionMethod method,
                                         const Jumps& jumps,
                                         const ErasureContext& context) {
  IterationTimePrediction out;
  const Erasure e = erasure(scheme, delay, method, jumps, context);
  out.q = e.q;
  out.q2 = e.q2;
  // Built only here: its scratch space is O(n). Discrete sweeps update single workers.
  const StopDistribution stop(
      scheme, delay, jumps.empty() ? &context.classes : nullptr, &context.budget);
  const double upper = scheme.rule == RuleKind::kDeadline ? scheme.deadline : kInfinity;
  const TimeMoments m = jumps.empty() ? numerical_moments(stop, delay_breaks(delay), upper)
                                      : discrete_moments(stop, jumps, upper);
  out.mean = m.mean;
  out.sd = m.sd;
  out.method = delay.independent_workers() ? "numerical" : kMarginalsMethod;
  return out;
}

}  // namespace

IterationTimePrediction simulated_prediction(const SimulatedIterationTime& s,
                                             double estimated,
                                             std::string why) {
  IterationTimePrediction out;
  out.mean = s.mean;
  out.sd = s.sd;
  out.standard_error = s.standard_error;
  out.q = s.q;
  out.q2 = std::numeric_limits<double>::quiet_NaN();
  out.draws = s.draws;
  out.estimated_operations = estimated;
  out.method = "simulation";
  out.fallback_reason = std::move(why);
  return out;
}

std::pair<double, double> stopping_time_moments(
    const std::function<StopProbability(double)>& distribution,
    std::vector<double> breaks,
    double upper) {
  const TimeMoments m = numerical_moments(distribution, std::move(breaks), upper);
  return {m.mean, m.sd};
}

IterationTimePrediction predict_iteration_time(const SchemeDescription& scheme,
                                               const DelayModel& delay,
                                               PredictionMethod method) {
  PredictionOptions options;
  options.method = method;
  return predict_iteration_time(scheme, delay, options);
}

IterationTimePrediction predict_iteration_time(const SchemeDescription& scheme,
                                               const DelayModel& delay,
                                               const PredictionOptions& options) {
  validate(scheme);
  STRAGGLERSIM_ASSERT(delay.workers() == scheme.workers, "delay model and scheme disagree on n");
  if (!scheme.order.empty()) {
    return predict_iteration_time(
        in_group_order(scheme), GroupOrderedDelay(delay, scheme.order), options);
  }
  if (options.method == PredictionMethod::kAuto && !delay.rows().empty()) {
    return rows_prediction(scheme, delay.rows());
  }
  if (options.method == PredictionMethod::kAuto && has_closed_form(scheme, delay)) {
    IterationTimePrediction out = closed_form(scheme, delay);
    const Erasure e =
        erasure(scheme, delay, options.method, {}, {singleton_classes(0), WorkBudget(kInfinity)});
    out.q = e.q;
    out.q2 = e.q2;
    return out;
  }
  // Discrete marginals: their CDF at every jump, read once for the erasures and the moments.
  const Jumps jumps = distinct_atoms(delay);
  const WorkerClasses classes = worker_classes(delay, options.merge_classes);
  const double estimated = estimated_operations(scheme, delay, options.method, jumps, classes);
  const bool can_simulate = static_cast<bool>(options.simulate);
  if (can_simulate && estimated > options.operation_limit) {
    return simulated_prediction(
        options.simulate(),
        estimated,
        fmt::format("the exact computation was estimated at {:.3g} operations, over "
                    "the limit {:.3g}",
                    estimated,
                    options.operation_limit));
  }
  const WorkBudget budget(can_simulate ? kWorkCapFactor * options.operation_limit : kInfinity);
  try {
    IterationTimePrediction out =
        exact_prediction(scheme, delay, options.method, jumps, {classes, budget});
    out.estimated_operations = estimated;
    out.operations = budget.used();
    return out;
  } catch (const WorkExceeded&) {
    return simulated_prediction(
        options.simulate(),
        estimated,
        fmt::format("the exact computation passed {:.3g} operations (estimated "
                    "{:.3g})",
                    budget.used(),
                    estimated));
  }
}

namespace {

/// A group code whose groups are not FRC's (`proportional`: groups of d workers of similar speed,
/// unequal shares): FRC's timing with the workers in group order and the code's loads. False
/// when the code has no groups or groups of unequal sizes.
bool describe_groups(const codes::GradientCode& code, SchemeDescription& s) {
  const std::optional<std::vector<int>> groups = code.worker_groups();
  if (!groups || code.compact()) {
    return false;
  }
  const int count = *std::ranges::max_element(*groups) + 1;
  if (s.workers % count != 0) {
    return false;
  }
  s.d = s.workers / count;
  s.order.resize(index(s.workers));
  for (int i = 0; i < s.workers; ++i) {
    s.order[index(i)] = i;
  }
  std::ranges::stable_sort(s.order, {}, [&](int i) { return (*groups)[index(i)]; });
  for (int j = 0; j < s.workers; ++j) {
    if ((*groups)[index(s.order[index(j)])] != j / s.d) {
      return false;  // a group of another size
    }
  }
  s.code = s.d == 1 ? CodeFamily::kUncoded : CodeFamily::kFractionalRepetition;
  s.loads = code.loads();
  return true;
}

}  // namespace

std::optional<SchemeDescription> describe_scheme(const Scheme& scheme, std::string* why) {
  const auto& code = *scheme.code;
  const auto& rule = *scheme.rule;
  SchemeDescription s;
  s.workers = code.workers();
  if (code.regroup_every() > 0) {
    *why = fmt::format(
        "no timing model for code '{}' (its groups are re-formed from the run's history)",
        code.name());
    return std::nullopt;
  }
  const codes::CodeStructure structure = code.structure();
  switch (structure.layout) {
    case codes::CodeLayout::kGroups:
      // Groups of one worker are the uncoded scheme, whatever code built them.
      s.code = structure.group_size == 1 ? CodeFamily::kUncoded : CodeFamily::kFractionalRepetition;
      s.d = structure.group_size;
      break;
    case codes::CodeLayout::kCyclic:
      s.code = CodeFamily::kCyclic;
      s.d = structure.group_size;
      break;
    case codes::CodeLayout::kIrregular:
      if (code.decodes_from_any_count() && !code.compact()) {
        // Exact from any n − s workers at unequal loads (`proportional_crc`): the cyclic
        // family's order statistics over the per-worker marginals.
        s.code = CodeFamily::kCyclic;
        s.d = structure.stragglers_tolerated + 1;
        s.loads = code.loads();
        break;
      }
      if (!describe_groups(code, s)) {
        *why = fmt::format("no timing model for code '{}' (random or non-uniform supports)",
                           code.name());
        return std::nullopt;
      }
      break;
  }
  const std::optional<StoppingShape> shape = rule.shape();
  if (!shape) {
    *why = fmt::format("no timing model for rule '{}'", rule.name());
    return std::nullopt;
  }
  s.rule = shape->kind;
  if (s.rule == RuleKind::kFirstR || s.rule == RuleKind::kFirstROrDecodable) {
    s.r = shape->r;
  }
  if (s.rule == RuleKind::kDeadline) {
    s.deadline = shape->deadline;
  }
  return s;
}

}  // namespace stragglersim::sim

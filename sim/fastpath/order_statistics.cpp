#include "sim/fastpath/order_statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/random/binomial_distribution.hpp>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

/// Exp(1) > 0 (the ziggurat may return 0, an event of probability zero that −log would turn
/// into an infinity).
double positive_exponential(RandomEngine& rng) {
  boost::random::exponential_distribution<double> exp1(1.0);
  double e = 0.0;
  while (!(e > 0.0)) {
    e = exp1(rng);
  }
  return e;
}

std::int64_t binomial(std::int64_t trials, double p, RandomEngine& rng) {
  if (trials <= 0 || p <= 0.0) {
    return 0;
  }
  if (p >= 1.0) {
    return trials;
  }
  return boost::random::binomial_distribution<std::int64_t, double>(trials, p)(rng);
}

/// Uniform integer in [0, bound).
std::uint64_t uniform_below(std::uint64_t bound, RandomEngine& rng) {
  return boost::random::uniform_int_distribution<std::uint64_t>(0, bound - 1)(rng);
}

/// log k! exactly summed below this, by Stirling's series from it on.
constexpr std::int64_t kLogFactorialTable = 128;

const std::array<double, kLogFactorialTable>& log_factorial_table() {
  static const std::array<double, kLogFactorialTable> table = [] {
    std::array<double, kLogFactorialTable> t{};
    for (std::size_t k = 2; k < t.size(); ++k) {
      t[k] = t[k - 1] + std::log(static_cast<double>(k));
    }
    return t;
  }();
  return table;
}

/// log k! − ((k + ½) log k − k + ½ log 2π): Stirling's series to 1/k⁵ (next term < 1e-18 for
/// k ≥ 128).
double stirling_correction(double k) {
  const double k2 = k * k;
  return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / (1260.0 * k2)) / k2) / k;
}

double log_factorial(std::int64_t k) {
  if (k < kLogFactorialTable) {
    return log_factorial_table()[static_cast<std::size_t>(k)];
  }
  const auto x = static_cast<double>(k);
  constexpr double kHalfLogTwoPi = 0.91893853320467274178;
  return (x + 0.5) * std::log(x) - x + kHalfLogTwoPi + stirling_correction(x);
}

/// log a! − log b!, without the cancellation of two values ~a·log a when both are large:
/// (b + ½)·log1p((a − b)/b) + (a − b)·(log a − 1) + the corrections' difference.
double log_factorial_ratio(std::int64_t a, std::int64_t b) {
  if (std::min(a, b) < kLogFactorialTable) {
    return log_factorial(a) - log_factorial(b);
  }
  const auto x = static_cast<double>(a);
  const auto y = static_cast<double>(b);
  const auto delta = static_cast<double>(a - b);
  return (y + 0.5) * std::log1p(delta / y) + delta * (std::log(x) - 1.0) +
         (stirling_correction(x) - stirling_correction(y));
}

/// Gamma(alpha, 1) for alpha ≥ 1 (Marsaglia and Tsang 2000): d·v with v = (1 + c·N)³, accepted
/// with probability min(1, exp(N²/2 + d(1 − v + log v))). The exponent is evaluated from
/// y = c·N as N²/2 + 3d(log1p(y) − y) − 3d·y² − d·y³, whose terms stay ~N², so it keeps ~1e-11
/// absolute accuracy at alpha ~ 10⁹ (1 − v + log v in doubles loses it to cancellation).
double gamma_draw(double alpha, RandomEngine& rng) {
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_01<double> u01;
  for (;;) {
    const double x = normal(rng);
    const double y = c * x;
    if (!(y > -1.0)) {
      continue;
    }
    const double v = (1.0 + y) * (1.0 + y) * (1.0 + y);
    const double u = u01(rng);
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) {
      return d * v;
    }
    const double exponent =
        0.5 * x2 + 3.0 * d * (std::log1p(y) - y) - 3.0 * d * y * y - d * y * y * y;
    if (std::log(u) < exponent) {
      return d * v;
    }
  }
}

/// FRC first_r: the integer chain for groups touched up to this many workers per slot, the
/// 2d − 1 hypergeometric draws by columns above (each ~10² ns, a chain step ~10 ns).
constexpr std::int64_t kChainStepsPerSlot = 32;

/// Classes of the decodable multinomial kept on the stack.
constexpr int kStackClasses = 64;

bool is_identical(const ShiftedExponentialShape& se) {
  for (std::size_t i = 1; i < se.worker_shift.size(); ++i) {
    if (se.worker_shift[i] != se.worker_shift[0] || se.worker_scale[i] != se.worker_scale[0]) {
      return false;
    }
  }
  return !se.worker_shift.empty() && se.worker_scale[0] > 0.0;
}

}  // namespace

std::optional<std::string> order_statistics_unavailable(const DelayModel& delays,
                                                        const StoppingRule& rule,
                                                        const codes::GradientCode& code,
                                                        StragglerPolicy policy) {
  const auto se = delays.shifted_exponential();
  if (!se) {
    return fmt::format(
        "delay model '{}' is not i.i.d. shifted exponential (the only model with an exact "
        "order-statistics sampler)",
        delays.name());
  }
  if (!is_identical(*se)) {
    return std::string(
        "the workers' delays are not identically distributed (the code's loads differ)");
  }
  if (code.regroup_every() > 0) {
    return fmt::format("code '{}' regroups its workers from the run's history", code.name());
  }
  if (policy == StragglerPolicy::kFinish) {
    return std::string(
        "stragglers 'finish' carries each straggler's remaining work into the next iteration, so "
        "workers are not i.i.d.");
  }
  const auto shape = rule.shape();
  if (!shape) {
    return fmt::format("stopping rule '{}' has no built-in shape", rule.name());
  }
  const bool groups = code.structure().layout == codes::CodeLayout::kGroups;
  if ((shape->kind == RuleKind::kDecodable || shape->kind == RuleKind::kFirstROrDecodable) &&
      !groups) {
    return fmt::format(
        "decodability of code '{}' depends on which workers are heard, not on group counts "
        "(only uncoded and frc)",
        code.name());
  }
  return std::nullopt;
}

double max_of_exponentials(std::uint64_t m, RandomEngine& rng) {
  STRAGGLERSIM_ASSERT(m >= 1, "the maximum needs at least one draw");
  // U^{1/m} = e^{−E/m}: the exponent stays in log space, so 1 − U^{1/m} keeps its digits even
  // when E/m is below the spacing of doubles near 1 (m = 2^30 and beyond).
  const double e = positive_exponential(rng);
  return -std::log(-std::expm1(-e / static_cast<double>(m)));
}

double exponential_order_statistic(std::uint64_t n, std::uint64_t r, RandomEngine& rng) {
  STRAGGLERSIM_ASSERT(r >= 1 && r <= n, "order statistic needs 1 <= r <= n");
  if (r <= kSpacingOrders) {
    // Rényi: X_(r) = Σ_{i<r} E_i / (n − i), every term exact to an ulp.
    boost::random::exponential_distribution<double> exp1(1.0);
    double x = 0.0;
    for (std::uint64_t i = 0; i < r; ++i) {
      x += exp1(rng) / static_cast<double>(n - i);
    }
    return x;
  }
  // U_(r) ~ Beta(r, n − r + 1) = A/(A + B), A ~ Gamma(r), B ~ Gamma(n − r + 1), and
  // X_(r) = −log(1 − U_(r)) = log1p(A/B): no cancellation whether U_(r) is near 0 or 1.
  const double a = gamma_draw(static_cast<double>(r), rng);
  const double b = gamma_draw(static_cast<double>(n - r + 1), rng);
  return std::log1p(a / b);
}

namespace {

// Items of the minor colour (`minor` of `total`) among m drawn without replacement, one draw at
// a time.
inline std::int64_t minor_by_draws(std::int64_t total,
                                   std::int64_t minor,
                                   std::int64_t m,
                                   RandomEngine& rng) {
  std::int64_t left = total;
  std::int64_t minor_left = minor;
  std::int64_t to_draw = m;
  while (to_draw > 0 && minor_left > 0 && left > minor_left) {
    if (uniform_below(static_cast<std::uint64_t>(left), rng) <
        static_cast<std::uint64_t>(minor_left)) {
      --minor_left;
    }
    --left;
    --to_draw;
  }
  if (left == minor_left) {
    minor_left -= to_draw;  // only minor items are left
  }
  return minor - minor_left;
}

// The same count by HRUA, for large m.
std::int64_t minor_by_hrua(
    std::int64_t total, std::int64_t minor, std::int64_t major, std::int64_t m, RandomEngine& rng) {
  // HRUA (Stadlober 1989, as in NumPy): X = a + h(V − ½)/U under a table-mountain hat of the
  // pmf scaled to 1 at its mode; K = ⌊X⌋ is accepted with probability f(K)/f(mode) against the
  // hat, squeezes first. The support [0, min(m, minor)] is the only truncation.
  constexpr double kD1 = 1.7155277699214135;  // 2√(2/e)
  constexpr double kD2 = 0.8989161620588988;  // 3 − 2√(3/e)
  const auto n_total = static_cast<double>(total);
  const double p = static_cast<double>(minor) / n_total;
  const double mean = static_cast<double>(m) * p;
  const double var =
      (n_total - static_cast<double>(m)) * static_cast<double>(m) * p * (1.0 - p) / (n_total - 1.0);
  const double a = mean + 0.5;
  const double h = kD1 * std::sqrt(var + 0.5) + kD2;
  const auto mode = static_cast<std::int64_t>(
      std::floor(static_cast<double>(m + 1) * static_cast<double>(minor + 1) / (n_total + 2.0)));
  const auto bound = static_cast<double>(std::min(m, minor) + 1);
  boost::random::uniform_01<double> u01;
  for (;;) {
    const double u = u01(rng);
    const double v = u01(rng);
    const double x = a + h * (v - 0.5) / u;
    if (!(u > 0.0) || !(x >= 0.0 && x < bound)) {
      continue;
    }
    const auto k = static_cast<std::int64_t>(x);
    // log f(k)/f(mode), f(k) ∝ 1/(k!(minor − k)!(m − k)!(major − m + k)!).
    const double t = log_factorial_ratio(mode, k) + log_factorial_ratio(minor - mode, minor - k) +
                     log_factorial_ratio(m - mode, m - k) +
                     log_factorial_ratio(major - m + mode, major - m + k);
    if (u * (4.0 - u) - 3.0 <= t) {
      return k;
    }
    if (u * (u - t) >= 1.0) {
      continue;
    }
    if (2.0 * std::log(u) <= t) {
      return k;
    }
  }
}

}  // namespace

std::int64_t hypergeometric(std::int64_t good,
                            std::int64_t bad,
                            std::int64_t sample,
                            RandomEngine& rng) {
  STRAGGLERSIM_ASSERT(good >= 0 && bad >= 0 && sample >= 0 && sample <= good + bad,
                      "hypergeometric needs 0 <= sample <= good + bad");
  const std::int64_t total = good + bad;
  // Draw the smaller of the sample and its complement, for the smaller of the two colours.
  const std::int64_t m = std::min(sample, total - sample);
  const std::int64_t minor = std::min(good, bad);
  const std::int64_t major = std::max(good, bad);
  // Items of the minor colour among the m drawn.
  const std::int64_t k = m <= kHypergeometricSteps ? minor_by_draws(total, minor, m, rng)
                                                   : minor_by_hrua(total, minor, major, m, rng);
  const std::int64_t good_in_drawn = good > bad ? m - k : k;
  return m == sample ? good_in_drawn : good - good_in_drawn;
}

namespace {

/// Groups hit by a uniform `r`-subset of `groups` groups of `size` workers (size ≥ 2): one
/// integer step per worker for small r, else by columns.
std::int64_t groups_hit(std::int64_t groups, int size, std::int64_t r, RandomEngine& rng) {
  const std::int64_t n = groups * size;
  if (r <= kChainStepsPerSlot * static_cast<std::int64_t>(size)) {
    // The i-th worker of a uniform subset lands in an untouched group with probability
    // size·(untouched groups)/(n − i): the exact chain, in integers.
    std::int64_t untouched = groups;
    for (std::int64_t i = 0; i < r && untouched > 0; ++i) {
      if (uniform_below(static_cast<std::uint64_t>(n - i), rng) <
          static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(untouched)) {
        --untouched;
      }
    }
    return groups - untouched;
  }
  // The workers as a grid, groups (rows) × size slots (columns). A uniform r-subset puts
  // K_c ~ Hypergeometric of its remaining members into column c, and given K_c the rows it picks
  // in that column are a uniform K_c-subset of the rows, independent of the other columns: of
  // them, Hypergeometric(untouched rows, touched rows, K_c) are new.
  std::int64_t later = n;  // cells in the columns after the current one
  std::int64_t to_place = r;
  std::int64_t touched = 0;
  for (int c = 0; c < size && to_place > 0 && touched < groups; ++c) {
    later -= groups;
    const std::int64_t k = c + 1 == size ? to_place : hypergeometric(groups, later, to_place, rng);
    to_place -= k;
    touched += touched == 0 ? k : hypergeometric(groups - touched, touched, k, rng);
  }
  return touched;
}

}  // namespace

CoveredPmf pairs_covered_pmf(std::int64_t groups, std::int64_t r) {
  STRAGGLERSIM_ASSERT(groups >= 1 && r >= 1 && r <= 2 * groups, "pairs pmf needs 1 <= r <= 2g");
  const std::int64_t low = (r + 1) / 2;  // a = 2c − r ≥ 0
  const std::int64_t high = std::min(r, groups);
  const auto g = static_cast<double>(groups);
  const auto n = 2.0 * g;
  const auto rr = static_cast<double>(r);
  // w(c + 1)/w(c) with b = r − c, a = 2c − r.
  const auto up = [&](std::int64_t c) {
    const auto b = static_cast<double>(r - c);
    const auto a = static_cast<double>(2 * c - r);
    return 4.0 * b * (g - static_cast<double>(c)) / ((a + 1.0) * (a + 2.0));
  };
  // Start at the mean g(1 − (n − r)(n − r − 1)/(n(n − 1))), clamped to the support.
  const double mean = g * (1.0 - (n - rr) * (n - rr - 1.0) / (n * (n - 1.0)));
  const std::int64_t start = std::clamp(static_cast<std::int64_t>(std::llround(mean)), low, high);
  constexpr double kDropBelow = 1e-30;
  std::vector<double> above{1.0};  // w(start), w(start + 1), …
  double largest = 1.0;
  for (std::int64_t c = start; c < high; ++c) {
    const double w = above.back() * up(c);
    largest = std::max(largest, w);
    if (w < kDropBelow * largest) {
      break;
    }
    above.push_back(w);
  }
  std::vector<double> below;  // w(start − 1), w(start − 2), …
  double w = 1.0;
  for (std::int64_t c = start; c > low; --c) {
    w /= up(c - 1);
    largest = std::max(largest, w);
    if (w < kDropBelow * largest) {
      break;
    }
    below.push_back(w);
  }
  CoveredPmf out;
  out.first = start - static_cast<std::int64_t>(below.size());
  out.probabilities.assign(below.rbegin(), below.rend());
  out.probabilities.insert(out.probabilities.end(), above.begin(), above.end());
  double total = 0.0;
  for (const double p : out.probabilities) {
    total += p;
  }
  for (double& p : out.probabilities) {
    p /= total;
  }
  return out;
}

void binomial_class_probabilities(int d, double x, std::span<double> out) {
  STRAGGLERSIM_ASSERT(d >= 1 && x > 0.0 && out.size() >= static_cast<std::size_t>(d),
                      "class probabilities need d >= 1, x > 0 and d slots");
  // c_j = P(H = j)/P(H ≥ j) = 1/(1 + Σ_{i>j} P(H = i)/P(H = j)); consecutive binomial terms have
  // the ratio (d − j)/(j + 1)·p/(1 − p), and p/(1 − p) = e^x − 1.
  const double odds = std::expm1(x);
  double c = 1.0;  // c_d
  for (int j = d - 1; j >= 0; --j) {
    const double ratio = odds * static_cast<double>(d - j) / static_cast<double>(j + 1);
    c = c / (c + ratio);
    out[static_cast<std::size_t>(j)] = c;
  }
}

OrderStatisticSampler::OrderStatisticSampler(double shift,
                                             double scale,
                                             const StoppingShape& shape,
                                             std::int64_t workers,
                                             int d,
                                             bool has_groups,
                                             StragglerPolicy policy)
    : shift_(shift),
      scale_(scale),
      shape_(shape),
      n_(workers),
      d_(has_groups ? d : 1),
      groups_(has_groups ? workers / d : 0),
      policy_(policy) {
  STRAGGLERSIM_ASSERT(scale_ > 0.0 && n_ >= 1 && d_ >= 1, "sampler needs scale > 0, n >= 1");
  STRAGGLERSIM_ASSERT(!has_groups || groups_ * d_ == n_, "groups must tile the workers");
  STRAGGLERSIM_ASSERT(policy_ != StragglerPolicy::kFinish, "finish is not i.i.d.");
  STRAGGLERSIM_ASSERT(has_groups || (shape_.kind != RuleKind::kDecodable &&
                                     shape_.kind != RuleKind::kFirstROrDecodable),
                      "decodable rules need a group code");
  const bool counts =
      shape_.kind == RuleKind::kFirstR || shape_.kind == RuleKind::kFirstROrDecodable;
  STRAGGLERSIM_ASSERT(!counts || (shape_.r >= 1 && shape_.r <= n_), "first_r needs 1 <= r <= n");
  if (shape_.kind == RuleKind::kDeadline) {
    const double x = (shape_.deadline - shift_) / scale_;
    deadline_p_ = x > 0.0 ? -std::expm1(-x) : 0.0;
    // Groups by finisher count: a multinomial over the d + 1 classes when d + 1 ≤ n/d (O(d) per
    // iteration), one binomial per group otherwise (O(n/d)).
    if (groups_ > 0 && d_ > 1 && d_ + 1 <= groups_ && deadline_p_ > 0.0 && deadline_p_ < 1.0) {
      deadline_class_.resize(static_cast<std::size_t>(d_));
      binomial_class_probabilities(d_, x, deadline_class_);
    }
  }
  if (shape_.kind == RuleKind::kFirstR && groups_ > 0 && d_ == 2 &&
      shape_.r > kChainStepsPerSlot * 2) {
    CoveredPmf pmf = pairs_covered_pmf(groups_, shape_.r);
    covered_first_ = pmf.first;
    covered_.emplace(pmf.probabilities.begin(), pmf.probabilities.end());
  }
}

double OrderStatisticSampler::wall_after(double stop,
                                         std::int64_t unheard,
                                         RandomEngine& rng) const {
  if (policy_ != StragglerPolicy::kDrain || unheard <= 0) {
    return stop;
  }
  // A worker not heard by time t ≥ shift arrives at t + scale·Exp(1) (memoryless), independently.
  const double from = std::max(stop, shift_);
  return from + scale_ * max_of_exponentials(static_cast<std::uint64_t>(unheard), rng);
}

OrderStatisticDraw OrderStatisticSampler::draw(RandomEngine& rng) const {
  switch (shape_.kind) {
    case RuleKind::kAll:
      return draw_all(rng);
    case RuleKind::kFirstR:
      return draw_first_r(rng);
    case RuleKind::kDeadline:
      return draw_deadline(rng);
    case RuleKind::kDecodable:
      return draw_decodable(rng);
    case RuleKind::kFirstROrDecodable:
      return draw_first_r_or_decodable(rng);
  }
  return {};
}

OrderStatisticDraw OrderStatisticSampler::draw_all(RandomEngine& rng) const {
  OrderStatisticDraw out;
  out.stop = shift_ + scale_ * max_of_exponentials(static_cast<std::uint64_t>(n_), rng);
  out.wall = out.stop;
  out.heard = n_;
  out.covered = groups_;
  return out;
}

OrderStatisticDraw OrderStatisticSampler::draw_first_r(RandomEngine& rng) const {
  OrderStatisticDraw out;
  const std::int64_t r = shape_.r;
  out.stop =
      shift_ + scale_ * exponential_order_statistic(
                            static_cast<std::uint64_t>(n_), static_cast<std::uint64_t>(r), rng);
  out.heard = r;
  // Which workers are the first r is a uniform subset, independent of the times.
  out.covered = groups_ == 0 ? 0
                : d_ == 1    ? r
                : covered_   ? covered_first_ + (*covered_)(rng)
                             : groups_hit(groups_, d_, r, rng);
  out.wall = wall_after(out.stop, n_ - r, rng);
  return out;
}

OrderStatisticDraw OrderStatisticSampler::draw_deadline(RandomEngine& rng) const {
  OrderStatisticDraw out;
  const double p = deadline_p_;
  std::int64_t heard = 0;
  std::int64_t empty_groups = 0;  // groups with no finisher
  if (groups_ > 0 && d_ > 1) {
    std::int64_t remaining = groups_;
    if (!deadline_class_.empty()) {
      // Sequential conditional binomials: N_j ~ Bin(remaining, P(H = j | H ≥ j)).
      for (int j = 0; j < d_ && remaining > 0; ++j) {
        const std::int64_t nj =
            binomial(remaining, deadline_class_[static_cast<std::size_t>(j)], rng);
        heard += j * nj;
        empty_groups += j == 0 ? nj : 0;
        remaining -= nj;
      }
      heard += static_cast<std::int64_t>(d_) * remaining;
    } else {
      for (std::int64_t g = 0; g < groups_; ++g) {
        const std::int64_t h = binomial(d_, p, rng);
        heard += h;
        empty_groups += h == 0 ? 1 : 0;
      }
    }
  } else {
    heard = binomial(n_, p, rng);
  }
  out.heard = heard;
  out.covered = groups_ == 0 ? 0 : d_ == 1 ? heard : groups_ - empty_groups;
  if (heard == n_) {
    // Everyone finished by τ: the maximum given that, F(M) = p·U^{1/n}, i.e.
    // 1 − e^{−x} = (1 − e^{−x_τ})·e^{−E/n}, so e^{−x} = −expm1(−E/n) + e^{−E/n − x_τ}: a sum of
    // two positive terms, no cancellation.
    const double e = positive_exponential(rng) / static_cast<double>(n_);
    const double xt = (shape_.deadline - shift_) / scale_;
    out.stop = shift_ + scale_ * -std::log(-std::expm1(-e) + std::exp(-e - xt));
    out.stop = std::min(out.stop, shape_.deadline);
    out.wall = out.stop;
    return out;
  }
  out.stop = shape_.deadline;
  out.wall = wall_after(out.stop, n_ - heard, rng);
  return out;
}

double OrderStatisticSampler::decodable_stop(RandomEngine& rng,
                                             std::int64_t& heard,
                                             std::span<std::int64_t> by_heard) const {
  // A group's first arrival is shift + (scale/d)·Exp(1); the last group covered is the maximum.
  const double x = max_of_exponentials(static_cast<std::uint64_t>(groups_), rng) / d_;
  heard = 1;  // the last group contributes its first worker only
  if (d_ == 1) {
    heard = n_;
    return x;
  }
  std::fill(by_heard.begin(), by_heard.end(), 0);
  // Given the maximum, the other n/d − 1 groups are i.i.d. conditioned on a first arrival ≤ the
  // stop, so each has H ~ Binomial(d, p) conditioned on H ≥ 1 workers heard, p = P(X ≤ x).
  const std::int64_t others = groups_ - 1;
  if (others > 0 && d_ <= others) {
    // Sequential conditional binomials over the classes 1 … d − 1: N_j ~ Bin(remaining,
    // P(H = j | H ≥ j)). The class probabilities depend on this iteration's stop, so they are
    // recomputed, in O(d) divisions (on the stack up to kStackClasses).
    std::array<double, kStackClasses> on_stack{};
    std::vector<double> on_heap(d_ > kStackClasses ? static_cast<std::size_t>(d_) : 0);
    const std::span<double> classes =
        on_heap.empty() ? std::span<double>(on_stack).first(static_cast<std::size_t>(d_))
                        : std::span<double>(on_heap);
    binomial_class_probabilities(d_, x, classes);
    std::int64_t remaining = others;
    for (int j = 1; j < d_ && remaining > 0; ++j) {
      const std::int64_t nj = binomial(remaining, classes[static_cast<std::size_t>(j)], rng);
      heard += j * nj;
      remaining -= nj;
      if (!by_heard.empty()) {
        by_heard[static_cast<std::size_t>(j)] = nj;
      }
    }
    heard += static_cast<std::int64_t>(d_) * remaining;
    if (!by_heard.empty()) {
      by_heard[static_cast<std::size_t>(d_)] = remaining;
    }
    return x;
  }
  // Per group: the first arrival's position J (truncated geometric, by inversion; log q = −x),
  // then each later worker independently with probability p.
  boost::random::uniform_01<double> u01;
  const double p = -std::expm1(-x);
  const double all_mass = -std::expm1(-d_ * x);  // 1 − q^d
  for (std::int64_t g = 0; g < others; ++g) {
    const double u = u01(rng);
    auto j = static_cast<std::int64_t>(std::floor(-std::log1p(-u * all_mass) / x)) + 1;
    j = std::clamp<std::int64_t>(j, 1, d_);
    const std::int64_t h = 1 + binomial(d_ - j, p, rng);
    heard += h;
    if (!by_heard.empty()) {
      ++by_heard[static_cast<std::size_t>(h)];
    }
  }
  return x;
}

OrderStatisticDraw OrderStatisticSampler::draw_decodable(RandomEngine& rng) const {
  OrderStatisticDraw out;
  std::int64_t heard = 0;
  out.stop = shift_ + scale_ * decodable_stop(rng, heard, {});
  out.covered = groups_;
  out.heard = heard;
  out.wall = d_ == 1 ? out.stop : wall_after(out.stop, n_ - heard, rng);
  return out;
}

OrderStatisticDraw OrderStatisticSampler::draw_first_r_or_decodable(RandomEngine& rng) const {
  const std::int64_t r = shape_.r;
  if (r < groups_) {
    return draw_first_r(rng);  // covering n/d groups needs at least n/d arrivals
  }
  if (r >= n_) {
    return draw_decodable(rng);  // every worker answers before the r-th arrival can fail
  }
  // Decodability's stop x and how many workers each other group has heard by then; the rule
  // stops there unless the r-th arrival came first (heard by x > r).
  std::array<std::int64_t, kStackClasses + 1> on_stack{};
  std::vector<std::int64_t> on_heap(d_ > kStackClasses ? static_cast<std::size_t>(d_) + 1 : 0);
  const std::span<std::int64_t> by_heard =
      on_heap.empty() ? std::span<std::int64_t>(on_stack).first(static_cast<std::size_t>(d_) + 1)
                      : std::span<std::int64_t>(on_heap);
  std::int64_t heard = 0;
  const double x = decodable_stop(rng, heard, by_heard);
  OrderStatisticDraw out;
  if (heard <= r) {
    out.stop = shift_ + scale_ * x;
    out.heard = heard;
    out.covered = groups_;
    out.wall = wall_after(out.stop, n_ - heard, rng);
    return out;
  }
  // Given that draw, the heard − 1 workers before the last group's first arrived at i.i.d.
  // times on [0, x) (Exp(1) truncated there), in a uniform order independent of their groups.
  // The r-th of them is the stop: with U ~ Beta(r, heard − r) = A/(A + B) in gammas,
  // X = −log(1 − U·(1 − e^{−x})) = log1p(A(1 − e^{−x})/(B + A e^{−x})), no cancellation.
  const double a = gamma_draw(static_cast<double>(r), rng);
  const double b = gamma_draw(static_cast<double>(heard - r), rng);
  out.stop = shift_ + scale_ * std::log1p(a * -std::expm1(-x) / (b + a * std::exp(-x)));
  out.heard = r;
  // The first r are a uniform r-subset of those heard − 1 workers: split it over the classes
  // (j·N_j workers in the groups with j heard) by sequential hypergeometrics, then count the
  // groups it hits within each class.
  std::int64_t cells = heard - 1;
  std::int64_t to_place = r;
  out.covered = 0;
  for (int j = d_; j >= 1 && to_place > 0; --j) {
    const std::int64_t groups = by_heard[static_cast<std::size_t>(j)];
    const std::int64_t mine = j * groups;
    cells -= mine;
    const std::int64_t k = cells == 0 ? to_place : hypergeometric(mine, cells, to_place, rng);
    to_place -= k;
    out.covered += j == 1 ? k : groups_hit(groups, j, k, rng);
  }
  out.wall = wall_after(out.stop, n_ - r, rng);
  return out;
}

}  // namespace stragglersim::sim

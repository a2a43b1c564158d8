#include "sim/theory/multi_message_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>

#include "models/base/invariant.h"

namespace stragglersim::sim {
// Named so that a unity batch with iteration_time_theory.cpp keeps both files' helpers apart.
namespace multi_message_detail {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Bits of a component's coverage mask.
constexpr std::size_t kMaxComponentPartitions = 63;
/// Terms of one component's exact sum above which a quantile is not computed (NaN).
constexpr double kMaxQuantileTerms = 1e6;
/// Evaluations of P(Z ≤ t) the numerical path takes, for the cost estimate.
constexpr double kEvaluations = 3000.0;
/// What a CDF read counts as, in enumeration terms (iteration_time_theory.cpp's kCdfOperations).
constexpr double kCdfOperations = 50.0;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

/// The ℓ-th message of a worker with s partitions and delay T leaves at T·ℓ/s (the last at T).
double message_time(double whole, std::size_t l, std::size_t s) {
  return l == s ? whole : whole * static_cast<double>(l) / static_cast<double>(s);
}

/// One connected component: its workers (ascending) and their orders in local partition indices
/// (numbered in order of first appearance).
struct Component {
  std::vector<int> workers;
  std::vector<std::vector<int>> local;
  std::size_t partitions = 0;
  std::uint64_t full = 0;
  [[nodiscard]] double terms() const {
    double product = 1.0;
    for (const auto& o : local) {
      product *= static_cast<double>(o.size() + 1);
    }
    return product;
  }
};

std::vector<Component> components_of(const std::vector<std::vector<int>>& orders) {
  const auto n = orders.size();
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  const auto root = [&](std::size_t i) {
    while (parent[i] != i) {
      parent[i] = parent[parent[i]];
      i = parent[i];
    }
    return i;
  };
  std::map<int, std::size_t> holder;  // partition → a worker holding it
  for (std::size_t i = 0; i < n; ++i) {
    for (const int j : orders[i]) {
      const auto [it, fresh] = holder.emplace(j, i);
      if (!fresh) {
        parent[root(i)] = root(it->second);
      }
    }
  }
  std::map<std::size_t, std::size_t> index;  // root → component
  std::vector<Component> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (orders[i].empty()) {
      continue;  // holds nothing: never sends
    }
    const auto [it, fresh] = index.emplace(root(i), out.size());
    if (fresh) {
      out.emplace_back();
    }
    out[it->second].workers.push_back(static_cast<int>(i));
  }
  for (Component& c : out) {
    std::map<int, int> local;
    for (const int i : c.workers) {
      std::vector<int> o;
      for (const int j : orders[at(i)]) {
        const auto [it, fresh] = local.emplace(j, static_cast<int>(local.size()));
        o.push_back(it->second);
      }
      c.local.push_back(std::move(o));
    }
    c.partitions = local.size();
    c.full = c.partitions >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << c.partitions) - 1;
  }
  return out;
}

/// Components with equal relative orders and equal marginals (lower bound and CDF at seven
/// points), each with its multiplicity.
struct ComponentClass {
  const Component* component = nullptr;
  int count = 0;
};

std::vector<ComponentClass> component_classes(const std::vector<Component>& components,
                                              const DelayModel& delay) {
  std::map<std::vector<double>, std::size_t> seen;
  std::vector<ComponentClass> out;
  for (const Component& c : components) {
    std::vector<double> key;
    for (std::size_t m = 0; m < c.workers.size(); ++m) {
      const int i = c.workers[m];
      key.push_back(static_cast<double>(c.local[m].size()));
      key.insert(key.end(), c.local[m].begin(), c.local[m].end());
      const double lb = delay.lower_bound(i);
      key.push_back(lb);
      for (const double x : {0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0}) {
        key.push_back(delay.cdf(i, lb + x * (1.0 + std::abs(lb))));
      }
    }
    const auto [it, fresh] = seen.emplace(std::move(key), out.size());
    if (fresh) {
      out.push_back({&c, 0});
    }
    out[it->second].count += 1;
  }
  return out;
}

/// P(every partition of `c` in by t): the sums over progress vectors that cover it and that do
/// not (each computed directly, so neither is 1 minus the other).
class ComponentCoverage {
 public:
  ComponentCoverage(const Component& c, const DelayModel& delay, double shift)
      : c_(c), delay_(delay), shift_(shift), masks_(c.workers.size()), p_(c.workers.size()) {
    for (std::size_t m = 0; m < c.workers.size(); ++m) {
      std::uint64_t mask = 0;
      masks_[m].push_back(0);
      for (const int j : c.local[m]) {
        mask |= std::uint64_t{1} << j;
        masks_[m].push_back(mask);
      }
    }
  }

  /// {covered, not covered} at t.
  std::pair<double, double> operator()(double t) {
    for (std::size_t m = 0; m < c_.workers.size(); ++m) {
      const std::size_t s = c_.local[m].size();
      std::vector<double>& p = p_[m];
      p.assign(s + 1, 0.0);
      // P(N ≥ ℓ) = F((t − c)·s/ℓ), ℓ = 1 … s; P(N = ℓ) = P(N ≥ ℓ) − P(N ≥ ℓ + 1).
      double next = 0.0;
      for (std::size_t l = s; l >= 1; --l) {
        const double by =
            l == s ? t - shift_ : (t - shift_) * static_cast<double>(s) / static_cast<double>(l);
        const double at_least = t < shift_ ? 0.0 : delay_.cdf(c_.workers[m], by);
        p[l] = std::max(0.0, at_least - next);
        next = at_least;
      }
      p[0] = std::max(0.0, 1.0 - next);
    }
    covered_ = 0.0;
    uncovered_ = 0.0;
    visit(0, 0, 1.0);
    return {covered_, uncovered_};
  }

 private:
  void visit(std::size_t m, std::uint64_t mask, double probability) {
    if (m == c_.workers.size()) {
      (mask == c_.full ? covered_ : uncovered_) += probability;
      return;
    }
    const std::vector<double>& p = p_[m];
    for (std::size_t l = 0; l < p.size(); ++l) {
      if (p[l] > 0.0) {
        visit(m + 1, mask | masks_[m][l], probability * p[l]);
      }
    }
  }

  const Component& c_;
  const DelayModel& delay_;
  double shift_;
  std::vector<std::vector<std::uint64_t>> masks_;  // coverage after ℓ messages
  std::vector<std::vector<double>> p_;             // P(N_m = ℓ) at the current t
  double covered_ = 0.0;
  double uncovered_ = 0.0;
};

/// P(Z ≤ t) over the classes: Π covered^count, and P(Z > t) = −expm1(Σ count·log1p(−uncovered)).
class Distribution {
 public:
  Distribution(const std::vector<Component>& components, const DelayModel& delay, double shift)
      : classes_(component_classes(components, delay)) {
    for (const ComponentClass& k : classes_) {
      coverage_.emplace_back(*k.component, delay, shift);
    }
  }
  StopProbability operator()(double t) {
    double log_stopped = 0.0;
    double log_all_in = 0.0;
    for (std::size_t k = 0; k < classes_.size(); ++k) {
      const auto [covered, uncovered] = coverage_[k](t);
      const double count = classes_[k].count;
      log_stopped += count * std::log(covered);
      log_all_in += count * std::log1p(-std::min(1.0, uncovered));
    }
    return {std::exp(log_stopped), -std::expm1(log_all_in)};
  }
  [[nodiscard]] double operations() const {
    double total = 0.0;
    for (const ComponentClass& k : classes_) {
      total +=
          k.component->terms() + kCdfOperations * static_cast<double>(k.component->workers.size());
    }
    return total;
  }

 private:
  std::vector<ComponentClass> classes_;
  std::vector<ComponentCoverage> coverage_;
};

IterationTimePrediction rows_prediction(const std::vector<std::vector<int>>& orders,
                                        const DelayModel& delay,
                                        const MultiMessageTheoryOptions& options) {
  const std::span<const double> table = delay.rows();
  const auto n = static_cast<std::size_t>(delay.workers());
  const std::size_t count = table.size() / n;
  double sum = 0.0;
  std::vector<double> times(count);
  for (std::size_t k = 0; k < count; ++k) {
    times[k] =
        multi_message_row_stop(orders, table.subspan(k * n, n), options.shift, options.deadline);
    sum += times[k];
  }
  IterationTimePrediction out;
  out.mean = sum / static_cast<double>(count);
  double square = 0.0;
  for (const double z : times) {
    square += (z - out.mean) * (z - out.mean);
  }
  out.sd = std::sqrt(square / static_cast<double>(count));
  out.q = kNaN;
  out.q2 = kNaN;
  out.method = "trace rows";
  return out;
}

IterationTimePrediction simulated(const MultiMessageTheoryOptions& options,
                                  double estimated,
                                  std::string why) {
  IterationTimePrediction out = simulated_prediction(options.simulate(), estimated, std::move(why));
  out.q = kNaN;
  return out;
}

/// Where P(Z ≤ t) can kink or jump: c + lower_bound(i)·ℓ/s_i where each message can first
/// arrive, and c + atom·ℓ/s_i for a model mixing discrete and continuous workers; sorted,
/// distinct.
std::vector<double> breaks_of(const std::vector<std::vector<int>>& orders,
                              const DelayModel& delay,
                              double shift) {
  std::vector<double> breaks{shift};
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::size_t s = orders[i].size();
    const double lb = delay.lower_bound(static_cast<int>(i));
    const auto atoms = delay.atoms(static_cast<int>(i));
    for (std::size_t l = 1; l <= s; ++l) {
      breaks.push_back(shift + message_time(lb, l, s));
      for (const double a : atoms) {
        breaks.push_back(shift + message_time(a, l, s));
      }
    }
  }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  return breaks;
}

/// Whether every worker's marginal is purely discrete (DelayModel::atoms non-empty).
bool purely_discrete(const DelayModel& delay) {
  for (int i = 0; i < delay.workers(); ++i) {
    if (delay.atoms(i).empty()) {
      return false;
    }
  }
  return delay.workers() > 0;
}

/// Every marginal purely discrete: Z is one of the arrival times c + a·ℓ/s_i (a an atom of
/// worker i) or the deadline, so E[Z] and Var[Z] are exact finite sums over those values with
/// P(Z = v) = P(Z ≤ v) − P(Z ≤ v⁻), one evaluation of P(Z ≤ v) per distinct value.
IterationTimePrediction discrete_prediction(const std::vector<std::vector<int>>& orders,
                                            const DelayModel& delay,
                                            const MultiMessageTheoryOptions& options,
                                            Distribution& dist,
                                            double estimated) {
  const double cap = options.deadline.value_or(kInfinity);
  std::vector<double> values;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::size_t s = orders[i].size();
    for (const double a : delay.atoms(static_cast<int>(i))) {
      for (std::size_t l = 1; l <= s; ++l) {
        const double v = options.shift + message_time(a, l, s);
        if (v < cap) {
          values.push_back(v);
        }
      }
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<std::pair<double, double>> masses;  // (value of Z, its probability)
  double before = 0.0;
  for (const double v : values) {
    // Just above v: (v − c)·s/ℓ may round a hair below the atom it came from.
    const double now = dist(v + 1e-12 * std::abs(v)).stopped;
    if (now > before) {
      masses.emplace_back(v, now - before);
      before = now;
    }
  }
  if (std::isfinite(cap) && before < 1.0) {
    masses.emplace_back(cap, 1.0 - before);  // stopped by the deadline
  }
  STRAGGLERSIM_ASSERT(std::isfinite(cap) || before > 1.0 - 1e-9,
                      "a discrete stopping time's masses sum to 1");
  IterationTimePrediction out;
  for (const auto& [v, p] : masses) {
    out.mean += p * v;
  }
  double square = 0.0;
  for (const auto& [v, p] : masses) {
    square += p * (v - out.mean) * (v - out.mean);
  }
  out.sd = std::sqrt(square);
  out.q = kNaN;
  out.q2 = kNaN;
  out.method = delay.independent_workers() ? "numerical" : "numerical (independent marginals)";
  out.estimated_operations = estimated;
  return out;
}

}  // namespace
}  // namespace multi_message_detail

using multi_message_detail::Component;

double multi_message_row_stop(const std::vector<std::vector<int>>& orders,
                              std::span<const double> delays,
                              double shift,
                              std::optional<double> deadline) {
  STRAGGLERSIM_ASSERT(orders.size() == delays.size(), "one order per worker");
  std::map<int, double> first;  // partition → its first arrival
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const std::size_t s = orders[i].size();
    for (std::size_t l = 1; l <= s; ++l) {
      const double arrival = shift + multi_message_detail::message_time(delays[i], l, s);
      const auto [it, fresh] = first.emplace(orders[i][l - 1], arrival);
      if (!fresh) {
        it->second = std::min(it->second, arrival);
      }
    }
  }
  double stop = 0.0;
  for (const auto& [j, arrival] : first) {
    stop = std::max(stop, arrival);
  }
  return deadline ? std::min(*deadline, stop) : stop;
}

StopProbability multi_message_stop_probability(const std::vector<std::vector<int>>& orders,
                                               const DelayModel& delay,
                                               double shift,
                                               double t) {
  STRAGGLERSIM_ASSERT(orders.size() == static_cast<std::size_t>(delay.workers()),
                      "one order per worker");
  const std::vector<Component> components = multi_message_detail::components_of(orders);
  multi_message_detail::Distribution dist(components, delay, shift);
  return dist(t);
}

IterationTimePrediction predict_multi_message_time(const std::vector<std::vector<int>>& orders,
                                                   const DelayModel& delay,
                                                   const MultiMessageTheoryOptions& options) {
  STRAGGLERSIM_ASSERT(orders.size() == static_cast<std::size_t>(delay.workers()),
                      "one order per worker");
  if (!delay.rows().empty()) {
    return multi_message_detail::rows_prediction(orders, delay, options);
  }
  const std::vector<Component> components = multi_message_detail::components_of(orders);
  std::size_t widest = 0;
  for (const Component& c : components) {
    widest = std::max(widest, c.partitions);
  }
  const bool can_simulate = static_cast<bool>(options.simulate);
  if (widest > multi_message_detail::kMaxComponentPartitions) {
    STRAGGLERSIM_ASSERT(can_simulate, "multi-message theory: a component of over 63 partitions");
    return multi_message_detail::simulated(
        options,
        multi_message_detail::kInfinity,
        fmt::format("a set of workers sharing partitions holds {} partitions "
                    "(the exact sum tracks at most {})",
                    widest,
                    multi_message_detail::kMaxComponentPartitions));
  }
  multi_message_detail::Distribution dist(components, delay, options.shift);
  const double estimated = multi_message_detail::kEvaluations * dist.operations();
  if (can_simulate && estimated > options.operation_limit) {
    return multi_message_detail::simulated(
        options,
        estimated,
        fmt::format("the exact computation was estimated at {:.3g} operations, over "
                    "the limit {:.3g}",
                    estimated,
                    options.operation_limit));
  }
  if (multi_message_detail::purely_discrete(delay)) {
    return multi_message_detail::discrete_prediction(orders, delay, options, dist, estimated);
  }
  const auto [mean, sd] =
      stopping_time_moments([&](double t) { return dist(t); },
                            multi_message_detail::breaks_of(orders, delay, options.shift),
                            options.deadline.value_or(multi_message_detail::kInfinity));
  IterationTimePrediction out;
  out.mean = mean;
  out.sd = sd;
  out.q = multi_message_detail::kNaN;
  out.q2 = multi_message_detail::kNaN;
  out.method = delay.independent_workers() ? "numerical" : "numerical (independent marginals)";
  out.estimated_operations = estimated;
  return out;
}

double multi_message_time_quantile(const std::vector<std::vector<int>>& orders,
                                   const DelayModel& delay,
                                   const MultiMessageTheoryOptions& options,
                                   double p) {
  STRAGGLERSIM_ASSERT(p > 0.0 && p < 1.0, "a quantile's level lies in (0, 1)");
  STRAGGLERSIM_ASSERT(orders.size() == static_cast<std::size_t>(delay.workers()),
                      "one order per worker");
  const double cap = options.deadline.value_or(multi_message_detail::kInfinity);
  if (!delay.rows().empty()) {
    const std::span<const double> table = delay.rows();
    const auto n = static_cast<std::size_t>(delay.workers());
    std::vector<double> times(table.size() / n);
    for (std::size_t k = 0; k < times.size(); ++k) {
      times[k] =
          multi_message_row_stop(orders, table.subspan(k * n, n), options.shift, options.deadline);
    }
    std::sort(times.begin(), times.end());
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(times.size())));
    return times[std::max<std::size_t>(k, 1) - 1];
  }
  const std::vector<Component> components = multi_message_detail::components_of(orders);
  for (const Component& c : components) {
    if (c.partitions > multi_message_detail::kMaxComponentPartitions ||
        c.terms() > multi_message_detail::kMaxQuantileTerms) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  }
  multi_message_detail::Distribution dist(components, delay, options.shift);
  const auto stopped = [&](double t) { return t >= cap ? 1.0 : dist(t).stopped; };
  double lo = std::min(cap, options.shift);  // no message arrives before c
  if (stopped(lo) >= p) {
    return lo;
  }
  // Grow the bracket geometrically, then bisect to rounding (iteration_time_quantile's way).
  double step = delay.mean(0);
  if (!(std::isfinite(step) && step > 0.0)) {
    step = std::max(1.0, std::abs(lo));
  }
  double hi = lo + step;
  for (int k = 0; stopped(hi) < p; ++k) {
    if (k == 2000 || !std::isfinite(hi)) {
      return multi_message_detail::kInfinity;
    }
    lo = hi;
    step *= 2.0;
    hi = lo + step;
  }
  for (int k = 0; k < 200 && hi - lo > 1e-13 * std::abs(hi); ++k) {
    const double mid = lo + 0.5 * (hi - lo);
    (stopped(mid) >= p ? hi : lo) = mid;
  }
  return std::min(hi, cap);
}

}  // namespace stragglersim::sim

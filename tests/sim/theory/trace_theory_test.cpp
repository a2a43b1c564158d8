// The numerical theory (sim/theory/iteration_time_theory.h) on the empirical marginals of a
// replayed trace (sim/delays/trace_delay.h) against exact enumeration of the pool bootstrap's
// draws.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "codes/uncoded_code.h"
#include "sim/delays/trace_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/theory/iteration_time_theory.h"
#include "tests/sim/delays/trace_fixtures.h"

namespace stragglersim::sim {
namespace {

using testing::pool_trace;

/// Calls `visit` with every combination of one pool value per worker (the pool bootstrap's
/// equally likely draws, repeats counted).
void for_each_draw(const DelayTrace& p,
                   const std::function<void(const std::vector<double>&)>& visit) {
  std::vector<double> draw(p.per_worker.size());
  const std::function<void(std::size_t)> walk = [&](std::size_t worker) {
    if (worker == draw.size()) {
      visit(draw);
      return;
    }
    for (const double x : p.per_worker[worker]) {
      draw[worker] = x;
      walk(worker + 1);
    }
  };
  walk(0);
}

TEST_CASE("trace delay: the numerical theory on pool marginals matches exact enumeration",
          "[sim][trace][theory]") {
  // Pool bootstrap makes workers independent with the empirical marginals: E[max] and the mean
  // of the 2nd arrival follow by enumerating the 2·3·4 equally likely draws.
  const DelayTrace p = pool_trace();
  const TraceDelay d({1.0, 1.0, 1.0}, p, {.mode = TraceDelay::Mode::kBootstrap});
  double all = 0.0;
  double second = 0.0;
  int cases = 0;
  for (const double x : p.per_worker[0]) {
    for (const double y : p.per_worker[1]) {
      for (const double z : p.per_worker[2]) {
        std::vector<double> v = {x, y, z};
        std::sort(v.begin(), v.end());
        all += v[2];
        second += v[1];
        ++cases;
      }
    }
  }
  all /= cases;
  second /= cases;
  const auto max_time = predict_iteration_time({.workers = 3, .rule = RuleKind::kAll}, d);
  CHECK(max_time.method == "numerical");
  CHECK(max_time.mean == Approx(all).epsilon(1e-6));
  const auto r2 = predict_iteration_time({.workers = 3, .rule = RuleKind::kFirstR, .r = 2}, d);
  CHECK(r2.mean == Approx(second).epsilon(1e-6));
}

TEST_CASE("trace delay: group-erasure probability of FRC first_r matches exact enumeration",
          "[sim][trace][theory]") {
  // Workers with different pools (distinct values, so no ties): the non-identical path of the
  // theory, a finite sum over the erased group's atoms, against all 2·3·4·2 draws.
  DelayTrace p;
  p.workers = 4;
  p.per_worker = {{1.0, 2.0}, {0.5, 1.5, 2.5}, {2.25, 0.75, 1.75, 3.5}, {1.25, 2.75}};
  const int n = 4;
  const int d = 2;
  const int r = 2;
  const TraceDelay delay(std::vector<double>(n, 2.0), p, {.mode = TraceDelay::Mode::kBootstrap});
  double erased = 0.0;
  double both = 0.0;
  int cases = 0;
  for_each_draw(p, [&](const std::vector<double>& v) {
    std::vector<std::pair<double, int>> order = {{v[0], 0}, {v[1], 1}, {v[2], 2}, {v[3], 3}};
    std::sort(order.begin(), order.end());
    std::vector<bool> heard(n, false);
    for (int k = 0; k < r; ++k) heard[static_cast<std::size_t>(order[k].second)] = true;
    const bool g0 = !heard[0] && !heard[1];
    const bool g1 = !heard[2] && !heard[3];
    erased += (g0 ? 0.5 : 0.0) + (g1 ? 0.5 : 0.0);
    both += g0 && g1 ? 1.0 : 0.0;
    ++cases;
  });
  const auto prediction = predict_iteration_time({.workers = n,
                                                  .code = CodeFamily::kFractionalRepetition,
                                                  .d = d,
                                                  .rule = RuleKind::kFirstR,
                                                  .r = r},
                                                 delay);
  CHECK(prediction.q == Approx(erased / cases).epsilon(1e-12));
  CHECK(prediction.q2 == Approx(both / cases).margin(1e-12));
}

/// A TraceDelay that counts its CDF evaluations.
class CountingDelay final : public DelayModel {
 public:
  explicit CountingDelay(const TraceDelay& inner) : inner_(inner) {}
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] int workers() const override { return inner_.workers(); }
  void sample(std::uint64_t /*iteration*/,
              RandomEngine& /*rng*/,
              std::span<double> /*out*/) override {}
  [[nodiscard]] double cdf(int worker, double t) const override {
    ++cdf_calls;
    return inner_.cdf(worker, t);
  }
  [[nodiscard]] double mean(int worker) const override { return inner_.mean(worker); }
  [[nodiscard]] double variance(int worker) const override { return inner_.variance(worker); }
  [[nodiscard]] double lower_bound(int worker) const override { return inner_.lower_bound(worker); }
  [[nodiscard]] std::span<const double> atoms(int worker) const override {
    return inner_.atoms(worker);
  }
  mutable long long cdf_calls = 0;

 private:
  const TraceDelay& inner_;
};

/// Pool trace of n workers with `per_worker` values each: worker i's k-th value is an
/// exponential quantile, shifted and scaled per worker, rounded to 1/64 so that values repeat
/// within and across workers.
DelayTrace quantile_trace(int n, int per_worker) {
  DelayTrace t;
  t.workers = n;
  t.per_worker.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < per_worker; ++k) {
      const double u = (k + 0.5) / per_worker;
      const double x = 1.0 + 0.1 * i - (1.0 + 0.2 * i) * std::log1p(-u);
      t.per_worker[static_cast<std::size_t>(i)].push_back(std::round(x * 64.0) / 64.0);
    }
  }
  return t;
}

TEST_CASE("trace delay: discrete theory reads each worker's CDF once per distinct atom",
          "[sim][trace][theory]") {
  // Linear in the atoms: one CDF evaluation per (worker, distinct value of that worker), so ten
  // times the atoms is ten times the evaluations (no quantile search, no quadrature).
  for (const int per_worker : {50, 500, 5000}) {
    const DelayTrace p = quantile_trace(4, per_worker);
    const TraceDelay trace(std::vector<double>(4, 1.0), p, {.mode = TraceDelay::Mode::kBootstrap});
    long long distinct = 0;
    for (int i = 0; i < 4; ++i) {
      const auto a = trace.atoms(i);
      distinct += static_cast<long long>(std::set<double>(a.begin(), a.end()).size());
    }
    INFO("values per worker " << per_worker);
    // all: the moments only; first_r on FRC: the moments and the group erasures q, q₂ (sums over
    // the erased groups' atoms) from the same reads.
    for (const SchemeDescription& scheme : {SchemeDescription{.workers = 4, .rule = RuleKind::kAll},
                                            SchemeDescription{.workers = 4,
                                            .code = CodeFamily::kFractionalRepetition,
                                            .d = 2,
                                            .rule = RuleKind::kFirstR,
                                            .r = 2}}) {
      const CountingDelay counting(trace);
      const auto prediction = predict_iteration_time(scheme, counting);
      CHECK(counting.cdf_calls == distinct);
      CHECK(prediction.method == "numerical");
      CHECK(std::isfinite(prediction.mean));
      CHECK(std::isfinite(prediction.q));
    }
  }
}

TEST_CASE("trace delay: discrete theory equals exhaustive enumeration for every rule",
          "[sim][trace][theory]") {
  // Four workers, repeats within a pool and ties across workers; every combination of one value
  // per worker is equally likely under the pool bootstrap.
  DelayTrace p;
  p.workers = 4;
  p.per_worker = {{1.0, 2.0, 2.0, 5.0}, {1.5, 2.0, 3.0}, {0.5, 4.0}, {2.0, 3.0, 3.0, 3.5, 6.0}};
  const TraceDelay delay(std::vector<double>(4, 1.0), p, {.mode = TraceDelay::Mode::kBootstrap});
  struct Rule {
    SchemeDescription scheme;
    std::function<double(const std::vector<double>&)> stop;
  };
  const auto order = [](std::vector<double> v, int r) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(r - 1)];
  };
  const auto frc = [](const std::vector<double>& v) {
    return std::max(std::min(v[0], v[1]), std::min(v[2], v[3]));
  };
  const std::vector<Rule> rules = {
      {{.workers = 4, .rule = RuleKind::kAll}, [&](const auto& v) { return order(v, 4); }},
      {{.workers = 4, .rule = RuleKind::kFirstR, .r = 2},
       [&](const auto& v) { return order(v, 2); }},
      {{.workers = 4, .rule = RuleKind::kDeadline, .deadline = 3.0},
       [&](const auto& v) { return std::min(3.0, order(v, 4)); }},
      {{.workers = 4,
        .code = CodeFamily::kFractionalRepetition,
        .d = 2,
        .rule = RuleKind::kDecodable},
       frc},
      {{.workers = 4,
        .code = CodeFamily::kFractionalRepetition,
        .d = 2,
        .rule = RuleKind::kFirstROrDecodable,
        .r = 3},
       [&](const auto& v) { return std::min(order(v, 3), frc(v)); }},
      {{.workers = 4, .code = CodeFamily::kCyclic, .d = 2, .rule = RuleKind::kDecodable},
       [&](const auto& v) { return order(v, 3); }},
  };
  for (const Rule& rule : rules) {
    double sum = 0.0;
    double square = 0.0;
    int cases = 0;
    for_each_draw(p, [&](const std::vector<double>& v) {
      const double z = rule.stop(v);
      sum += z;
      square += z * z;
      ++cases;
    });
    const double mean = sum / cases;
    const double sd = std::sqrt(square / cases - mean * mean);
    const auto prediction = predict_iteration_time(rule.scheme, delay);
    INFO("rule " << static_cast<int>(rule.scheme.rule) << " code "
                 << static_cast<int>(rule.scheme.code));
    CHECK(prediction.mean == Approx(mean).epsilon(1e-13));
    CHECK(prediction.sd == Approx(sd).epsilon(1e-12));
  }
}

TEST_CASE("trace delay: theory on 24 000 atoms matches a delay-only Monte Carlo",
          "[sim][trace][theory]") {
  // Past the old 20 000-atom cap: 6 workers × 4000 values, mean iteration time of all and of
  // first_r (r = 4) against 10^5 iterations of the pool bootstrap (independent workers with
  // exactly these marginals), within 4 standard errors.
  const int n = 6;
  const DelayTrace p = quantile_trace(n, 4000);
  for (const int r : {n, 4}) {
    const TraceDelay theory_delay(
        std::vector<double>(n, 1.0), p, {.mode = TraceDelay::Mode::kBootstrap});
    const auto prediction = predict_iteration_time(
        {.workers = n, .rule = r == n ? RuleKind::kAll : RuleKind::kFirstR, .r = r}, theory_delay);
    std::shared_ptr<const StoppingRule> rule;
    if (r == n) {
      rule = std::make_shared<AllStopping>(n);
    } else {
      rule = std::make_shared<FirstRStopping>(r);
    }
    DelayOnlySimulator simulator(
        std::make_unique<TraceDelay>(std::vector<double>(n, 1.0),
                                     p,
                                     TraceDelay::Options{.mode = TraceDelay::Mode::kBootstrap}),
        rule,
        std::make_shared<codes::UncodedCode>(n),
        StragglerPolicy::kCancel,
        17);
    std::vector<double> times;
    const DelayOnlyStatistics stats = simulator.run(
        100000, [&](const DelayOnlyIteration& it) { times.push_back(it.iteration_time); });
    INFO("r = " << r << ": theory " << prediction.mean << " ± " << prediction.sd << ", simulation "
                << stats.mean << " ± " << stats.standard_error());
    CHECK(std::abs(stats.mean - prediction.mean) < 4.0 * stats.standard_error());
    // The sd, with the s.e. of a sample sd, √((μ₄ − s⁴)/N)/(2s).
    double m4 = 0.0;
    for (const double t : times) {
      m4 += std::pow(t - stats.mean, 4) / static_cast<double>(times.size());
    }
    const double s2 = stats.variance();
    const double sd_se =
        std::sqrt((m4 - s2 * s2) / static_cast<double>(times.size())) / (2.0 * std::sqrt(s2));
    CHECK(std::abs(std::sqrt(s2) - prediction.sd) < 4.0 * sd_se);
  }
}

}  // namespace
}  // namespace stragglersim::sim

// P(Z ≤ t) of the stop's shapes (sim/theory/stop_distribution.h) against the sum over every set of
// arrived workers (2^n sets, each with probability Π F_i Π (1 − F_j)).

#include "sim/theory/stop_distribution.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cstddef>
#include <functional>
#include <vector>

#include "sim/delays/heterogeneous_delay.h"

namespace stragglersim::sim {
namespace {

/// Σ over arrival sets `mask` of P(mask) · [stops(mask)].
double enumerate_stop(const std::vector<double>& f, const std::function<bool(unsigned)>& stops) {
  double total = 0.0;
  for (unsigned mask = 0; mask < (1U << f.size()); ++mask) {
    double p = 1.0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      p *= ((mask >> i) & 1U) != 0 ? f[i] : 1.0 - f[i];
    }
    total += stops(mask) ? p : 0.0;
  }
  return total;
}

}  // namespace

TEST_CASE("theory: the Poisson-binomial DP against every arrival set", "[sim][theory]") {
  const std::vector<double> f = {0.1, 0.5, 0.35, 0.9, 0.7, 0.2};
  std::vector<double> w;
  for (const double x : f) {
    w.push_back(1.0 - x);
  }
  std::vector<double> scratch;
  for (int r = 1; r <= 6; ++r) {
    const double expected = enumerate_stop(f, [&](unsigned m) { return std::popcount(m) >= r; });
    const StopProbability p = at_least(f, w, {}, r, scratch);
    INFO("r " << r);
    CHECK(p.stopped == Approx(expected).epsilon(1e-14));
    CHECK(p.waiting == Approx(1.0 - expected).epsilon(1e-13));
  }
  // Workers 1 and 3 skipped: at least 2 of the other four.
  const std::vector<char> skip = {0, 1, 0, 1, 0, 0};
  const double others = enumerate_stop(f, [](unsigned m) { return std::popcount(m & 0x35U) >= 2; });
  CHECK(at_least(f, w, skip, 2, scratch).stopped == Approx(others).epsilon(1e-14));
  CHECK(at_least(f, w, {}, 0, scratch).stopped == 1.0);
}

TEST_CASE("theory: FRC stops against every arrival set", "[sim][theory]") {
  // n = 6, groups {0,1}, {2,3}, {4,5}; decodable: every group covered; first_r_or_decodable with
  // r = 4: four arrivals or every group covered.
  const std::vector<double> factors = {1.0, 2.0, 0.5, 4.0, 3.0, 1.5};
  SchemeDescription s{.workers = 6,
                      .code = CodeFamily::kFractionalRepetition,
                      .d = 2,
                      .rule = RuleKind::kDecodable,
                      .r = 4};
  HeterogeneousDelay delay(
      scheme_loads(s), {.shift = 0.2, .rate = 1.0, .tail = TailScaling::kNone, .factors = factors});
  const auto covered = [](unsigned m) { return (m & 3U) != 0 && (m & 12U) != 0 && (m & 48U) != 0; };
  for (const double t : {0.5, 1.0, 2.5, 6.0}) {
    std::vector<double> f;
    for (int i = 0; i < 6; ++i) {
      f.push_back(delay.cdf(i, t));
    }
    INFO("t " << t);
    s.rule = RuleKind::kDecodable;
    CHECK(stop_probability(s, delay, t).stopped ==
          Approx(enumerate_stop(f, covered)).epsilon(1e-13));
    s.rule = RuleKind::kFirstROrDecodable;
    const double either =
        enumerate_stop(f, [&](unsigned m) { return std::popcount(m) >= 4 || covered(m); });
    const StopProbability p = stop_probability(s, delay, t);
    CHECK(p.stopped == Approx(either).epsilon(1e-13));
    CHECK(p.waiting == Approx(1.0 - either).epsilon(1e-12));
  }
}

TEST_CASE("theory: the work budget throws past its limit", "[sim][theory]") {
  const WorkBudget budget(10.0);
  budget.charge(6.0);
  CHECK(budget.used() == 6.0);
  CHECK_THROWS_AS(budget.charge(5.0), WorkExceeded);
}

}  // namespace stragglersim::sim

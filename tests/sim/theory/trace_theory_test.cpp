// The numerical theory (sim/theory/iteration_time_theory.h) on the empirical marginals of a
// replayed trace (sim/trace_delay.h) against exact enumeration of the pool bootstrap's draws.

#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "sim/theory/iteration_time_theory.h"
#include "sim/trace_delay.h"

namespace stragglersim::sim {
namespace {

/// A 3-worker pool trace with pools of different sizes.
DelayTrace pool_trace() {
  DelayTrace t;
  t.path = "pool.csv";
  t.workers = 3;
  t.per_worker = {{1.0, 2.0}, {0.5, 1.5, 2.5}, {2.25, 0.75, 1.75, 3.5}};
  return t;
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
  for (const double a : p.per_worker[0]) {
    for (const double b : p.per_worker[1]) {
      for (const double c : p.per_worker[2]) {
        for (const double e : p.per_worker[3]) {
          std::vector<std::pair<double, int>> order = {{a, 0}, {b, 1}, {c, 2}, {e, 3}};
          std::sort(order.begin(), order.end());
          std::vector<bool> heard(n, false);
          for (int k = 0; k < r; ++k) heard[static_cast<std::size_t>(order[k].second)] = true;
          const bool g0 = !heard[0] && !heard[1];
          const bool g1 = !heard[2] && !heard[3];
          erased += (g0 ? 0.5 : 0.0) + (g1 ? 0.5 : 0.0);
          both += g0 && g1 ? 1.0 : 0.0;
          ++cases;
        }
      }
    }
  }
  const auto prediction = predict_iteration_time({.workers = n,
                                                  .code = CodeFamily::kFractionalRepetition,
                                                  .d = d,
                                                  .rule = RuleKind::kFirstR,
                                                  .r = r},
                                                 delay);
  CHECK(prediction.q == Approx(erased / cases).epsilon(1e-12));
  CHECK(prediction.q2 == Approx(both / cases).margin(1e-12));
}

}  // namespace
}  // namespace stragglersim::sim

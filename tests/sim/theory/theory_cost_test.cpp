// The iteration-time theory's cost estimate, worker classes and simulation fallback
// (sim/theory/iteration_time_theory.h PredictionOptions): merged classes give the values of the
// unmerged computation, the fallback is within 4 standard errors of the exact value, and a
// 16-worker heterogeneous FRC first_r case is simulated instead of integrated.

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/stopping_rule.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {
namespace {

SchemeDescription frc_first_r(int n, int d, int r) {
  SchemeDescription s;
  s.workers = n;
  s.code = CodeFamily::kFractionalRepetition;
  s.d = d;
  s.rule = RuleKind::kFirstR;
  s.r = r;
  return s;
}

HeterogeneousDelay::Options heterogeneous(std::vector<double> factors) {
  return {.shift = 1.0, .rate = 2.0, .tail = TailScaling::kLoad, .factors = std::move(factors)};
}

/// The delay-only fast path on the scheme (FRC, first_r), `draws` iterations.
IterationTimeSimulation fast_path(const SchemeDescription& s,
                                  const HeterogeneousDelay::Options& o,
                                  std::uint64_t draws) {
  return [s, o, draws] {
    auto code = std::make_shared<codes::FractionalRepetitionCode>(s.workers, s.d);
    DelayOnlySimulator sim(std::make_unique<HeterogeneousDelay>(scheme_loads(s), o),
                           std::make_shared<FirstRStopping>(s.r),
                           code,
                           StragglerPolicy::kCancel,
                           7);
    const DelayOnlyStatistics st = sim.run(draws);
    return SimulatedIterationTime{
        st.mean, std::sqrt(st.variance()), st.standard_error(), st.erasure_fraction(), draws};
  };
}

}  // namespace

TEST_CASE("theory: merged worker classes give the unmerged values", "[sim][theory][classes]") {
  const SchemeDescription s = frc_first_r(8, 2, 5);
  const HeterogeneousDelay delay(scheme_loads(s),
                                 heterogeneous({1.0, 1.0, 1.7, 1.7, 1.0, 1.0, 1.7, 1.7}));
  PredictionOptions merged;
  PredictionOptions unmerged;
  unmerged.merge_classes = false;
  const auto a = predict_iteration_time(s, delay, merged);
  const auto b = predict_iteration_time(s, delay, unmerged);
  CHECK(a.method == "numerical");
  CHECK(b.method == "numerical");
  CHECK(a.mean == Approx(b.mean).epsilon(1e-12));
  CHECK(a.sd == Approx(b.sd).epsilon(1e-12));
  CHECK(a.q == Approx(b.q).epsilon(1e-12));
  CHECK(a.q2 == Approx(b.q2).epsilon(1e-12));
  // Two classes: two distinct groups ({1, 1} and {1.7, 1.7}) instead of four, three distinct
  // pairs instead of six, and two CDF reads per point instead of eight.
  CHECK(a.operations < 0.7 * b.operations);
  CHECK(a.estimated_operations < b.estimated_operations);
}

TEST_CASE("theory: the simulation fallback is within 4 s.e. of the exact value",
          "[sim][theory][classes][statistical]") {
  const SchemeDescription s = frc_first_r(6, 2, 4);
  const auto o = heterogeneous({1.0, 1.3, 0.8, 2.0, 1.1, 1.6});
  const HeterogeneousDelay delay(scheme_loads(s), o);
  const auto exact = predict_iteration_time(s, delay, PredictionOptions{});
  REQUIRE(exact.method == "numerical");
  PredictionOptions forced;
  forced.operation_limit = 1.0;  // every exact computation is over it
  forced.simulate = fast_path(s, o, 100000);
  const auto simulated = predict_iteration_time(s, delay, forced);
  CHECK(simulated.method == "simulation");
  CHECK(simulated.draws == 100000);
  CHECK_FALSE(simulated.fallback_reason.empty());
  CHECK(simulated.standard_error > 0.0);
  CHECK(std::abs(simulated.mean - exact.mean) < 4.0 * simulated.standard_error);
  // The erased fraction of 3 groups per iteration: binomial bound on its s.e.
  CHECK(std::abs(simulated.q - exact.q) < 4.0 * std::sqrt(exact.q * (1.0 - exact.q) / 100000.0));
  CHECK(std::isnan(simulated.q2));
}

TEST_CASE("theory: 16 distinct workers under FRC first_r are simulated, not integrated",
          "[sim][theory][classes]") {
  const SchemeDescription s = frc_first_r(16, 2, 12);
  std::vector<double> factors;
  for (int i = 0; i < 16; ++i) {
    factors.push_back(1.0 + 0.05 * i);
  }
  const auto o = heterogeneous(factors);
  const HeterogeneousDelay delay(scheme_loads(s), o);
  PredictionOptions options;
  options.simulate = fast_path(s, o, 20000);
  const auto p = predict_iteration_time(s, delay, options);
  CHECK(p.estimated_operations > kExactOperationLimit);
  CHECK(p.method == "simulation");
  CHECK(p.draws == 20000);
  // Equal factors merge into one class: the closed-form-free numerical path is affordable.
  const HeterogeneousDelay same(scheme_loads(s), heterogeneous(std::vector<double>(16, 1.3)));
  const auto q = predict_iteration_time(s, same, options);
  CHECK(q.method == "numerical");
  CHECK(q.estimated_operations < kExactOperationLimit);
}

}  // namespace stragglersim::sim

// The heterogeneous Markov estimator (fit/heterogeneous_markov_fit.cpp): factors and the chain
// recovered.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/markov_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: heterogeneous markov recovers factors and the chain", "[fit][families][heavy]") {
  std::vector<double> factors(12, 1.0);
  for (std::size_t i = 0; i < 4; ++i) {
    factors[i] = 1.6;
  }
  const MarkovDelay::Options m{.shift = 0.5,
                               .rate = 2.0,
                               .slow_shift = 2.0,
                               .slow_rate = 0.5,
                               .to_slow = 0.05,
                               .to_normal = 0.2};
  HeterogeneousMarkovDelay delay(std::vector<double>(12, 1.0), {.markov = m, .factors = factors});
  const auto sample = fit_testing::draw(delay, 1500, 24);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = fit_testing::family(r, "heterogeneous_markov");
  REQUIRE(f.fitted());
  CHECK(f.parameter_count == 6 + 11);
  // Each factor is a ratio of two workers' means of 1500 persistent draws; the ratio's relative
  // s.e. (with the chain's autocorrelation, Var inflated ~4-fold) is about 0.05: within 0.15.
  for (std::size_t i = 0; i < factors.size(); ++i) {
    INFO("worker " << i);
    CHECK(std::abs(f.factors[i] / factors[i] - 1.0) < 0.15);
  }
  fit_testing::check_parameter(f, "to_slow", 0.05);
  fit_testing::check_parameter(f, "to_normal", 0.2);
  // The chain's times share their scale with the factors (fastest fitted worker at 1), so the
  // rates' s.e. (conditional on the factors) do not cover that scale's noise: compare the
  // scale-free mean excess of worker 4 (factor 1) per state, c·(1/λ), within 10%.
  const double c4 = f.factors[4] / f.factors[11];  // worker 11 has the truth's factor 1 too
  CHECK(c4 == Approx(1.0).epsilon(0.1));
  CHECK(f.factors[4] / f.value("rate") == Approx(1.0 / 2.0).epsilon(0.1));
  // The slow shift is profiled (a boundary estimate) and trades with the slow rate: 15%.
  CHECK(f.factors[4] / f.value("slow_rate") == Approx(1.0 / 0.5).epsilon(0.15));
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous_markov");
  CHECK(r.choice.starts_with("heterogeneous_markov: smallest AIC"));
}
}  // namespace stragglersim::sim

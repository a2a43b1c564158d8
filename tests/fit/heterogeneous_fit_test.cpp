// The heterogeneous estimator (fit/heterogeneous_fit.cpp): per-worker factors recovered.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/heterogeneous_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: heterogeneous workers are flagged and their factors recovered", "[fit][heavy]") {
  std::vector<double> factors(20, 1.0);
  for (std::size_t i = 0; i < 20; i += 5) {
    factors[i] = 1.5;
  }
  HeterogeneousDelay delay(std::vector<double>(20, 1.0), {0.7, 1.9, TailScaling::kLoad, factors});
  const auto sample = fit_testing::draw(delay, 1000, 15);
  const DelayFitReport r = fit_delay_models(sample, true);
  CHECK(r.heterogeneity.heterogeneous());
  CHECK(r.heterogeneity.p_value < 1e-12);
  CHECK(r.heterogeneity.degrees_of_freedom == 19);
  const FamilyFit& f = fit_testing::family(r, "heterogeneous");
  REQUIRE(f.fitted());
  // Each factor is a ratio of means of 1000 draws: relative s.e. ≈ (1/λ)/(a + 1/λ)/√1000.
  const double relative_se = (1.0 / 1.9) / (0.7 + 1.0 / 1.9) / std::sqrt(1000.0) * std::sqrt(2.0);
  for (std::size_t i = 0; i < 20; ++i) {
    INFO("worker " << i);
    CHECK(std::abs(f.factors[i] / factors[i] - 1.0) < 4.0 * relative_se + 0.01);
  }
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous");
}
}  // namespace stragglersim::sim

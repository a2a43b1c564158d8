// The bimodal estimator (fit/bimodal_fit.cpp): the mixture recovered by EM.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/bimodal_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: bimodal recovers the mixture by EM and wins by AIC", "[fit][heavy]") {
  BimodalDelay delay(std::vector<double>(20, 1.0), {0.7, 1.9, TailScaling::kLoad, 0.1, 5.0});
  const auto sample = fit_testing::draw(delay, 1000, 13);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = fit_testing::family(r, "bimodal");
  CHECK(std::abs(f.value("shift") - 0.7) < 0.01);
  fit_testing::check_parameter(f, "rate", 1.9);
  fit_testing::check_parameter(f, "slow_probability", 0.1);
  // κ sets where the slow support starts (κa), a boundary estimate: within 1%.
  CHECK(std::abs(f.value("slowdown") / 5.0 - 1.0) < 0.01);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "bimodal");
  CHECK(f.ks.p_value > 0.01);
  CHECK_FALSE(r.heterogeneity.heterogeneous());
}
}  // namespace stragglersim::sim

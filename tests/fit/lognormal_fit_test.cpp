// The lognormal estimator (fit/lognormal_fit.cpp): shift, log_mean and log_sd recovered.

#include <catch2/catch.hpp>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/lognormal_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: lognormal recovers shift log_mean and log_sd", "[fit][families][heavy]") {
  LogNormalDelay delay(std::vector<double>(20, 1.0),
                       {.shift = 0.6, .log_mean = -0.3, .log_sd = 0.5});
  const auto sample = fit_testing::draw(delay, 1000, 21);
  const FamilyFit f = fit_lognormal(fit_testing::pooled(sample));
  REQUIRE(f.fitted());
  CHECK_FALSE(f.degenerate());
  fit_testing::check_parameter(f, "shift", 0.6);
  fit_testing::check_parameter(f, "log_mean", -0.3);
  fit_testing::check_parameter(f, "log_sd", 0.5);
  CHECK(f.parameter_count == 3);
  CHECK(f.ks.p_value > 0.01);
  const DelayFitReport r = fit_delay_models(sample, true);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "lognormal");
}
}  // namespace stragglersim::sim

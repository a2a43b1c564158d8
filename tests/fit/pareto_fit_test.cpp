// The pareto estimator (fit/pareto_fit.cpp): shift, scale and shape recovered within 4 s.e.

#include <catch2/catch.hpp>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/pareto_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: pareto recovers shift scale and shape and wins by AIC", "[fit][heavy]") {
  ParetoDelay delay(std::vector<double>(20, 1.0), {0.7, 1.0, 2.5, TailScaling::kLoad});
  const auto sample = fit_testing::draw(delay, 1000, 12);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = fit_testing::family(r, "pareto");
  fit_testing::check_parameter(f, "shift", 0.7);
  fit_testing::check_parameter(f, "scale", 1.0);
  fit_testing::check_parameter(f, "shape", 2.5);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "pareto");
  CHECK(f.ks.p_value > 0.01);
}
}  // namespace stragglersim::sim

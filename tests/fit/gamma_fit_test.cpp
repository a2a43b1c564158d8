// The gamma estimator (fit/gamma_fit.cpp): shift, shape and scale recovered.

#include <catch2/catch.hpp>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/gamma_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: gamma recovers shift shape and scale", "[fit][families]") {
  GammaDelay delay(std::vector<double>(20, 1.0), {.shift = 0.5, .shape = 2.5, .scale = 0.4});
  const FamilyFit f = fit_gamma(fit_testing::pooled(fit_testing::draw(delay, 1000, 22)));
  fit_testing::check_shape_scale_fit(f, 0.5, 2.5, 0.4);
}
}  // namespace stragglersim::sim

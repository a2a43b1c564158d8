// The weibull estimator (fit/weibull_fit.cpp): shift, shape and scale recovered.

#include <catch2/catch.hpp>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/weibull_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: weibull recovers shift shape and scale", "[fit][families]") {
  WeibullDelay delay(std::vector<double>(20, 1.0), {.shift = 0.8, .shape = 1.8, .scale = 1.2});
  const FamilyFit f = fit_weibull(fit_testing::pooled(fit_testing::draw(delay, 1000, 23)));
  fit_testing::check_shape_scale_fit(f, 0.8, 1.8, 1.2);
}
}  // namespace stragglersim::sim

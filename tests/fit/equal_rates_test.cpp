// The test of equal rates (fit/equal_rates.cpp) against its formula.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "fit/delay_fit.h"

namespace stragglersim::sim {

TEST_CASE("fit: the test of equal rates against its formula", "[fit]") {
  // Two workers, excess over the common minimum 0: ū₁ = 1, ū₂ = 3, ū = 2.
  const std::vector<std::vector<double>> s = {{0.0, 1.0, 2.0, 1.0}, {2.0, 4.0, 3.0, 3.0}};
  const HeterogeneityTest t = test_equal_rates(s);
  CHECK(t.statistic ==
        Approx(2.0 * (8.0 * std::log(2.0) - 4.0 * std::log(1.0) - 4.0 * std::log(3.0))));
  // Batches of 2: worker 1 batch means 0.5, 1.5; worker 2 3, 3 → within = 2·0.5, df 2.
  CHECK(t.dispersion == Approx((2.0 * 0.5 / 2.0) / 4.0));
  CHECK(t.degrees_of_freedom == 1);
}
}  // namespace stragglersim::sim

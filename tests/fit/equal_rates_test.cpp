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

TEST_CASE("fit: equal rates without a ratio rejects exactly when the mean excesses differ",
          "[fit]") {
  // Batches of 2 with equal means in every worker: φ = 0.
  const std::vector<std::vector<double>> differ = {{1.0, 2.0, 2.0, 1.0}, {2.0, 3.0, 3.0, 2.0}};
  const HeterogeneityTest d = test_equal_rates(differ);
  CHECK(d.dispersion == 0.0);
  CHECK(d.statistic > 0.0);
  CHECK(d.p_value == 0.0);
  CHECK(d.heterogeneous());
  const std::vector<std::vector<double>> same = {{1.0, 2.0, 2.0, 1.0}, {2.0, 1.0, 1.0, 2.0}};
  const HeterogeneityTest e = test_equal_rates(same);
  CHECK(e.dispersion == 0.0);
  CHECK(e.statistic == 0.0);
  CHECK(e.p_value == 1.0);
  CHECK_FALSE(e.heterogeneous());
  // Equal batch means whose mean is off by rounding (sevenths): φ is 0, not 1e-31.
  std::vector<std::vector<double>> sevenths(2);
  for (int t = 0; t < 49; ++t) {
    sevenths[0].push_back(1.0 + 0.1 * (t % 7));
    sevenths[1].push_back(1.3 + 0.1 * (t % 7));
  }
  const HeterogeneityTest r = test_equal_rates(sevenths);
  CHECK(r.dispersion == 0.0);
  CHECK(r.heterogeneous());
  // A worker at the shift throughout: Λ = ∞, rejected.
  const std::vector<std::vector<double>> at_shift = {{1.0, 1.0, 1.0, 1.0}, {1.5, 3.0, 2.0, 1.2}};
  const HeterogeneityTest s = test_equal_rates(at_shift);
  CHECK(std::isinf(s.statistic));
  CHECK(s.heterogeneous());
}
}  // namespace stragglersim::sim

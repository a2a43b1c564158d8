// The profile likelihood of the shifted families (fit/profile_likelihood.h): the excesses over a
// shift, the checks before a fit, and the shift search on profiles whose maximum is known.

#include "fit/profile_likelihood.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

namespace stragglersim::sim {

TEST_CASE("fit: the excesses over a shift and their means", "[fit]") {
  const Excess e = excess_over({2.0, 3.0, 5.0}, 1.0);
  REQUIRE(e.log_x.size() == 3);
  CHECK(e.log_x[0] == 0.0);
  CHECK(e.log_x[2] == Approx(std::log(4.0)));
  CHECK(e.mean == Approx(7.0 / 3.0));
  CHECK(e.mean_log == Approx(std::log(2.0)));  // (log 1 + log 2 + log 4) / 3
}

TEST_CASE("fit: the shifted families refuse too few or non-positive times", "[fit]") {
  CHECK(shifted_family_problem({1.0, 1.0, 1.0}) == "needs at least three distinct times");
  CHECK(shifted_family_problem({1.0, 2.0}) == "needs at least three distinct times");
  CHECK(shifted_family_problem({0.0, 1.0, 2.0}) == "needs every time > 0 (the shift is >= 0)");
  CHECK(shifted_family_problem({0.5, 1.0, 2.0}).empty());
}

TEST_CASE("fit: the shift search finds an interior maximum and flags one at its bound", "[fit]") {
  // Minus a profile log L with its maximum at c = 0.6 of [0, 1).
  const std::function<double(double)> inside = [](double c) { return (c - 0.6) * (c - 0.6); };
  const ProfiledShift found = profile_shift(1.0, inside);
  CHECK(found.shift == Approx(0.6).margin(1e-6));
  CHECK_FALSE(found.at_bound);
  // Increasing in c: the best is the grid's end, c = low(1 − 1e-8), a degenerate fit.
  const std::function<double(double)> edge = [](double c) { return -c; };
  const ProfiledShift bound = profile_shift(2.0, edge);
  CHECK(bound.shift == Approx(2.0 * (1.0 - 1e-8)).epsilon(1e-12));
  CHECK(bound.at_bound);
  // The polish moves the estimate to its own maximum within a grid step of the first.
  const std::function<double(double)> polish = [](double c) { return (c - 0.61) * (c - 0.61); };
  CHECK(profile_shift(1.0, inside, &polish).shift == Approx(0.61).margin(1e-6));
}

}  // namespace stragglersim::sim

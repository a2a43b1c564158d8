// The markov estimator (fit/markov_fit.cpp): persistent stragglers recovered by Baum–Welch.

#include <catch2/catch.hpp>
#include <cmath>

#include "fit/delay_fit.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: markov recovers persistent stragglers by baum-welch", "[fit][heavy]") {
  const auto sample = fit_testing::markov_sample(20, 1000, 14);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = fit_testing::family(r, "markov");
  CHECK(std::abs(f.value("shift") - 0.7) < 0.01);
  // b is a boundary estimate like a: within 0.05 s of the truth at this sample size.
  CHECK(std::abs(f.value("slow_shift") - 3.0) < 0.05);
  fit_testing::check_parameter(f, "rate", 1.9);
  fit_testing::check_parameter(f, "slow_rate", 0.5);
  fit_testing::check_parameter(f, "to_slow", 0.05);
  fit_testing::check_parameter(f, "to_normal", 0.2);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "markov");
  // Without iteration order the same times cannot be told from a mixture.
  const DelayFitReport unordered = fit_delay_models(sample, false);
  CHECK_FALSE(fit_testing::family(unordered, "markov").fitted());
  CHECK(fit_testing::family(unordered, "markov").problem ==
        "needs iteration order (an iteration column)");
  // Persistence inflates per-worker means; the batch-means dispersion absorbs it.
  CHECK(r.heterogeneity.dispersion > 2.0);
  CHECK_FALSE(r.heterogeneity.heterogeneous());
}
}  // namespace stragglersim::sim

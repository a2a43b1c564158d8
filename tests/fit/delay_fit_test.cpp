// Model selection (fit/delay_fit.cpp, fit_delay_models): samples refused with a reason, and the
// report of two threads equal to the families fitted one by one. Each family's recovery is in
// tests/fit/<family>_fit_test.cpp.

#include "fit/delay_fit.h"

#include <catch2/catch.hpp>
#include <vector>

#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: degenerate samples are refused with a reason", "[fit]") {
  const std::vector<double> same = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  CHECK(fit_shifted_exponential(same).problem == "needs at least two distinct times");
  CHECK(fit_bimodal(same).problem == "needs at least five distinct times");
  const std::vector<double> zero = {0.0, 1.0, 2.0};
  CHECK(fit_pareto(zero).problem == "needs every time > 0 (the Pareto scale is positive)");
}

TEST_CASE("fit: the report of two threads equals the families fitted one by one", "[fit][heavy]") {
  // 6 workers × 7 000 iterations: beyond the local-search limit (32 768 times), so the search
  // sample, the local sample and the polish all run. fit_delay_models fits the families two at a
  // time; each must be exactly what its own function returns on one thread.
  const auto sample = fit_testing::markov_sample(6, 7000, 41);
  const std::vector<double> all = fit_testing::pooled(sample);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit markov = fit_markov(sample);
  const std::vector<FamilyFit> alone = {fit_shifted_exponential(all),
                                        fit_pareto(all),
                                        fit_lognormal(all),
                                        fit_gamma(all),
                                        fit_weibull(all),
                                        fit_bimodal(all),
                                        markov,
                                        fit_heterogeneous(sample),
                                        fit_heterogeneous_markov(sample, &markov)};
  REQUIRE(r.fits.size() == alone.size());
  for (std::size_t i = 0; i < alone.size(); ++i) {
    INFO(alone[i].family);
    CHECK(r.fits[i].family == alone[i].family);
    CHECK(r.fits[i].log_likelihood == alone[i].log_likelihood);
    CHECK(r.fits[i].ks.statistic == alone[i].ks.statistic);
    REQUIRE(r.fits[i].parameters.size() == alone[i].parameters.size());
    for (std::size_t k = 0; k < alone[i].parameters.size(); ++k) {
      CHECK(r.fits[i].parameters[k].value == alone[i].parameters[k].value);
    }
    CHECK(r.fits[i].factors == alone[i].factors);
  }
  // The chain recovers its parameters through the polish, and the heterogeneous chain, which
  // nests it, fits at least as well.
  fit_testing::check_parameter(markov, "to_slow", 0.05);
  fit_testing::check_parameter(markov, "to_normal", 0.2);
  fit_testing::check_parameter(markov, "rate", 1.9);
  fit_testing::check_parameter(markov, "slow_rate", 0.5);
  CHECK(std::abs(markov.value("slow_shift") - 3.0) < 0.05);
  CHECK(fit_testing::family(r, "heterogeneous_markov").log_likelihood >= markov.log_likelihood);
}
}  // namespace stragglersim::sim

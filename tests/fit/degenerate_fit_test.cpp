// The degenerate-fit rules (fit/degenerate_fit.h): the flag's wording, the probabilities at an
// edge, and a flagged family never chosen by model selection.

#include "fit/degenerate_fit.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fit/delay_fit.h"
#include "sim/delays/heterogeneous_delay.h"
#include "tests/fit/fit_fixtures.h"

namespace stragglersim::sim {

TEST_CASE("fit: the degenerate flag names each edge once, in order", "[fit]") {
  FamilyFit fit;
  fit.family = "markov";
  fit.parameters = {{"to_slow", 5e-7, std::nullopt},
                    {"to_normal", 0.2, std::nullopt},
                    {"slow_probability", 1.0 - 5e-7, std::nullopt},
                    {"other", 1.0 - 2e-6, std::nullopt}};
  CHECK_FALSE(fit.degenerate());
  // Within kProbabilityEdge = 1e-6 of 0 or 1 flags; 2e-6 from 1 and 0.2 do not.
  flag_probabilities(fit, {"to_slow", "to_normal", "slow_probability", "other"});
  CHECK(fit.flag == "degenerate: to_slow at 5e-07; slow_probability at 1");
  add_flag(fit, "shift at the smallest time");
  CHECK(fit.flag ==
        "degenerate: to_slow at 5e-07; slow_probability at 1; shift at the smallest time");
  CHECK(fit.degenerate());
  FamilyFit clean;
  add_flag(clean, "slowdown at 1");
  CHECK(clean.flag == "degenerate: slowdown at 1");
}

TEST_CASE("fit: a rate beyond a million over the data's resolution is a runaway", "[fit]") {
  // The resolution against every pair, independently of the consecutive gaps the code takes.
  const std::vector<double> sorted = {1.0, 1.0, 1.25, 2.0, 2.001, 3.5};
  double smallest = 0.0;
  for (const double a : sorted) {
    for (const double b : sorted) {
      if (b > a && (smallest == 0.0 || b - a < smallest)) {
        smallest = b - a;
      }
    }
  }
  CHECK(time_resolution(sorted) == smallest);
  CHECK(time_resolution(std::vector<double>{2.0, 2.0}) == 0.0);
  FamilyFit fit;
  fit.family = "markov";
  const double limit = kRunawayRate / 0.001;
  fit.parameters = {{"rate", limit, std::nullopt},
                    {"slow_rate", 2.7e254, std::nullopt},
                    {"shape", 1e300, std::nullopt}};
  flag_runaway_rates(fit, 0.001);
  // At the limit is allowed; the shape is no rate.
  CHECK(fit.flag ==
        "degenerate: slow_rate 2.7e+254 runaway (above 1e+06 / the data's "
        "resolution 0.001)");
  FamilyFit nan_rate;
  nan_rate.parameters = {{"rate", std::nan(""), std::nullopt}};
  flag_runaway_rates(nan_rate, 0.5);
  CHECK(nan_rate.degenerate());
  FamilyFit no_resolution;
  no_resolution.parameters = {{"rate", 1e300, std::nullopt}};
  flag_runaway_rates(no_resolution, 0.0);
  CHECK_FALSE(no_resolution.degenerate());
}

TEST_CASE("fit: a point mass fitted by a runaway rate is never chosen", "[fit][families]") {
  // Times of 1.0 and 1.5 alternating: a component collapsed onto each value drives the bimodal
  // rate to 8.7e7 (1/rate far below the 0.5 s between the two values) and its likelihood up
  // without bound; it must not win by AIC.
  std::vector<std::vector<double>> two_values(4);
  for (int t = 0; t < 50; ++t) {
    for (auto& worker : two_values) {
      worker.push_back(t % 2 == 0 ? 1.0 : 1.5);
    }
  }
  const DelayFitReport r = fit_delay_models(two_values, true);
  for (const FamilyFit& f : r.fits) {
    INFO(f.family << ": " << f.flag);
    if (f.fitted() && !f.degenerate()) {
      for (const auto& p : f.parameters) {
        if (p.name == "rate" || p.name == "slow_rate") {
          CHECK(p.value <= kRunawayRate / 0.5);
        }
      }
    }
  }
  const FamilyFit& bimodal = fit_testing::family(r, "bimodal");
  CHECK(bimodal.flag.find("rate") != std::string::npos);
  if (r.best) {
    CHECK_FALSE(r.fits[*r.best].degenerate());
  }
}

TEST_CASE("fit: a markov chain fitted to i.i.d. data is flagged and never chosen",
          "[fit][families][heavy]") {
  // Independent over iterations, but 4 of 15 workers 2.5 times slower: the best chain is frozen
  // (each worker keeps its initial state), its transition probabilities at the 1e-9 clamp.
  std::vector<double> factors(15, 1.0);
  for (std::size_t i = 0; i < 4; ++i) {
    factors[i] = 2.5;
  }
  HeterogeneousDelay delay(std::vector<double>(15, 1.0), {0.7, 1.9, TailScaling::kLoad, factors});
  const auto sample = fit_testing::draw(delay, 400, 25);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = fit_testing::family(r, "markov");
  REQUIRE(f.fitted());
  INFO(f.flag);
  CHECK(f.flag.starts_with("degenerate: to_slow at 1e-09"));
  CHECK(f.degenerate());
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous");
  CHECK_FALSE(r.fits[*r.best].degenerate());
  CHECK(r.choice.find("markov (degenerate)") != std::string::npos);
}
}  // namespace stragglersim::sim

// The degenerate-fit rules (fit/degenerate_fit.h): the flag's wording, the probabilities at an
// edge, and a flagged family never chosen by model selection.

#include "fit/degenerate_fit.h"

#include <catch2/catch.hpp>
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

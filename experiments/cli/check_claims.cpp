// What every `check` row shares: its statistics, and the schemes and configs several concept files
// run (experiments/cli/check_claims.h).

#include "experiments/cli/check_claims.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/fastpath/delay_only.h"

namespace stragglersim::experiments::check {

CheckRow two_sided(std::string claim, double theory, double sim, double se) {
  const double tol = 4.0 * se;
  return {std::move(claim), theory, sim, tol, std::abs(sim - theory) <= tol};
}

std::shared_ptr<const codes::GradientCode> frc_or_uncoded(int n, int d) {
  if (d == 1) {
    return std::make_shared<codes::UncodedCode>(n);
  }
  return std::make_shared<codes::FractionalRepetitionCode>(n, d);
}

Mean simulate_time(const std::shared_ptr<const codes::GradientCode>& code,
                   const std::shared_ptr<const sim::StoppingRule>& rule,
                   sim::TailScaling tail,
                   std::uint64_t iterations,
                   std::uint64_t seed) {
  sim::DelayOnlySimulator s(
      std::make_unique<sim::ShiftedExponentialDelay>(
          code->loads(),
          sim::ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = tail}),
      rule,
      code,
      sim::StragglerPolicy::kCancel,
      seed);
  Mean m;
  s.run(iterations, [&](const sim::DelayOnlyIteration& it) { m.add(it.iteration_time); });
  return m;
}

nlohmann::json convergence_config(int rows, int features, double l2, int n, int iterations) {
  return {{"name", "check"},
          {"seed", 3},
          {"workers", n},
          {"data",
           {{"source", "synthetic"},
            {"generator", "linear_regression"},
            {"rows", rows},
            {"features", features},
            {"condition", 1.0},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "least_squares"}, {"l2", l2}}},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}}};
}

}  // namespace stragglersim::experiments::check

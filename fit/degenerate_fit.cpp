#include "fit/degenerate_fit.h"

#include <fmt/format.h>

namespace stragglersim::sim {

/// Appends `why` to the fit's degeneracy flag ("degenerate: a; b").
void add_flag(FamilyFit& fit, const std::string& why) {
  fit.flag += (fit.flag.empty() ? "degenerate: " : "; ") + why;
}

/// Flags each named parameter (a probability) within 1e-6 of 0 or 1.
void flag_probabilities(FamilyFit& fit, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const double p = fit.value(name);
    if (p < kProbabilityEdge || p > 1.0 - kProbabilityEdge) {
      add_flag(fit, fmt::format("{} at {:.3g}", name, p));
    }
  }
}

}  // namespace stragglersim::sim

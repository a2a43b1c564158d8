#include "fit/degenerate_fit.h"

#include <fmt/format.h>

#include <cmath>

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

double time_resolution(std::span<const double> sorted) {
  double resolution = 0.0;
  for (std::size_t k = 1; k < sorted.size(); ++k) {
    const double gap = sorted[k] - sorted[k - 1];
    if (gap > 0.0 && (resolution == 0.0 || gap < resolution)) {
      resolution = gap;
    }
  }
  return resolution;
}

void flag_runaway_rates(FamilyFit& fit, double resolution) {
  if (!fit.fitted() || !(resolution > 0.0)) {
    return;
  }
  for (const auto& p : fit.parameters) {
    if ((p.name == "rate" || p.name == "slow_rate") && !(p.value <= kRunawayRate / resolution)) {
      add_flag(fit,
               fmt::format("{} {:.3g} runaway (above {:g} / the data's resolution {:.3g})",
                           p.name,
                           p.value,
                           kRunawayRate,
                           resolution));
    }
  }
}

}  // namespace stragglersim::sim

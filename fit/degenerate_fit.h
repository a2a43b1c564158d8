#pragma once
// The degenerate-fit rules of the delay-family estimators (fit/delay_fit.h, FamilyFit::flag): a
// parameter at an edge of its range flags the fit, and model selection never chooses a flagged
// family. Each estimator names its own edges (a shift or scale at its search bound, a shape at
// its bracket, a slowdown of 1); the rules shared by all are here.

#include <initializer_list>
#include <string>

#include "fit/delay_fit.h"

namespace stragglersim::sim {

/// A fitted probability this close to 0 or 1 flags the fit as degenerate.
inline constexpr double kProbabilityEdge = 1e-6;

/// Appends `why` to the fit's degeneracy flag ("degenerate: a; b").
void add_flag(FamilyFit& fit, const std::string& why);

/// Flags each named parameter (a probability) within kProbabilityEdge of 0 or 1.
void flag_probabilities(FamilyFit& fit, std::initializer_list<const char*> names);

}  // namespace stragglersim::sim

#pragma once
// The degenerate-fit rules of the delay-family estimators (fit/delay_fit.h, FamilyFit::flag): a
// parameter at an edge of its range flags the fit, and model selection never chooses a flagged
// family. Each estimator names its own edges (a shift or scale at its search bound, a shape at
// its bracket, a slowdown of 1); the rules shared by all are here.

#include <initializer_list>
#include <span>
#include <string>

#include "fit/delay_fit.h"

namespace stragglersim::sim {

/// A fitted probability this close to 0 or 1 flags the fit as degenerate.
inline constexpr double kProbabilityEdge = 1e-6;

/// A fitted rate above this multiple of 1/resolution (the resolution: the smallest gap between
/// two distinct times of the data) flags the fit as degenerate: its exponential's mean is a
/// millionth of any difference the data can show, so the component has collapsed onto a point
/// mass (times that repeat exactly), where the likelihood grows without bound; a rate fitted to
/// real spread is within a few orders of magnitude of 1/resolution or below it.
inline constexpr double kRunawayRate = 1e6;

/// Appends `why` to the fit's degeneracy flag ("degenerate: a; b").
void add_flag(FamilyFit& fit, const std::string& why);

/// The smallest positive difference between consecutive times of `sorted` (increasing); 0 when
/// there are no two distinct times.
double time_resolution(std::span<const double> sorted);

/// Flags each rate of a fitted family (`rate`, `slow_rate`) above kRunawayRate / `resolution`
/// ("slow_rate 2.7e+254 runaway (above 1e6 / the data's resolution 0.001)"); nothing when
/// `resolution` is 0.
void flag_runaway_rates(FamilyFit& fit, double resolution);

/// Flags each named parameter (a probability) within kProbabilityEdge of 0 or 1.
void flag_probabilities(FamilyFit& fit, std::initializer_list<const char*> names);

}  // namespace stragglersim::sim

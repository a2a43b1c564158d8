#pragma once
// The heterogeneous Markov family's estimator in its two steps (fit/delay_fit.h,
// fit_heterogeneous_markov): the median-scaled start, whose chain model selection
// (fit/delay_fit.cpp) fits beside the other families, and the alternation from it.

#include <string>
#include <vector>

#include "fit/delay_fit.h"

namespace stragglersim::sim {

/// The workers' times divided by their median factors c_i = median_i / min_j median_j (medians,
/// not means: a worker's mean moves with its number of slow spells), or why they cannot be.
struct MedianScaled {
  std::vector<double> factors;
  std::vector<std::vector<double>> scaled;
  std::string problem;
};

[[nodiscard]] MedianScaled median_scaled(const std::vector<std::vector<double>>& sequences);

/// The heterogeneous Markov fit from its two starts: `fit`, the chain fitted to the times
/// scaled by the median `factors`, and `unscaled`, the markov family's fit (factors 1).
[[nodiscard]] FamilyFit heterogeneous_markov_from(const std::vector<std::vector<double>>& sequences,
                                                  std::vector<double> factors,
                                                  FamilyFit fit,
                                                  const FamilyFit& unscaled);

}  // namespace stragglersim::sim

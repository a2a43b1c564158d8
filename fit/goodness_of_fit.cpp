#include "fit/goodness_of_fit.h"

#include <algorithm>
#include <boost/math/constants/constants.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

double kolmogorov_tail(double x) {
  if (x <= 0.0) {
    return 1.0;
  }
  constexpr double kTerm = 1e-17;
  if (x >= 1.18) {
    double sum = 0.0;
    double sign = 1.0;
    for (int k = 1; k < 100; ++k) {
      const double term = std::exp(-2.0 * k * k * x * x);
      sum += sign * term;
      sign = -sign;
      if (term < kTerm) {
        break;
      }
    }
    return std::clamp(2.0 * sum, 0.0, 1.0);
  }
  const double pi = boost::math::constants::pi<double>();
  double sum = 0.0;
  for (int k = 1; k < 100; ++k) {
    const double odd = 2.0 * k - 1.0;
    const double term = std::exp(-odd * odd * pi * pi / (8.0 * x * x));
    sum += term;
    if (term < kTerm * sum || term == 0.0) {
      break;
    }
  }
  return std::clamp(1.0 - std::sqrt(2.0 * pi) / x * sum, 0.0, 1.0);
}

KolmogorovSmirnov kolmogorov_smirnov(std::span<const double> sorted,
                                     const std::function<double(double)>& cdf) {
  STRAGGLERSIM_ASSERT(!sorted.empty(), "the Kolmogorov-Smirnov test needs a sample");
  const auto n = static_cast<double>(sorted.size());
  double d = 0.0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double f = cdf(sorted[i]);
    const auto below = static_cast<double>(i) / n;
    const auto above = static_cast<double>(i + 1) / n;
    d = std::max({d, f - below, above - f});
  }
  const double root = std::sqrt(n);
  return {d, kolmogorov_tail((root + 0.12 + 0.11 / root) * d)};
}

}  // namespace stragglersim::sim

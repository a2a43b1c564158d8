// The gamma family's estimator (fit/delay_fit.h): T = c + Y, Y gamma (k, θ), the shape by
// Newton at each shift c and c by the profile search of fit/profile_likelihood.h.

#include <Eigen/Core>
#include <algorithm>
#include <boost/math/distributions/gamma.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>

#include "fit/delay_fit.h"
#include "fit/profile_likelihood.h"
#include "models/base/log_gamma.h"

namespace stragglersim::sim {
namespace {

/// Gamma MLE of (k, θ) at shift c: log k − ψ(k) = log mean − mean log (Newton from the
/// Minka/Thom start, in log k), θ = mean / k; log L = n((k − 1) mean log − k − log Γ(k) − k log θ).
AtShift gamma_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  const double s = std::log(e.mean) - e.mean_log;
  if (!(s > 0.0)) {
    return {kInf, 0.0, -kInf};
  }
  double k = (3.0 - s + std::sqrt((s - 3.0) * (s - 3.0) + 24.0 * s)) / (12.0 * s);
  for (int i = 0; i < 50; ++i) {
    const double g = std::log(k) - boost::math::digamma(k) - s;
    const double dg = 1.0 / k - boost::math::trigamma(k);
    const double next = std::max(k - g / dg, 0.5 * k);
    if (std::abs(next - k) <= 1e-14 * k) {
      k = next;
      break;
    }
    k = next;
  }
  const auto n = static_cast<double>(sorted.size());
  const double theta = e.mean / k;
  return {k, theta, n * ((k - 1.0) * e.mean_log - k - models::log_gamma(k) - k * std::log(theta))};
}

}  // namespace

FamilyFit fit_gamma(std::span<const double> times) {
  return fit_profiled(
      {"gamma", {"shape", "scale"}},
      times,
      [](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          sum += (x(1) - 1.0) * std::log(t - x(0)) - (t - x(0)) / x(2);
        }
        const auto n = static_cast<double>(sorted.size());
        return sum - n * (models::log_gamma(x(1)) + x(1) * std::log(x(2)));
      },
      gamma_at,
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::gamma_distribution<double>(x(1), x(2)), y);
      });
}

}  // namespace stragglersim::sim

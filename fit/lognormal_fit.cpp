// The lognormal family's estimator (fit/delay_fit.h): T = c + Y, Y log-normal (μ, σ), the MLE
// in closed form at each shift c and c by the profile search of fit/profile_likelihood.h.

#include <Eigen/Core>
#include <boost/math/constants/constants.hpp>
#include <boost/math/distributions/lognormal.hpp>
#include <cmath>

#include "fit/delay_fit.h"
#include "fit/profile_likelihood.h"

namespace stragglersim::sim {
namespace {

/// Log-normal MLE of (μ, σ) at shift c: the mean and (biased) sd of log(t − c); log L =
/// −Σ log x − n log σ − n log √(2π) − n/2.
AtShift lognormal_at(const std::vector<double>& sorted, double c) {
  const Excess e = excess_over(sorted, c);
  double ss = 0.0;
  for (const double z : e.log_x) {
    ss += (z - e.mean_log) * (z - e.mean_log);
  }
  const auto n = static_cast<double>(sorted.size());
  const double sd = std::sqrt(ss / n);
  const double half_log_2pi = 0.5 * std::log(2.0 * boost::math::constants::pi<double>());
  return {e.mean_log, sd, -n * (e.mean_log + std::log(sd) + half_log_2pi + 0.5)};
}

}  // namespace

FamilyFit fit_lognormal(std::span<const double> times) {
  const double half_log_2pi = 0.5 * std::log(2.0 * boost::math::constants::pi<double>());
  return fit_profiled(
      {"lognormal", {"log_mean", "log_sd"}},
      times,
      [&](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          const double z = std::log(t - x(0));
          sum += -z - std::log(x(2)) - half_log_2pi - (z - x(1)) * (z - x(1)) / (2.0 * x(2) * x(2));
        }
        return sum;
      },
      lognormal_at,
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::lognormal_distribution<double>(x(1), x(2)), y);
      });
}

}  // namespace stragglersim::sim

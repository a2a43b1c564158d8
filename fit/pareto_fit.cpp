// The pareto family's estimator (fit/delay_fit.h): T = c + Y, Y ~ Pareto(x_m, α), the shape in
// closed form at each shift c and c by the profile search of fit/profile_likelihood.h.

#include <fmt/format.h>

#include <Eigen/Core>
#include <boost/math/distributions/pareto.hpp>
#include <cmath>

#include "fit/degenerate_fit.h"
#include "fit/delay_fit.h"
#include "fit/fit_support.h"
#include "fit/profile_likelihood.h"

namespace stragglersim::sim {

FamilyFit fit_pareto(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 3 || sorted.front() == sorted.back()) {
    return unfitted("pareto", "needs at least three distinct times");
  }
  if (sorted.front() <= 0.0) {
    return unfitted("pareto", "needs every time > 0 (the Pareto scale is positive)");
  }
  const auto n = static_cast<double>(sorted.size());
  const double low = sorted.front();
  // Full log L in (shift c, shape α) with scale x_m = min t − c (its maximum in x_m).
  auto ll = [&](const Eigen::VectorXd& x) {
    double sum_log = 0.0;
    for (const double t : sorted) {
      sum_log += std::log(t - x(0));
    }
    return n * std::log(x(1)) + n * x(1) * std::log(low - x(0)) - (x(1) + 1.0) * sum_log;
  };
  // At shift c the shape's MLE is α = n / Σ log((t − c)/(min t − c)), and log L in closed form
  // from the one sum Σ log(t − c).
  struct Profile {
    double shape, log_likelihood;
  };
  auto profile_at = [&](const std::vector<double>& data, double c) {
    const auto m = static_cast<double>(data.size());
    double sum_log = 0.0;
    for (const double t : data) {
      sum_log += std::log(t - c);
    }
    const double log_scale = std::log(low - c);
    const double shape = m / (sum_log - m * log_scale);
    return Profile{shape, m * std::log(shape) + m * shape * log_scale - (shape + 1.0) * sum_log};
  };
  auto shape_at = [&](double c) { return profile_at(sorted, c).shape; };
  const ProfiledShift profiled =
      profile_shift_over(sorted, [&](const std::vector<double>& data, double c) {
        return profile_at(data, c).log_likelihood;
      });
  const double c = profiled.shift;
  Eigen::VectorXd x(2);
  x << c, shape_at(c);
  const auto se = standard_errors(ll, x);
  FamilyFit fit;
  fit.family = "pareto";
  fit.parameters = {{"shift", c, se[0]}, {"scale", low - c, se[0]}, {"shape", x(1), se[1]}};
  fit.parameter_count = 3;
  if (profiled.at_bound) {
    add_flag(fit, fmt::format("scale at {:.3g} (the search bound 1e-8 min t)", low - c));
  }
  const boost::math::pareto_distribution<double> pareto(low - c, x(1));
  finish(fit, ll(x), sorted, [&](double t) { return t <= low ? 0.0 : cdf(pareto, t - c); });
  return fit;
}

}  // namespace stragglersim::sim

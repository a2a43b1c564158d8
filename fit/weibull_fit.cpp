// The weibull family's estimator (fit/delay_fit.h): T = c + Y, Y Weibull (k, λ), the shape by
// Newton or TOMS 748 at each shift c and c by the profile search of fit/profile_likelihood.h.

#include <fmt/format.h>

#include <Eigen/Core>
#include <array>
#include <boost/math/distributions/weibull.hpp>
#include <boost/math/tools/roots.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fit/degenerate_fit.h"
#include "fit/delay_fit.h"
#include "fit/profile_likelihood.h"

namespace stragglersim::sim {
namespace {

/// The Weibull shape equation g(k) = Σp·l / Σp − 1/k − mean l = 0 (p = e^{kl}, l = log(x / max x))
/// with its derivative g′(k) = var_p(l) + 1/k² > 0, from one pass.
std::array<double, 2> weibull_equation(const Excess& e, double k) {
  const double log_top = e.log_x.back();
  double p_sum = 0.0;
  double pl_sum = 0.0;
  double pll_sum = 0.0;
  for (const double z : e.log_x) {
    const double l = z - log_top;
    const double p = std::exp(k * l);
    p_sum += p;
    pl_sum += p * l;
    pll_sum += p * l * l;
  }
  const double mean_l = pl_sum / p_sum;
  return {mean_l - 1.0 / k - (e.mean_log - log_top),
          pll_sum / p_sum - mean_l * mean_l + 1.0 / (k * k)};
}

/// Weibull MLE of (k, λ) at shift c: g(k) = 0 (increasing in k, bracketed in [1e-3, 1e3]; times
/// scaled by their maximum first), λ = (mean x^k)^{1/k}; log L = n(log k − k log λ − 1) +
/// (k − 1)Σ log x. `hint` (the shape at the previous shift, NaN for none) starts Newton's
/// method, a few passes; without one, or when Newton leaves the bracket, TOMS 748 on it.
AtShift weibull_at(const std::vector<double>& sorted, double c, double& hint) {
  const Excess e = excess_over(sorted, c);
  const double log_top = e.log_x.back();
  constexpr double kLow = 1e-3;
  constexpr double kHigh = 1e3;
  double k = std::isnan(hint) ? kInf : hint;
  for (int i = 0; i < 30 && std::isfinite(k); ++i) {
    const auto [g, dg] = weibull_equation(e, k);
    const double next = k - g / dg;
    if (!(next > kLow && next < kHigh)) {
      k = kInf;
    } else if (std::abs(next - k) <= 1e-7 * k) {
      k = next;  // quadratic convergence: the next step would be ~1e-14 k
      break;
    } else {
      k = next;
    }
  }
  if (!std::isfinite(k)) {
    const auto g = [&](double v) { return weibull_equation(e, v)[0]; };
    k = g(kLow) >= 0.0 ? kLow : kHigh;
    if (g(kLow) < 0.0 && g(kHigh) > 0.0) {
      std::uintmax_t its = 200;
      const auto r = boost::math::tools::toms748_solve(
          g, kLow, kHigh, boost::math::tools::eps_tolerance<double>(50), its);
      k = 0.5 * (r.first + r.second);
    }
  }
  hint = k;
  double mean_power = 0.0;
  for (const double z : e.log_x) {
    mean_power += std::exp(k * (z - log_top));
  }
  mean_power /= static_cast<double>(e.log_x.size());
  const auto n = static_cast<double>(sorted.size());
  const double log_scale = log_top + std::log(mean_power) / k;
  return {
      k, std::exp(log_scale), n * (std::log(k) - k * log_scale - 1.0) + (k - 1.0) * n * e.mean_log};
}

}  // namespace

FamilyFit fit_weibull(std::span<const double> times) {
  FamilyFit fit = fit_profiled(
      {"weibull", {"shape", "scale"}},
      times,
      [](const std::vector<double>& sorted, const Eigen::VectorXd& x) {
        double sum = 0.0;
        for (const double t : sorted) {
          const double log_z = std::log((t - x(0)) / x(2));
          sum += (x(1) - 1.0) * log_z - std::exp(x(1) * log_z);
        }
        const auto n = static_cast<double>(sorted.size());
        return sum + n * (std::log(x(1)) - std::log(x(2)));
      },
      [hint = std::numeric_limits<double>::quiet_NaN()](const std::vector<double>& sorted,
                                                        double c) mutable {
        return weibull_at(sorted, c, hint);
      },
      [](const Eigen::Vector3d& x, double y) {
        return cdf(boost::math::weibull_distribution<double>(x(1), x(2)), y);
      });
  if (fit.fitted() && (fit.value("shape") <= 1.001e-3 || fit.value("shape") >= 0.999e3)) {
    add_flag(fit, fmt::format("shape at {:.3g} (the search bound)", fit.value("shape")));
  }
  return fit;
}

}  // namespace stragglersim::sim

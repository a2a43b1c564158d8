// The shifted exponential family's estimator (fit/delay_fit.h): â = min t, λ̂ = n / Σ(t − â).

#include <Eigen/Core>
#include <cmath>
#include <numeric>

#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {

FamilyFit fit_shifted_exponential(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 2 || sorted.front() == sorted.back()) {
    return unfitted("shifted_exponential", "needs at least two distinct times");
  }
  const auto n = static_cast<double>(sorted.size());
  const double shift = sorted.front();
  const double excess = std::accumulate(sorted.begin(), sorted.end(), 0.0) - n * shift;
  const double rate = n / excess;
  auto ll = [&](const Eigen::VectorXd& x) { return n * std::log(x(0)) - x(0) * excess; };
  const auto se = standard_errors(ll, Eigen::VectorXd::Constant(1, rate));
  FamilyFit fit;
  fit.family = "shifted_exponential";
  fit.parameters = {{"shift", shift, std::nullopt}, {"rate", rate, se[0]}};
  fit.parameter_count = 2;
  finish(fit, ll(Eigen::VectorXd::Constant(1, rate)), sorted, [&](double t) {
    return shifted_exponential_cdf(shift, rate, t);
  });
  return fit;
}

}  // namespace stragglersim::sim

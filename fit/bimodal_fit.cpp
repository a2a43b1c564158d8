// The bimodal family's estimator (fit/delay_fit.h): â = min t, (λ, π) by EM and κ by the
// profile search of fit/bimodal_em.h, on a search sample and polished on every time.

#include <Eigen/Core>
#include <tuple>

#include "fit/bimodal_em.h"
#include "fit/degenerate_fit.h"
#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {

FamilyFit fit_bimodal(std::span<const double> times) {
  const std::vector<double> sorted = sorted_copy(times);
  if (sorted.size() < 5 || sorted.front() == sorted.back()) {
    return unfitted("bimodal", "needs at least five distinct times");
  }
  const double shift = sorted.front();
  const std::vector<double> sample = search_sample(sorted);
  const bool local = sorted.size() <= kLocalSearchLimit;
  const std::vector<double>& grid = sample.size() < sorted.size() ? sample : sorted;
  Bimodal best{};
  double best_ll = 0.0;
  int best_iterations = 0;
  std::tie(best, best_ll, best_iterations) =
      search_bimodal(grid, local ? sorted : search_sample(sorted, kLocalSearchLimit));
  if (!local) {
    std::tie(best, best_ll, best_iterations) = polish_bimodal(best, sorted);
  }
  // κ fixes where the slow component's support starts (κa): a boundary estimate like a, so
  // the information is taken over (λ, π) only.
  auto ll = [&](const Eigen::VectorXd& x) {
    return bimodal_log_likelihood({shift, x(0), x(1), best.slowdown}, sorted);
  };
  Eigen::VectorXd x(2);
  x << best.rate, best.slow_probability;
  const auto se = standard_errors(ll, x);
  FamilyFit fit;
  fit.family = "bimodal";
  fit.parameters = {{"shift", shift, std::nullopt},
                    {"rate", best.rate, se[0]},
                    {"slow_probability", best.slow_probability, se[1]},
                    {"slowdown", best.slowdown, std::nullopt}};
  fit.parameter_count = 4;
  fit.iterations = best_iterations;
  flag_probabilities(fit, {"slow_probability"});
  if (best.slowdown <= 1.0 + kProbabilityEdge) {
    add_flag(fit, "slowdown at 1 (the two components coincide)");
  }
  finish(fit, best_ll, sorted, [&](double t) {
    return (1.0 - best.slow_probability) * shifted_exponential_cdf(shift, best.rate, t) +
           best.slow_probability * shifted_exponential_cdf(shift, best.rate, t / best.slowdown);
  });
  return fit;
}

}  // namespace stragglersim::sim

// The test of equal rates across workers (fit/delay_fit.h, test_equal_rates): a likelihood ratio
// corrected by the batch-means dispersion.

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <numeric>

#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {
namespace {

/// Batch means of one worker's times (⌊√n⌋ batches of ⌊√n⌋): (batch size · Σ (batch mean −
/// their mean)², batches − 1), the worker's part of the long-run variance and its degrees of
/// freedom; (0, 0) with fewer than two batches.
std::pair<double, double> batch_means_spread(const std::vector<double>& s) {
  const auto n = static_cast<double>(s.size());
  const auto size = static_cast<std::size_t>(std::max(1.0, std::floor(std::sqrt(n))));
  const std::size_t batches = s.size() / size;
  if (batches < 2) {
    return {0.0, 0.0};
  }
  std::vector<double> batch(batches, 0.0);
  for (std::size_t b = 0; b < batches; ++b) {
    batch[b] = std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(b * size),
                               s.begin() + static_cast<std::ptrdiff_t>((b + 1) * size),
                               0.0) /
               static_cast<double>(size);
  }
  const double mean =
      std::accumulate(batch.begin(), batch.end(), 0.0) / static_cast<double>(batches);
  double ss = 0.0;
  for (const double v : batch) {
    ss += (v - mean) * (v - mean);
  }
  return {static_cast<double>(size) * ss, static_cast<double>(batches) - 1.0};
}

}  // namespace

HeterogeneityTest test_equal_rates(const std::vector<std::vector<double>>& sequences,
                                   double level) {
  HeterogeneityTest test;
  test.level = level;
  double shift = kInf;
  double total = 0.0;
  for (const auto& s : sequences) {
    for (const double t : s) {
      shift = std::min(shift, t);
    }
    total += static_cast<double>(s.size());
  }
  double excess = 0.0;
  double within = 0.0;  // Σ (batches − 1)·(long-run variance)
  double within_df = 0.0;
  for (const auto& s : sequences) {
    const double sum = std::accumulate(s.begin(), s.end(), 0.0);
    const auto n = static_cast<double>(s.size());
    test.mean_excess.push_back(n > 0.0 ? sum / n - shift : 0.0);
    excess += sum - n * shift;
    const auto [spread, df] = batch_means_spread(s);
    within += spread;
    within_df += df;
  }
  const double mean_excess = excess / total;
  if (sequences.size() < 2 || !(mean_excess > 0.0) || within_df < 1.0) {
    return test;
  }
  test.degrees_of_freedom = static_cast<int>(sequences.size()) - 1;
  test.dispersion = within / within_df / (mean_excess * mean_excess);
  // φ is relative (1 for exponential excess): below 1e-12 the batch means are equal but for
  // rounding (the mean of equal numbers is not always exactly them), so there is no spread.
  if (test.dispersion < 1e-12) {
    test.dispersion = 0.0;
  }
  double statistic = total * std::log(mean_excess);
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    statistic -= static_cast<double>(sequences[i].size()) * std::log(test.mean_excess[i]);
  }
  test.statistic = 2.0 * statistic;
  if (!std::isfinite(test.dispersion) || std::isnan(test.statistic)) {
    // Times near 1e308 overflow the variances: no test (printed as not tested, never as nan).
    test.degrees_of_freedom = 0;
    test.statistic = 0.0;
    test.dispersion = 1.0;
    return test;
  }
  if (!std::isfinite(test.statistic) || test.dispersion <= 0.0) {
    // No ratio to refer to χ²: a worker at the shift throughout (Λ = ∞), or batch means that
    // never vary (φ = 0). Rejected exactly when the workers' mean excesses differ (Λ > 0).
    test.p_value = test.statistic > 0.0 ? 0.0 : 1.0;
    return test;
  }
  const boost::math::chi_squared_distribution<double> chi2(test.degrees_of_freedom);
  test.p_value = cdf(complement(chi2, std::max(0.0, test.statistic / test.dispersion)));
  return test;
}

}  // namespace stragglersim::sim

// The heterogeneous family's estimator (fit/delay_fit.h): T_i = c_i(a + X/λ) by alternating
// maximisation over the factors c_i and the pooled (a, λ).

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {
namespace {

/// Each worker's mean and fastest time, and the count of all times.
struct WorkerSummaries {
  std::vector<double> means;
  std::vector<double> minima;
  double total = 0.0;
};

WorkerSummaries worker_summaries(const std::vector<std::vector<double>>& sequences) {
  WorkerSummaries w;
  for (const auto& s : sequences) {
    w.means.push_back(std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size()));
    w.minima.push_back(*std::min_element(s.begin(), s.end()));
    w.total += static_cast<double>(s.size());
  }
  return w;
}

}  // namespace

FamilyFit fit_heterogeneous(const std::vector<std::vector<double>>& sequences) {
  if (sequences.size() < 2) {
    return unfitted("heterogeneous", "needs at least two workers");
  }
  if (std::any_of(sequences.begin(), sequences.end(), [](const auto& s) { return s.empty(); })) {
    return unfitted("heterogeneous", "needs times of every worker");
  }
  const WorkerSummaries w = worker_summaries(sequences);
  const double total = w.total;
  if (*std::min_element(w.means.begin(), w.means.end()) <= 0.0) {
    return unfitted("heterogeneous", "needs a positive mean time for every worker");
  }
  std::vector<double> factors = w.means;
  double shift = 0.0;
  double rate = 1.0;
  double previous = -kInf;
  double ll = -kInf;
  int iteration = 0;
  for (; iteration < 500; ++iteration) {
    const double smallest = *std::min_element(factors.begin(), factors.end());
    double log_factors = 0.0;
    double sum_z = 0.0;
    shift = kInf;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      factors[i] /= smallest;
      shift = std::min(shift, w.minima[i] / factors[i]);
      sum_z += w.means[i] * static_cast<double>(sequences[i].size()) / factors[i];
      log_factors += static_cast<double>(sequences[i].size()) * std::log(factors[i]);
    }
    if (sum_z - total * shift <= 0.0) {
      return unfitted("heterogeneous", "needs at least two distinct times per worker");
    }
    rate = total / (sum_z - total * shift);
    ll = total * std::log(rate) - total - log_factors;
    if (std::abs(ll - previous) <= kTolerance * std::abs(ll)) {
      break;
    }
    previous = ll;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      factors[i] =
          shift > 0.0 ? std::min(rate * w.means[i], w.minima[i] / shift) : rate * w.means[i];
    }
  }
  FamilyFit fit;
  fit.family = "heterogeneous";
  fit.parameters = {{"shift", shift, std::nullopt}, {"rate", rate, rate / std::sqrt(total)}};
  fit.factors = factors;
  fit.parameter_count = 2 + static_cast<int>(sequences.size()) - 1;
  fit.iterations = iteration;
  const std::vector<double> pooled = sorted_pool(sequences);
  finish(fit, ll, pooled, [&](double t) {
    double f = 0.0;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      f += static_cast<double>(sequences[i].size()) *
           shifted_exponential_cdf(shift, rate, t / factors[i]);
    }
    return f / total;
  });
  return fit;
}

}  // namespace stragglersim::sim

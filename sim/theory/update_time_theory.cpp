#include "sim/theory/update_time_theory.h"

#include <algorithm>
#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

/// E[X_{K:n}] = Δ + (H_n − H_{n−K})/μ.
double order_statistic_mean(int n, int k, double shift, double rate) {
  double h = 0.0;
  for (int i = n - k + 1; i <= n; ++i) {
    h += 1.0 / static_cast<double>(i);
  }
  return shift + h / rate;
}

/// P(N(t) < K): N(t) = Σ_i N_i(t), each N_i a renewal count of Δ + Exp(μ) intervals from 0
/// (distribution truncated at K, convolved n times).
double fewer_than_k(int n, int k, double shift, double rate, double t) {
  const auto kk = static_cast<std::size_t>(k);
  std::vector<double> at_least(kk + 1, 0.0);  // P(N_i(t) ≥ c), c = 0 … K
  at_least[0] = 1.0;
  for (std::size_t c = 1; c <= kk; ++c) {
    const double span = t - static_cast<double>(c) * shift;
    at_least[c] = span > 0.0 ? boost::math::gamma_p(static_cast<double>(c), rate * span) : 0.0;
  }
  std::vector<double> one(kk, 0.0);  // P(N_i = c), c < K
  for (std::size_t c = 0; c < kk; ++c) {
    one[c] = at_least[c] - at_least[c + 1];
  }
  std::vector<double> sum(kk, 0.0);  // P(Σ N_i = s), s < K, over the workers so far
  sum[0] = 1.0;
  std::vector<double> next(kk);
  for (int i = 0; i < n; ++i) {
    std::fill(next.begin(), next.end(), 0.0);
    for (std::size_t s = 0; s < kk; ++s) {
      for (std::size_t c = 0; s + c < kk; ++c) {
        next[s + c] += sum[s] * one[c];
      }
    }
    sum.swap(next);
  }
  double total = 0.0;
  for (const double p : sum) {
    total += p;
  }
  return std::clamp(total, 0.0, 1.0);
}

/// ∫₀^∞ P(N(t) < K) dt, split at the kinks cΔ; beyond KΔ + (the 1 − 10⁻¹⁷ quantile of a
/// Gamma(K, μ)) one worker alone has pushed K times, so the rest is below 10⁻¹⁷.
double batch_sync_mean(int n, int k, double shift, double rate) {
  const auto f = [&](double t) { return fewer_than_k(n, k, shift, rate, t); };
  const double end = static_cast<double>(k) * shift +
                     boost::math::gamma_q_inv(static_cast<double>(k), 1e-17) / rate;
  std::vector<double> cuts{0.0};
  for (int c = 1; c <= k; ++c) {
    cuts.push_back(static_cast<double>(c) * shift);
  }
  cuts.push_back(end);
  double total = 0.0;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    if (cuts[s + 1] > cuts[s]) {
      total += boost::math::quadrature::gauss_kronrod<double, 61>::integrate(
          f, cuts[s], cuts[s + 1], 15, 1e-12);
    }
  }
  return total;
}

}  // namespace

UpdateTimePrediction predict_update_time(
    UpdateDiscipline discipline, int workers, int k, double shift, double rate) {
  STRAGGLERSIM_ASSERT(workers >= 1 && k >= 1 && k <= workers, "K outside 1 ... workers");
  STRAGGLERSIM_ASSERT(shift >= 0.0 && rate > 0.0, "delays need shift >= 0 and rate > 0");
  const double n = workers;
  const double kk = k;
  switch (discipline) {
    case UpdateDiscipline::kKSync:
      return {order_statistic_mean(workers, k, shift, rate), false, "E[X_K:n]"};
    case UpdateDiscipline::kKBatchSync:
      if (shift == 0.0) {
        return {kk / (n * rate), false, "K/(n mu)"};
      }
      return {batch_sync_mean(workers, k, shift, rate), false, "integral of P(N(t) < K)"};
    case UpdateDiscipline::kKAsync:
      return {order_statistic_mean(workers, k, shift, rate),
              shift > 0.0,
              shift > 0.0 ? "E[X_K:n] (upper bound)" : "E[X_K:n]"};
    case UpdateDiscipline::kKBatchAsync:
      return {kk * (shift + 1.0 / rate) / n, false, "K E[X]/n"};
  }
  return {};
}

std::optional<UpdateTimePrediction> predict_update_time(UpdateDiscipline discipline,
                                                        int k,
                                                        const DelayModel& delays) {
  const auto shape = delays.shifted_exponential();
  if (!shape) {
    return std::nullopt;
  }
  // Identical workers of load 1: shift Δ = a, tail scale 1/μ.
  const double shift = shape->worker_shift.empty() ? shape->shift : shape->worker_shift[0];
  const double scale = shape->worker_scale.empty() ? 1.0 / shape->rate : shape->worker_scale[0];
  const auto same = [](std::span<const double> v) {
    return std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
  };
  if (!same(shape->worker_shift) || !same(shape->worker_scale) || !(scale > 0.0)) {
    return std::nullopt;
  }
  return predict_update_time(discipline, delays.workers(), k, shift, 1.0 / scale);
}

}  // namespace stragglersim::sim

// The markov family's estimator (fit/delay_fit.h): Baum–Welch (fit/baum_welch.h) for (p, q, λ,
// μ) at â = min t, the slow shift b by a profile search over quantiles of the pooled times,
// started from the bimodal estimate (fit/bimodal_em.h).

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>

#include "fit/baum_welch.h"
#include "fit/bimodal_em.h"
#include "fit/degenerate_fit.h"
#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {
namespace {

/// About kSearchSample times of `sequences` (`total` in all) for the Markov search, as windows of
/// consecutive iterations (the chain's order kept within each): every worker contributes
/// windows of up to 64 iterations, evenly spread over its sequence. All of `sequences` when
/// they are no larger.
std::vector<std::vector<double>> markov_search_sample(
    const std::vector<std::vector<double>>& sequences,
    std::size_t total,
    std::size_t size = kSearchSample) {
  if (total <= size) {
    return sequences;
  }
  const std::size_t per_worker = std::max<std::size_t>(2, size / sequences.size());
  std::vector<std::vector<double>> windows;
  for (const auto& seq : sequences) {
    const std::size_t width = std::min({per_worker, std::size_t{64}, seq.size()});
    const std::size_t count = std::max<std::size_t>(1, per_worker / width);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t start = (seq.size() - width) * (2 * j + 1) / (2 * count);
      windows.emplace_back(seq.begin() + static_cast<std::ptrdiff_t>(start),
                           seq.begin() + static_cast<std::ptrdiff_t>(start + width));
    }
  }
  return windows;
}

/// The profile search of the Markov fit from `init`: EM cannot move the slow shift b (points
/// below it have zero slow responsibility), so log L is profiled over b on a grid of quantiles
/// of `sequences`, then refined by Brent around the best on `local` (the same or more of the
/// workers' times); Baum–Welch to convergence there. Returns the estimate, log L and the passes
/// of the last Baum–Welch.
std::tuple<Markov, double, int> search_markov(const std::vector<std::vector<double>>& sequences,
                                              const std::vector<std::vector<double>>& local,
                                              const Markov& init) {
  const std::vector<double> pooled = sorted_pool(sequences);
  const double shift = init.shift;
  auto profile = [&](double b, int iterations, Markov from) {
    from.slow_shift = b;
    return baum_welch(from, sequences, iterations);
  };
  auto profile_local = [&](double b, int iterations, Markov from) {
    from.slow_shift = b;
    return baum_welch(from, local, iterations);
  };
  constexpr int kGrid = 40;
  std::array<double, kGrid> grid{};
  double best_b = shift;
  int best_i = 0;
  Markov best_model = init;
  double best_ll = -kInf;
  for (int i = 0; i < kGrid; ++i) {
    const auto q =
        static_cast<std::size_t>(0.995 * static_cast<double>(pooled.size() - 1) * i / (kGrid - 1));
    grid[static_cast<std::size_t>(i)] = pooled[q];
    const auto [m, ll, its] = profile(pooled[q], 40, init);
    if (ll > best_ll) {
      best_ll = ll;
      best_b = pooled[q];
      best_i = i;
      best_model = m;
    }
  }
  // Brent between the best quantile's neighbours (the grid is in quantiles, not in seconds).
  const auto at = [&](int i) { return grid[static_cast<std::size_t>(i)]; };
  const double low = best_i > 0 ? at(best_i - 1) : shift;
  const double high = best_i + 1 < kGrid ? at(best_i + 1) : best_b + (best_b - at(best_i - 1));
  const auto [b, negative] =
      brent_minimum([&](double v) { return -std::get<1>(profile_local(v, 40, best_model)); },
                    std::max(shift, low),
                    std::max(high, low),
                    20);
  if (&local != &sequences) {  // other times than the grid's: its best log L on `local`
    best_ll = std::get<1>(profile_local(best_b, 40, best_model));
  }
  if (-negative > best_ll) {
    best_b = b;
  }
  return profile_local(best_b, 2000, best_model);
}

/// The Markov estimate on every sequence from the search's `start`: Baum–Welch at the start's b,
/// then b by Brent within ±5 % of b − a at those parameters (one forward pass per step), then
/// Baum–Welch again; each at most kPolishPasses passes. Returns the estimate, its log L and the
/// passes taken.
std::tuple<Markov, double, int> polish_markov(const Markov& start,
                                              const std::vector<std::vector<double>>& sequences) {
  Markov m{};
  double ll = 0.0;
  int passes = 0;
  std::tie(m, ll, passes) = baum_welch(start, sequences, kPolishPasses);
  const double reach = 0.05 * (m.slow_shift - m.shift);
  const auto forward = [&](const Markov& at) { return markov_log_likelihood(at, sequences); };
  const auto [b, negative] = brent_minimum(
      [&](double v) {
        Markov at = m;
        at.slow_shift = v;
        return -forward(at);
      },
      std::max(m.shift, m.slow_shift - reach),
      m.slow_shift + reach,
      30);
  if (-negative > forward(m)) {
    m.slow_shift = b;
  }
  const auto [polished, polished_ll, more] = baum_welch(m, sequences, kPolishPasses);
  return {polished, forward(polished), passes + more};
}

}  // namespace

FamilyFit fit_markov(const std::vector<std::vector<double>>& sequences) {
  std::vector<double> pooled;
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      return unfitted("markov", "needs at least two iterations per worker");
    }
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  std::sort(pooled.begin(), pooled.end());
  if (pooled.size() < 5 || pooled.front() == pooled.back()) {
    return unfitted("markov", "needs at least five distinct times");
  }
  const double shift = pooled.front();
  const auto sample = markov_search_sample(sequences, pooled.size());
  // The bimodal estimate of the search sample's times is the start: its slow component the
  // starting slow state.
  std::vector<double> sample_pooled;
  for (const auto& s : sample) {
    sample_pooled.insert(sample_pooled.end(), s.begin(), s.end());
  }
  std::sort(sample_pooled.begin(), sample_pooled.end());
  const std::vector<double> start_sample = search_sample(sample_pooled);
  const Bimodal start = std::get<0>(search_bimodal(start_sample, start_sample));
  const double pi = std::clamp(start.slow_probability, 0.01, 0.5);
  const Markov init{
      shift, start.rate, shift, start.rate / start.slowdown, 0.1 * pi, 0.1 * (1.0 - pi)};
  const bool local = pooled.size() <= kLocalSearchLimit;
  auto fitted = search_markov(
      pooled.size() > kSearchSample ? sample : sequences,
      local ? sequences : markov_search_sample(sequences, pooled.size(), kLocalSearchLimit),
      init);
  if (!local) {
    fitted = polish_markov(std::get<0>(fitted), sequences);
  }
  const Markov& m = std::get<0>(fitted);
  const double ll = std::get<1>(fitted);
  const int iterations = std::get<2>(fitted);
  auto log_l = [&](const Eigen::VectorXd& x) {
    return markov_log_likelihood({shift, x(0), m.slow_shift, x(1), x(2), x(3)}, sequences);
  };
  Eigen::VectorXd x(4);
  x << m.rate, m.slow_rate, m.to_slow, m.to_normal;
  const auto se = standard_errors(log_l, x);
  FamilyFit fit;
  fit.family = "markov";
  fit.parameters = {{"shift", shift, std::nullopt},
                    {"rate", m.rate, se[0]},
                    {"slow_shift", m.slow_shift, std::nullopt},
                    {"slow_rate", m.slow_rate, se[1]},
                    {"to_slow", m.to_slow, se[2]},
                    {"to_normal", m.to_normal, se[3]}};
  fit.parameter_count = 6;
  fit.iterations = iterations;
  flag_probabilities(fit, {"to_slow", "to_normal"});
  finish(fit, ll, pooled, [&](double t) { return markov_marginal_cdf(m, t); });
  return fit;
}

}  // namespace stragglersim::sim

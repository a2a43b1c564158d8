#include "fit/heterogeneous_markov_fit.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "fit/baum_welch.h"
#include "fit/fit_support.h"
#include "models/base/stop_request.h"

namespace stragglersim::sim {
namespace {

/// The median of `s` (not empty).
double median_of(std::vector<double> s) {
  const auto mid = s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2);
  std::nth_element(s.begin(), mid, s.end());
  return *mid;
}

/// Worker `seq`'s log L under the fitted chain `m` at factor c: log L_m(seq/c) − n log c.
double scaled_markov_log_likelihood(const Markov& m, const std::vector<double>& seq, double c) {
  models::throw_if_stop_requested();  // a forward pass over one worker's times
  return markov_sequence_log_likelihood(m, MarkovEmissions(m), seq, c) -
         static_cast<double>(seq.size()) * std::log(c);
}

/// One alternation step for the factors: each c_i maximises its worker's log L under the fitted
/// chain (Brent on log c within ±0.5 of the start, c ≤ min_i t / a so that every t/c_i stays in
/// the normal state's support). Returns Σ_i of the maximised log L.
double refine_factors(const Markov& m,
                      const std::vector<std::vector<double>>& sequences,
                      std::vector<double>& factors) {
  double total = 0.0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const double smallest = *std::min_element(sequences[i].begin(), sequences[i].end());
    const double high = std::min(std::log(factors[i]) + 0.5, std::log(smallest / m.shift));
    const double low = std::min(std::log(factors[i]) - 0.5, high);
    const auto [log_c, negative] = brent_minimum(
        [&](double v) { return -scaled_markov_log_likelihood(m, sequences[i], std::exp(v)); },
        low,
        high,
        30);
    const double start = scaled_markov_log_likelihood(m, sequences[i], factors[i]);
    if (-negative > start) {
      factors[i] = std::exp(log_c);
      total -= negative;
    } else {
      total += start;
    }
  }
  return total;
}

}  // namespace

MedianScaled median_scaled(const std::vector<std::vector<double>>& sequences) {
  MedianScaled out;
  if (sequences.size() < 2) {
    out.problem = "needs at least two workers";
    return out;
  }
  for (const auto& s : sequences) {
    if (s.size() < 2) {
      out.problem = "needs at least two iterations per worker";
      return out;
    }
    out.factors.push_back(median_of(s));
  }
  const double fastest = *std::min_element(out.factors.begin(), out.factors.end());
  if (!(fastest > 0.0)) {
    out.problem = "needs a positive median time for every worker";
    return out;
  }
  out.scaled = sequences;
  for (std::size_t i = 0; i < out.scaled.size(); ++i) {
    out.factors[i] /= fastest;
    for (double& t : out.scaled[i]) {
      t /= out.factors[i];
    }
  }
  return out;
}

FamilyFit heterogeneous_markov_from(const std::vector<std::vector<double>>& sequences,
                                    std::vector<double> factors,
                                    FamilyFit fit,
                                    const FamilyFit& unscaled) {
  const std::string family = "heterogeneous_markov";
  // The second start, factors 1 under the chain of the unscaled times, taken when the first
  // fits worse than that chain alone: the family nests the markov family, and this start keeps
  // its fit at least as good (refine_factors only accepts gains). Otherwise the first start is
  // kept even where the second's log L is higher: one alternation from the unscaled chain keeps
  // that chain, whose rates are pulled by the slower workers' times (the first start's are not).
  // The two alternations are independent and run side by side.
  std::vector<double> ones(sequences.size(), 1.0);
  double from_ones = -kInf;
  double log_likelihood = 0.0;
  run_on_two_threads({[&] { log_likelihood = refine_factors(chain_of(fit), sequences, factors); },
                      [&] {
                        if (unscaled.fitted()) {
                          from_ones = refine_factors(chain_of(unscaled), sequences, ones);
                        }
                      }});
  if (unscaled.fitted() && log_likelihood < unscaled.log_likelihood && from_ones > log_likelihood) {
    fit = unscaled;
    factors = ones;
    log_likelihood = from_ones;
  }
  // Back to the fastest worker at c = 1: T = c_i·M is unchanged when c_i → c_i/k and the chain's
  // times scale by k (shifts × k, rates / k), and so is log L.
  const double k = *std::min_element(factors.begin(), factors.end());
  for (double& c : factors) {
    c /= k;
  }
  for (auto& p : fit.parameters) {
    const double scale = p.name.ends_with("shift") ? k : p.name.ends_with("rate") ? 1.0 / k : 1.0;
    p.value *= scale;
    if (p.standard_error) {
      *p.standard_error *= scale;
    }
  }
  fit.family = family;
  fit.factors = factors;
  fit.parameter_count += static_cast<int>(factors.size()) - 1;
  const std::vector<double> pooled = sorted_pool(sequences);
  const Markov m = chain_of(fit);
  finish(fit, log_likelihood, pooled, [&](double t) {
    double f = 0.0;
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      f += static_cast<double>(sequences[i].size()) * markov_marginal_cdf(m, t / factors[i]);
    }
    return f / static_cast<double>(pooled.size());
  });
  return fit;
}

FamilyFit fit_heterogeneous_markov(const std::vector<std::vector<double>>& sequences,
                                   const FamilyFit* markov) {
  const std::string family = "heterogeneous_markov";
  MedianScaled start = median_scaled(sequences);
  if (!start.problem.empty()) {
    return unfitted(family, start.problem);
  }
  FamilyFit fit = fit_markov(start.scaled);
  if (!fit.fitted()) {
    return unfitted(family, fit.problem);
  }
  return heterogeneous_markov_from(sequences,
                                   std::move(start.factors),
                                   std::move(fit),
                                   markov != nullptr ? *markov : fit_markov(sequences));
}

}  // namespace stragglersim::sim

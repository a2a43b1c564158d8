#pragma once
// Baum–Welch for the markov family (fit/delay_fit.h): per worker an independent two-state chain
// (normal ↔ slow, stationary start) with shifted exponential emissions, the forward pass's
// log L with per-step scaling, and the E- and M-steps at fixed shifts. Used by the estimators of
// fit/ only (markov, heterogeneous_markov).

#include <array>
#include <cmath>
#include <span>
#include <tuple>
#include <vector>

#include "fit/delay_fit.h"
#include "fit/fit_support.h"

namespace stragglersim::sim {

struct Markov {
  double shift, rate, slow_shift, slow_rate, to_slow, to_normal;
};

/// log f_normal(t), log f_slow(t) of the chain's states, their log rates computed once.
class MarkovEmissions {
 public:
  explicit MarkovEmissions(const Markov& m)
      : m_(m), log_rate_(std::log(m.rate)), log_slow_rate_(std::log(m.slow_rate)) {}

  [[nodiscard]] std::array<double, 2> operator()(double t) const {
    return {log_rate_ - m_.rate * (t - m_.shift),
            t >= m_.slow_shift ? log_slow_rate_ - m_.slow_rate * (t - m_.slow_shift) : -kInf};
  }

 private:
  Markov m_;
  double log_rate_, log_slow_rate_;
};

/// log L of the chain for one worker's times seq[t] / divisor: the forward pass with per-step
/// scaling.
[[nodiscard]] double markov_sequence_log_likelihood(const Markov& m,
                                                    const MarkovEmissions& log_emissions,
                                                    std::span<const double> seq,
                                                    double divisor);

/// log L of the chain over every worker's sequence (markov_sequence_log_likelihood, summed).
[[nodiscard]] double markov_log_likelihood(const Markov& m,
                                           const std::vector<std::vector<double>>& sequences);

/// Baum–Welch at fixed shifts from `m`, at most `max_iterations` steps.
std::tuple<Markov, double, int> baum_welch(Markov m,
                                           const std::vector<std::vector<double>>& sequences,
                                           int max_iterations);

/// P(T ≤ t) of the chain's stationary marginal.
[[nodiscard]] double markov_marginal_cdf(const Markov& m, double t);

/// The chain of a fitted markov family.
[[nodiscard]] Markov chain_of(const FamilyFit& f);

}  // namespace stragglersim::sim

// Baum–Welch for the markov family (fit/baum_welch.h): the scaled forward pass against the sum
// over every state path of a short sequence, the stationary marginal, and Baum–Welch never
// lowering the log-likelihood.

#include "fit/baum_welch.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>
#include <vector>

#include "fit/delay_fit.h"

namespace stragglersim::sim {
namespace {

/// P(x₀ … x_{T−1}) of the chain by summing over all 2^T state paths.
double path_sum(const Markov& m, const std::vector<double>& x) {
  const auto density = [&](int state, double t) {
    if (state == 0) {
      return t >= m.shift ? m.rate * std::exp(-m.rate * (t - m.shift)) : 0.0;
    }
    return t >= m.slow_shift ? m.slow_rate * std::exp(-m.slow_rate * (t - m.slow_shift)) : 0.0;
  };
  const double p[2][2] = {{1.0 - m.to_slow, m.to_slow}, {m.to_normal, 1.0 - m.to_normal}};
  const double slow = m.to_slow / (m.to_slow + m.to_normal);
  double total = 0.0;
  for (unsigned path = 0; path < (1u << x.size()); ++path) {
    double prob = 1.0;
    int before = 0;
    for (std::size_t t = 0; t < x.size(); ++t) {
      const int s = static_cast<int>((path >> t) & 1u);
      prob *= t == 0 ? (s == 1 ? slow : 1.0 - slow) : p[before][s];
      prob *= density(s, x[t]);
      before = s;
    }
    total += prob;
  }
  return total;
}

}  // namespace

TEST_CASE("fit: the chain's log-likelihood equals the sum over its state paths", "[fit]") {
  const Markov m{0.5, 2.0, 1.0, 0.5, 0.1, 0.3};
  // 0.7 and 0.9 lie below the slow shift: only the normal state can emit them.
  const std::vector<std::vector<double>> sequences = {{0.7, 1.2, 3.0, 0.9, 1.1}, {2.5, 4.0, 1.05}};
  const double expected = std::log(path_sum(m, sequences[0])) + std::log(path_sum(m, sequences[1]));
  CHECK(markov_log_likelihood(m, sequences) == Approx(expected).epsilon(1e-12));
  // One worker's times divided by a factor c: the log L of seq / c.
  const std::vector<double> seq = {1.4, 2.4, 6.0};
  CHECK(markov_sequence_log_likelihood(m, MarkovEmissions(m), seq, 2.0) ==
        Approx(std::log(path_sum(m, {0.7, 1.2, 3.0}))).epsilon(1e-12));
}

TEST_CASE("fit: the chain's marginal is its stationary mixture", "[fit]") {
  const Markov m{0.5, 2.0, 1.0, 0.5, 0.1, 0.3};
  const double slow = 0.1 / 0.4;
  const double t = 2.0;
  const double expected =
      (1.0 - slow) * (1.0 - std::exp(-2.0 * 1.5)) + slow * (1.0 - std::exp(-0.5 * 1.0));
  CHECK(markov_marginal_cdf(m, t) == Approx(expected).epsilon(1e-14));
  CHECK(markov_marginal_cdf(m, 0.4) == 0.0);
  FamilyFit f;
  f.parameters = {{"shift", 0.5, {}},
                  {"rate", 2.0, {}},
                  {"slow_shift", 1.0, {}},
                  {"slow_rate", 0.5, {}},
                  {"to_slow", 0.1, {}},
                  {"to_normal", 0.3, {}}};
  const Markov back = chain_of(f);
  CHECK(back.slow_shift == 1.0);
  CHECK(back.to_normal == 0.3);
}

TEST_CASE("fit: Baum-Welch climbs to a fixed point at the given shifts", "[fit]") {
  // Two workers with a slow spell each; EM from a poor start. (The stationary start makes the
  // M-step for the transitions approximate, so single steps need not raise log L; the fixed
  // point must.)
  const std::vector<std::vector<double>> sequences = {
      {0.6, 0.9, 0.7, 3.5, 4.2, 3.9, 0.8, 0.65, 0.75, 1.1, 0.95, 0.7},
      {0.8, 0.7, 0.9, 1.0, 0.6, 4.8, 3.3, 5.0, 3.6, 0.9, 0.7, 0.85}};
  const Markov start{0.6, 1.0, 3.3, 1.0, 0.3, 0.3};
  // The log L returned is the E-step's, of the parameters before the last M-step.
  const auto [one, ll_start, one_step] = baum_welch(start, sequences, 1);
  CHECK(one_step == 1);
  CHECK(ll_start == Approx(markov_log_likelihood(start, sequences)).epsilon(1e-12));
  const auto [m, ll, taken] = baum_welch(start, sequences, 2000);
  CHECK(taken < 2000);
  CHECK(m.shift == start.shift);  // the shifts stay where they were given
  CHECK(m.slow_shift == start.slow_shift);
  const double fitted = markov_log_likelihood(m, sequences);
  CHECK(fitted > markov_log_likelihood(start, sequences) + 1.0);
  CHECK(fitted == Approx(ll).epsilon(1e-8));
  // Seven slow times of 24 in two spells: the chain's slow share and its persistence.
  CHECK(m.to_slow / (m.to_slow + m.to_normal) == Approx(7.0 / 24.0).epsilon(0.2));
  CHECK(m.to_normal < 0.5);
}

}  // namespace stragglersim::sim

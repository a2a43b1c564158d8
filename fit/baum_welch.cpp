#include "fit/baum_welch.h"

#include <algorithm>
#include <cmath>

#include "fit/fit_support.h"
#include "models/base/stop_request.h"

namespace stragglersim::sim {
namespace {

/// Sufficient statistics of one E-step (Baum–Welch).
struct MarkovStatistics {
  double log_likelihood = 0.0;
  double normal_weight = 0.0, normal_excess = 0.0, slow_weight = 0.0, slow_excess = 0.0;
  double from_normal = 0.0, normal_to_slow = 0.0, from_slow = 0.0, slow_to_normal = 0.0;
};

/// The emissions e^{le − max le} (the larger is 1 exactly: one exp per time) and max le.
std::pair<std::array<double, 2>, double> relative_emissions(const std::array<double, 2>& le) {
  const double top = std::max(le[0], le[1]);
  return {le[0] >= le[1] ? std::array<double, 2>{1.0, std::exp(le[1] - top)}
                         : std::array<double, 2>{std::exp(le[0] - top), 1.0},
          top};
}

/// Adds Σ log c of the forward pass's per-step scales c to a log-likelihood: their product is
/// kept and its logarithm added only when it nears the ends of the double range (no log per
/// time), the rest at the end of the sequence.
class LogOfScales {
 public:
  void multiply(double c, double& log_likelihood) {
    product_ *= c;
    if (!(product_ > 1e-200 && product_ < 1e200)) {
      log_likelihood += std::log(product_);
      product_ = 1.0;
    }
  }
  void finish(double& log_likelihood) const { log_likelihood += std::log(product_); }

 private:
  double product_ = 1.0;
};

}  // namespace

/// log L of the chain for one worker's times seq[t] / divisor: the forward pass with per-step
/// scaling.
double markov_sequence_log_likelihood(const Markov& m,
                                      const MarkovEmissions& log_emissions,
                                      std::span<const double> seq,
                                      double divisor) {
  const double stationary_slow = m.to_slow / (m.to_slow + m.to_normal);
  double log_likelihood = 0.0;
  LogOfScales scales;
  std::array<double, 2> alpha = {1.0 - stationary_slow, stationary_slow};
  for (std::size_t t = 0; t < seq.size(); ++t) {
    const auto [e, top] = relative_emissions(log_emissions(seq[t] / divisor));
    std::array<double, 2> a = alpha;
    if (t > 0) {
      a = {alpha[0] * (1.0 - m.to_slow) + alpha[1] * m.to_normal,
           alpha[0] * m.to_slow + alpha[1] * (1.0 - m.to_normal)};
    }
    a[0] *= e[0];
    a[1] *= e[1];
    const double c = a[0] + a[1];
    log_likelihood += top;
    scales.multiply(c, log_likelihood);
    const double inverse = 1.0 / c;
    alpha = {a[0] * inverse, a[1] * inverse};
  }
  scales.finish(log_likelihood);
  return log_likelihood;
}

/// log L of the chain over every worker's sequence (markov_sequence_log_likelihood, summed).
double markov_log_likelihood(const Markov& m, const std::vector<std::vector<double>>& sequences) {
  models::throw_if_stop_requested();  // a forward pass over every sequence
  const MarkovEmissions log_emissions(m);
  double log_likelihood = 0.0;
  for (const auto& seq : sequences) {
    log_likelihood += markov_sequence_log_likelihood(m, log_emissions, seq, 1.0);
  }
  return log_likelihood;
}

namespace {

using MarkovTransitions = std::array<std::array<double, 2>, 2>;

/// The scaled forward pass over one sequence: α_t normalised to sum to one, each step's
/// emissions divided by the same scale (so that the backward pass reuses it); adds the
/// sequence's log L to `log_likelihood`.
inline void scaled_forward(const MarkovEmissions& log_emissions,
                           const MarkovTransitions& p,
                           double stationary_slow,
                           const std::vector<double>& seq,
                           std::vector<std::array<double, 2>>& alpha,
                           std::vector<std::array<double, 2>>& emission,
                           double& log_likelihood) {
  const std::size_t len = seq.size();
  alpha.assign(len, {0.0, 0.0});
  emission.assign(len, {0.0, 0.0});
  LogOfScales scales;
  for (std::size_t t = 0; t < len; ++t) {
    const auto [e, top] = relative_emissions(log_emissions(seq[t]));
    emission[t] = e;
    std::array<double, 2> a{};
    if (t == 0) {
      a = {1.0 - stationary_slow, stationary_slow};
    } else {
      for (int k = 0; k < 2; ++k) {
        a[static_cast<std::size_t>(k)] = alpha[t - 1][0] * p[0][static_cast<std::size_t>(k)] +
                                         alpha[t - 1][1] * p[1][static_cast<std::size_t>(k)];
      }
    }
    a[0] *= emission[t][0];
    a[1] *= emission[t][1];
    const double c = a[0] + a[1];
    log_likelihood += top;
    scales.multiply(c, log_likelihood);
    const double inverse = 1.0 / c;
    alpha[t] = {a[0] * inverse, a[1] * inverse};
    // Keep the scale with the emission so that the backward pass reuses it.
    emission[t] = {emission[t][0] * inverse, emission[t][1] * inverse};
  }
  scales.finish(log_likelihood);
}

/// The backward pass over one sequence after scaled_forward: adds the posterior state weights
/// and the expected transition counts to `s`.
inline void backward_statistics(const Markov& m,
                                const MarkovTransitions& p,
                                const std::vector<double>& seq,
                                const std::vector<std::array<double, 2>>& alpha,
                                const std::vector<std::array<double, 2>>& emission,
                                MarkovStatistics& s) {
  std::array<double, 2> beta = {1.0, 1.0};
  for (std::size_t t = seq.size(); t-- > 0;) {
    const double g0 = alpha[t][0] * beta[0];
    const double g1 = alpha[t][1] * beta[1];
    const double inverse = 1.0 / (g0 + g1);
    const double w0 = g0 * inverse;
    const double w1 = g1 * inverse;
    s.normal_weight += w0;
    s.normal_excess += w0 * (seq[t] - m.shift);
    s.slow_weight += w1;
    s.slow_excess += w1 * (seq[t] - m.slow_shift);
    if (t == 0) {
      break;
    }
    // ξ_{t−1}(j, k) ∝ α_{t−1}(j) p_jk e_k(t) β_t(k), normalised to sum to one.
    std::array<std::array<double, 2>, 2> xi{};
    double xi_sum = 0.0;
    for (std::size_t j = 0; j < 2; ++j) {
      for (std::size_t k = 0; k < 2; ++k) {
        xi[j][k] = alpha[t - 1][j] * p[j][k] * emission[t][k] * beta[k];
        xi_sum += xi[j][k];
      }
    }
    const double xi_inverse = 1.0 / xi_sum;
    s.from_normal += (xi[0][0] + xi[0][1]) * xi_inverse;
    s.normal_to_slow += xi[0][1] * xi_inverse;
    s.from_slow += (xi[1][0] + xi[1][1]) * xi_inverse;
    s.slow_to_normal += xi[1][0] * xi_inverse;
    beta = {p[0][0] * emission[t][0] * beta[0] + p[0][1] * emission[t][1] * beta[1],
            p[1][0] * emission[t][0] * beta[0] + p[1][1] * emission[t][1] * beta[1]};
  }
}

/// Forward–backward with per-step scaling over every worker's sequence: the E-step's
/// statistics and log L.
MarkovStatistics markov_e_step(const Markov& m, const std::vector<std::vector<double>>& sequences) {
  models::throw_if_stop_requested();  // a forward-backward pass over every sequence
  MarkovStatistics s;
  const double stationary_slow = m.to_slow / (m.to_slow + m.to_normal);
  const MarkovTransitions p = {{{1.0 - m.to_slow, m.to_slow}, {m.to_normal, 1.0 - m.to_normal}}};
  std::vector<std::array<double, 2>> alpha;
  std::vector<std::array<double, 2>> emission;
  const MarkovEmissions log_emissions(m);
  for (const auto& seq : sequences) {
    scaled_forward(log_emissions, p, stationary_slow, seq, alpha, emission, s.log_likelihood);
    backward_statistics(m, p, seq, alpha, emission, s);
  }
  return s;
}

}  // namespace

/// Baum–Welch at fixed shifts from `m`, at most `max_iterations` steps.
std::tuple<Markov, double, int> baum_welch(Markov m,
                                           const std::vector<std::vector<double>>& sequences,
                                           int max_iterations) {
  constexpr double kFloor = 1e-9;  // keeps both states and both transitions possible
  double previous = -kInf;
  int iteration = 0;
  for (; iteration < max_iterations; ++iteration) {
    const MarkovStatistics s = markov_e_step(m, sequences);
    if (!std::isfinite(s.log_likelihood) ||
        std::abs(s.log_likelihood - previous) <= kTolerance * std::abs(s.log_likelihood)) {
      previous = s.log_likelihood;
      break;
    }
    previous = s.log_likelihood;
    if (s.normal_excess <= 0.0 || s.slow_excess <= 0.0 || s.slow_weight < kFloor) {
      break;
    }
    m.rate = s.normal_weight / s.normal_excess;
    m.slow_rate = s.slow_weight / s.slow_excess;
    m.to_slow = std::clamp(s.normal_to_slow / s.from_normal, kFloor, 1.0 - kFloor);
    m.to_normal = std::clamp(s.slow_to_normal / s.from_slow, kFloor, 1.0 - kFloor);
  }
  return {m, previous, iteration};
}

/// P(T ≤ t) of the chain's stationary marginal.
double markov_marginal_cdf(const Markov& m, double t) {
  const double slow = m.to_slow / (m.to_slow + m.to_normal);
  return (1.0 - slow) * shifted_exponential_cdf(m.shift, m.rate, t) +
         slow * shifted_exponential_cdf(m.slow_shift, m.slow_rate, t);
}

/// The chain of a fitted markov family.
Markov chain_of(const FamilyFit& f) {
  return Markov{f.value("shift"),
                f.value("rate"),
                f.value("slow_shift"),
                f.value("slow_rate"),
                f.value("to_slow"),
                f.value("to_normal")};
}

}  // namespace stragglersim::sim

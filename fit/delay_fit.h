#pragma once
// Fitting the program's delay models to measured per-worker times (docs/fit.md), the library side
// of `stragglersim fit`. Times are seconds for one unit of load (ℓ = 1), so s(ℓ) = 1 and the
// fitted parameters are those of a config's "delay" block at any `tail`.
//
// Families (parameters in the config's key order), fitted by maximum likelihood:
//   shifted_exponential  f(t) = λe^{−λ(t−a)}, t ≥ a:  â = min t, λ̂ = n / Σ(t − â) (closed form)
//   pareto               T = c + Y, Y ~ Pareto(x_m, α), t ≥ c + x_m: c + x_m = min t, α̂(c) =
//                        n / Σ log((t − c)/x_m) in closed form, c ∈ [0, min t) by a profile
//                        search (81-point grid in log x_m, then Brent)
//   bimodal              f(t) = (1−π)λe^{−λ(t−a)} + π(λ/κ)e^{−λ(t/κ−a)} [t ≥ κa]: â = min t,
//                        (λ, π) by EM at fixed κ with the closed-form M-step
//                        λ = n/(S₁ + S₂/κ − aW), π = W/n (w the E-step's slow
//                        responsibilities, W = Σw, S₁ = Σ(1 − w)(t − a), S₂ = Σ w·t), and κ by a
//                        profile search (40-point log grid on [1, max t/a], then Brent): EM
//                        cannot raise κ past a time whose slow responsibility is 0
//   markov               per worker an independent two-state chain (normal ↔ slow, P(normal →
//                        slow) = p "to_slow", P(slow → normal) = q "to_normal", stationary
//                        start), emissions shifted exponential (a, λ) normal, (b, μ) slow:
//                        Baum–Welch for (p, q, λ, μ) at â = min t, b by a profile search over
//                        quantiles of the pooled times (b ≥ a)
//   heterogeneous        T_i = c_i(a + X/λ) (sim/delays/heterogeneous_delay.h): alternating
//   maximisation,
//                        c_i = λ·mean_i(t) clamped to min_i(t)/a, then (a, λ) of the pooled t/c_i,
//                        normalised so the fastest worker has c = 1
//   lognormal, gamma,    T = c + Y with Y log-normal (μ, σ), gamma (k, θ) or Weibull (k, λ): at
//   weibull              fixed c the MLE of Y's parameters is closed form (log-normal) or one
//                        equation in the shape (gamma: log k − ψ(k) = log mean − mean log, Newton;
//                        Weibull: Σx^k log x/Σx^k − 1/k = mean log x, TOMS 748), and c ∈ [0,
//                        min t) by the profile search of pareto
//   heterogeneous_markov T_i = c_i·M_i, M the markov family: c_i from per-worker medians (fastest
//                        1), the markov fit of t/c_i, then each c_i re-maximised under that chain
// Degenerate fits (FamilyFit::flag) are never chosen as the best.
// AIC = 2k − 2 log L (k free parameters). Kolmogorov–Smirnov of the pooled sample against the
// fitted marginal (the stationary mixture for markov, the mixture over workers for
// heterogeneous). Standard errors from the inverse observed information (central differences of
// log L); the shifts a and b and the bimodal κ (which places the slow support at κa) are boundary
// estimates (bias and s.e. ~ 1/(nλ)) and get none.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fit/goodness_of_fit.h"

namespace stragglersim::sim {

struct FittedParameter {
  std::string name;  ///< the config key
  double value = 0.0;
  std::optional<double> standard_error;
};

struct FamilyFit {
  std::string family;  ///< the config's delay kind
  /// Empty when fitted; else why the family was not fitted (e.g. "needs iteration order").
  std::string problem;
  std::vector<FittedParameter> parameters;
  std::vector<double> factors;  ///< heterogeneous only: c_i, one per worker
  int parameter_count = 0;      ///< k of the AIC
  double log_likelihood = 0.0;
  double aic = 0.0;
  KolmogorovSmirnov ks;
  int iterations = 0;  ///< EM / alternating iterations (0 for closed forms)
  /// Empty, or "degenerate: …" naming each parameter at an edge: a probability within 1e-6 of
  /// 0 or 1, a shift, scale or shape at its search bound, a bimodal slowdown of 1. A flagged
  /// family is never chosen as the best.
  std::string flag;
  [[nodiscard]] bool fitted() const { return problem.empty(); }
  [[nodiscard]] bool degenerate() const { return !flag.empty(); }
  /// The parameter named `name`; asserts that it exists.
  [[nodiscard]] double value(const std::string& name) const;
};

/// Each family on a pooled sample (any order); problem set when the data cannot identify it.
[[nodiscard]] FamilyFit fit_shifted_exponential(std::span<const double> times);
[[nodiscard]] FamilyFit fit_pareto(std::span<const double> times);
[[nodiscard]] FamilyFit fit_bimodal(std::span<const double> times);
[[nodiscard]] FamilyFit fit_lognormal(std::span<const double> times);
[[nodiscard]] FamilyFit fit_gamma(std::span<const double> times);
[[nodiscard]] FamilyFit fit_weibull(std::span<const double> times);
/// `sequences[w]`: worker w's times in iteration order (each ≥ 2 long).
[[nodiscard]] FamilyFit fit_markov(const std::vector<std::vector<double>>& sequences);
[[nodiscard]] FamilyFit fit_heterogeneous(const std::vector<std::vector<double>>& sequences);
/// c_i = median_i / min_j median_j (fastest worker 1), fit_markov on the t/c_i, then one
/// alternation: each c_i maximises its worker's log L under that chain (not a joint maximum).
/// When that fits worse than `markov` (fit_markov of the unscaled times, fitted here when null),
/// a second start, c_i = 1 under `markov` followed by the same alternation, is taken instead:
/// the family nests the markov family and never fits worse than it.
[[nodiscard]] FamilyFit fit_heterogeneous_markov(const std::vector<std::vector<double>>& sequences,
                                                 const FamilyFit* markov = nullptr);

/// Test of equal rates across workers: the likelihood ratio of per-worker exponential rates of
/// the excess over the common shift against one rate,
///   Λ = 2[N log ū − Σ_i n_i log ū_i],  ū_i the mean of t − min t over worker i,
/// divided by the dispersion φ = (long-run variance of the excess within workers)/ū², which is
/// 1 for i.i.d. exponential excess and corrects for other shapes (bimodal) and for persistence
/// (the long-run variance is estimated by batch means, batches of ⌊√n_i⌋ consecutive times);
/// Λ/φ ~ χ²(workers − 1) under equal rates (quasi-likelihood, McCullagh & Nelder 1989 §9.2).
struct HeterogeneityTest {
  double statistic = 0.0;   ///< Λ
  double dispersion = 1.0;  ///< φ
  int degrees_of_freedom = 0;
  double p_value = 1.0;  ///< P(χ²(df) > Λ/φ), Boost.Math
  double level = 0.01;
  std::vector<double> mean_excess;  ///< ū_i per worker
  [[nodiscard]] bool heterogeneous() const { return degrees_of_freedom > 0 && p_value < level; }
};
[[nodiscard]] HeterogeneityTest test_equal_rates(const std::vector<std::vector<double>>& sequences,
                                                 double level = 0.01);

/// A KS p-value below this rejects a family (the p-values are too large, the parameters having
/// been fitted to the same times, so a rejection at this level is a strong one).
inline constexpr double kRejectingKsP = 1e-3;

struct DelayFitReport {
  int workers = 0;
  std::size_t observations = 0;
  bool ordered = false;
  /// shifted_exponential, pareto, lognormal, gamma, weibull, bimodal, markov, heterogeneous,
  /// heterogeneous_markov
  std::vector<FamilyFit> fits;
  /// Index of the smallest AIC among fitted families without a degenerate flag (the
  /// heterogeneous families only when heterogeneity.heterogeneous()).
  std::optional<std::size_t> best;
  /// Which family is best and why, naming the fitted families that were not eligible.
  std::string choice;
  /// Every fitted family's KS p-value is below kRejectingKsP: the best is only the least bad,
  /// and no family describes the times (`fit` says so).
  bool every_family_rejected = false;
  HeterogeneityTest heterogeneity;
};

/// Every family on `sequences` (worker → times in time order); `ordered` says whether the order
/// is iteration order (markov needs it); heterogeneous needs ≥ 2 workers.
[[nodiscard]] DelayFitReport fit_delay_models(const std::vector<std::vector<double>>& sequences,
                                              bool ordered);

}  // namespace stragglersim::sim

#pragma once
// Goodness-of-fit statistics behind `stragglersim fit` (docs/fit.md): the Kolmogorov–Smirnov
// statistic of a sample against a CDF and the tail of the Kolmogorov distribution.
//
// Boost 1.74 (Debian 12) has no Kolmogorov–Smirnov distribution (its
// boost/math/distributions/kolmogorov_smirnov.hpp arrived in 1.75), so the limit law is computed
// here from its two classical series (Kolmogorov 1933; Marsaglia, Tsang & Wang 2003 §1):
//   Q(x) = P(K > x) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²x²}                       (x ≥ 1.18)
//   1 − Q(x) = P(K ≤ x) = (√(2π)/x) Σ_{k≥1} e^{−(2k−1)²π²/(8x²)}          (x < 1.18)
// each summed until its terms fall below 1e-17 (both converge in a handful of terms on their
// side of 1.18, and the first keeps no cancellation worth the name there).

#include <functional>
#include <span>

namespace stragglersim::sim {

/// Q(x) = P(K > x) for the Kolmogorov distribution K = sup_t |B(t)| of the Brownian bridge;
/// 1 for x ≤ 0.
[[nodiscard]] double kolmogorov_tail(double x);

struct KolmogorovSmirnov {
  double statistic = 0.0;  ///< D_n = sup_t |F_n(t) − F(t)|
  /// Q((√n + 0.12 + 0.11/√n)·D_n) (Stephens 1970's finite-n correction of the limit law). For
  /// parameters fitted to the same sample it is too large (the fit pulls F towards F_n): read a
  /// small value as a rejection, a large one as "no evidence against".
  double p_value = 1.0;
};

/// D_n of `sorted` (increasing, not empty) against `cdf`:
///   D_n = max_i max(F(x_(i)) − (i − 1)/n, i/n − F(x_(i))).
[[nodiscard]] KolmogorovSmirnov kolmogorov_smirnov(std::span<const double> sorted,
                                                   const std::function<double(double)>& cdf);

}  // namespace stragglersim::sim

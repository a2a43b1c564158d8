#pragma once
// Two-sample Kolmogorov–Smirnov test for the sampler-agreement tests (Boost 1.74 has no
// Kolmogorov distribution). Header-only, tests only; checked against SciPy's values in
// tests/sim/fastpath/order_statistics_test.cpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace stragglersim::testing {

/// Q_KS(λ) = 2 Σ_{j≥1} (−1)^{j−1} e^{−2j²λ²}: the limiting P(√n·D > λ) (Kolmogorov 1933).
inline double kolmogorov_survival(double lambda) {
  if (lambda < 0.2) {
    return 1.0;  // the series converges slowly there and the value is 1 to 16 digits
  }
  double sum = 0.0;
  for (int j = 1; j <= 200; ++j) {
    const double term = std::exp(-2.0 * j * j * lambda * lambda);
    sum += (j % 2 == 1 ? term : -term);
    if (term < 1e-18) {
      break;
    }
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}

struct KolmogorovSmirnov {
  double statistic = 0.0;  ///< D = sup_x |F_a(x) − F_b(x)|
  double p_value = 1.0;    ///< asymptotic: Q_KS(√(n_a n_b / (n_a + n_b)) · D)
};

/// The two-sample test; ties (discrete data, e.g. counts) are stepped over together, which makes
/// the asymptotic p-value conservative.
inline KolmogorovSmirnov two_sample_ks(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const auto na = static_cast<double>(a.size());
  const auto nb = static_cast<double>(b.size());
  std::size_t i = 0;
  std::size_t j = 0;
  double d = 0.0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == x) {
      ++i;
    }
    while (j < b.size() && b[j] == x) {
      ++j;
    }
    d = std::max(d, std::abs(static_cast<double>(i) / na - static_cast<double>(j) / nb));
  }
  KolmogorovSmirnov out;
  out.statistic = d;
  out.p_value = kolmogorov_survival(std::sqrt(na * nb / (na + nb)) * d);
  return out;
}

}  // namespace stragglersim::testing

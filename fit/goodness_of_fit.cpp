#include "fit/goodness_of_fit.h"

#include <algorithm>
#include <boost/math/constants/constants.hpp>
#include <cmath>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::sim {

double kolmogorov_tail(double x) {
  if (x <= 0.0) {
    return 1.0;
  }
  constexpr double kTerm = 1e-17;
  if (x >= 1.18) {
    double sum = 0.0;
    double sign = 1.0;
    for (int k = 1; k < 100; ++k) {
      const double term = std::exp(-2.0 * k * k * x * x);
      sum += sign * term;
      sign = -sign;
      if (term < kTerm) {
        break;
      }
    }
    return std::clamp(2.0 * sum, 0.0, 1.0);
  }
  const double pi = boost::math::constants::pi<double>();
  double sum = 0.0;
  for (int k = 1; k < 100; ++k) {
    const double odd = 2.0 * k - 1.0;
    const double term = std::exp(-odd * odd * pi * pi / (8.0 * x * x));
    sum += term;
    if (term < kTerm * sum || term == 0.0) {
      break;
    }
  }
  return std::clamp(1.0 - std::sqrt(2.0 * pi) / x * sum, 0.0, 1.0);
}

KolmogorovSmirnov kolmogorov_smirnov(std::span<const double> sorted,
                                     const std::function<double(double)>& cdf) {
  STRAGGLERSIM_ASSERT(!sorted.empty(), "the Kolmogorov-Smirnov test needs a sample");
  const std::size_t size = sorted.size();
  const auto n = static_cast<double>(size);
  double d = 0.0;
  const auto at = [&](std::size_t i, double f) {
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  };
  // F at the first time of every block of kBlock consecutive times (and at the last time)
  // first. The times of block [lo, hi) lie between x_lo and x_hi (x_{n−1} for the last block),
  // so F there lies between F(x_lo) and F(x_hi) (F is a CDF) and none of them can exceed
  // max(F(x_hi) − lo/n, hi/n − F(x_lo)). F is evaluated inside a block only when that bound
  // comes within kSlack of the largest difference found so far: the statistic is the one of
  // every time (kSlack ≫ the rounding of F), at a fraction of the evaluations when n is large.
  constexpr std::size_t kBlock = 16;
  constexpr double kSlack = 1e-9;
  const std::size_t blocks = (size + kBlock - 1) / kBlock;
  std::vector<double> first(blocks + 1);
  for (std::size_t b = 0; b < blocks; ++b) {
    first[b] = cdf(sorted[b * kBlock]);
    at(b * kBlock, first[b]);
  }
  first[blocks] = cdf(sorted[size - 1]);
  at(size - 1, first[blocks]);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t lo = b * kBlock;
    const std::size_t hi = std::min(lo + kBlock, size);
    const double bound = std::max(first[b + 1] - static_cast<double>(lo) / n,
                                  static_cast<double>(hi) / n - first[b]);
    if (bound + kSlack < d) {
      continue;
    }
    for (std::size_t i = lo + 1; i < std::min(hi, size - 1); ++i) {
      at(i, cdf(sorted[i]));
    }
  }
  const double root = std::sqrt(n);
  return {d, kolmogorov_tail((root + 0.12 + 0.11 / root) * d)};
}

}  // namespace stragglersim::sim

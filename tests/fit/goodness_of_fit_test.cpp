// The goodness-of-fit statistics (fit/goodness_of_fit.h): the Kolmogorov tail against published
// values and the blocked Kolmogorov–Smirnov statistic against its formula at every time.

#include "fit/goodness_of_fit.h"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "models/base/random_stream.h"

namespace stragglersim::sim {
namespace {

TEST_CASE("fit: kolmogorov tail matches published values", "[fit]") {
  // scipy.special.kolmogorov (Marsaglia, Tsang & Wang 2003 / Simard & L'Ecuyer 2011).
  CHECK(kolmogorov_tail(0.3) == Approx(0.9999906941986655).epsilon(1e-12));
  CHECK(kolmogorov_tail(0.5) == Approx(0.9639452436648751).epsilon(1e-12));
  CHECK(kolmogorov_tail(1.0) == Approx(0.26999967167735456).epsilon(1e-12));
  CHECK(kolmogorov_tail(1.17) == Approx(0.12939004218561884).epsilon(1e-12));
  CHECK(kolmogorov_tail(1.19) == Approx(0.11774229287977166).epsilon(1e-12));
  CHECK(kolmogorov_tail(1.36) == Approx(0.049485876755377876).epsilon(1e-12));
  CHECK(kolmogorov_tail(1.63) == Approx(0.009846364888486529).epsilon(1e-12));
  CHECK(kolmogorov_tail(2.0) == Approx(0.0006709252557796953).epsilon(1e-10));
  CHECK(kolmogorov_tail(0.0) == 1.0);
}

TEST_CASE("fit: kolmogorov-smirnov statistic of a small sample", "[fit]") {
  // Against U(0, 1): the gaps are 0.1, 1/3 − 0.1, 0.4 − 1/3, 2/3 − 0.4, 0.7 − 2/3, 1 − 0.7.
  const std::vector<double> x = {0.1, 0.4, 0.7};
  const KolmogorovSmirnov ks = kolmogorov_smirnov(x, [](double t) { return t; });
  CHECK(ks.statistic == Approx(0.3));
  const double root = std::sqrt(3.0);
  CHECK(ks.p_value == Approx(kolmogorov_tail((root + 0.12 + 0.11 / root) * 0.3)));
}

/// D_n by its formula at every time, the reference of the blocked evaluation.
double brute_force_statistic(const std::vector<double>& sorted,
                             const std::function<double(double)>& cdf) {
  const auto n = static_cast<double>(sorted.size());
  double d = 0.0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double f = cdf(sorted[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return d;
}

TEST_CASE("fit: kolmogorov-smirnov skips blocks yet equals the statistic of every time", "[fit]") {
  // Sizes around the block of 64 (one block, a partial last block, many blocks), a sample drawn
  // from the law tested (D ~ 1/sqrt(n): most blocks skipped), from a shifted law (the maximum in
  // the middle), with ties (a step CDF), and a CDF that is 0 or 1 on whole blocks.
  RandomEngine rng(5);
  boost::random::exponential_distribution<double> exponential(2.0);
  const std::function<double(double)> law = [](double t) { return -std::expm1(-2.0 * t); };
  const std::function<double(double)> shifted = [](double t) {
    return t < 0.1 ? 0.0 : -std::expm1(-2.0 * (t - 0.1));
  };
  const std::function<double(double)> steps = [](double t) {
    return std::min(1.0, std::floor(4.0 * t) / 4.0);
  };
  for (const std::size_t n : std::vector<std::size_t>{1, 2, 63, 64, 65, 129, 1000, 50000}) {
    std::vector<double> x(n);
    for (double& t : x) {
      t = exponential(rng);
    }
    std::sort(x.begin(), x.end());
    std::vector<double> ties = x;
    for (double& t : ties) {
      t = std::round(8.0 * t) / 8.0;
    }
    for (const auto* cdf : {&law, &shifted, &steps}) {
      std::size_t calls = 0;
      const auto counted = [&](double t) {
        ++calls;
        return (*cdf)(t);
      };
      INFO("n = " << n);
      CHECK(kolmogorov_smirnov(x, counted).statistic == brute_force_statistic(x, *cdf));
      CHECK(kolmogorov_smirnov(ties, *cdf).statistic == brute_force_statistic(ties, *cdf));
      if (n == 50000 && cdf == &law) {
        CHECK(calls < n / 5);  // the law itself: D ≈ 1/sqrt(n) ≫ the rise of F over a block
      }
    }
  }
}

}  // namespace
}  // namespace stragglersim::sim

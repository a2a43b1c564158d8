// Fitting delay models (fit/delay_fit.h) and the goodness-of-fit statistics
// (fit/goodness_of_fit.h): parameters recovered from 20 000 draws of the simulator's own delay
// models (fixed seeds, 4 standard errors; log-normal, gamma, Weibull and heterogeneous Markov
// included), the degenerate flags, the family picked by AIC, the Kolmogorov tail against
// published values, and the test of equal rates.

#include "fit/delay_fit.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/exponential_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "fit/goodness_of_fit.h"
#include "models/base/random_stream.h"
#include "sim/delays/bimodal_delay.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/gamma_delay.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/lognormal_delay.h"
#include "sim/delays/pareto_delay.h"
#include "sim/delays/weibull_delay.h"

namespace stragglersim::sim {
namespace {

/// `iterations` draws of every worker of `delay` at load 1: [worker][iteration].
std::vector<std::vector<double>> draw(DelayModel& delay, int iterations, std::uint64_t seed) {
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  const auto n = static_cast<std::size_t>(delay.workers());
  std::vector<std::vector<double>> out(n);
  std::vector<double> row(n);
  for (int t = 0; t < iterations; ++t) {
    delay.sample(static_cast<std::uint64_t>(t), rng, row);
    for (std::size_t i = 0; i < n; ++i) {
      out[i].push_back(row[i]);
    }
  }
  return out;
}

/// The persistent-straggler model written out here (independently of the simulator): each
/// worker a two-state chain started from its stationary law, shifted exponential per state.
std::vector<std::vector<double>> markov_sample(int workers, int iterations, std::uint64_t seed) {
  RandomEngine rng(seed);
  boost::random::exponential_distribution<double> exp1(1.0);
  const double to_slow = 0.05;
  const double to_normal = 0.2;
  std::vector<std::vector<double>> out(static_cast<std::size_t>(workers));
  for (auto& seq : out) {
    bool slow = boost::random::bernoulli_distribution<double>(to_slow / (to_slow + to_normal))(rng);
    for (int t = 0; t < iterations; ++t) {
      if (t > 0) {
        slow = boost::random::bernoulli_distribution<double>(slow ? 1.0 - to_normal : to_slow)(rng);
      }
      seq.push_back(slow ? 3.0 + exp1(rng) / 0.5 : 0.7 + exp1(rng) / 1.9);
    }
  }
  return out;
}

const FamilyFit& family(const DelayFitReport& r, const std::string& name) {
  for (const auto& f : r.fits) {
    if (f.family == name) {
      return f;
    }
  }
  FAIL("no family " << name);
  return r.fits.front();
}

/// Every worker's times in one sample.
std::vector<double> pooled(const std::vector<std::vector<double>>& s) {
  std::vector<double> all;
  for (const auto& w : s) {
    all.insert(all.end(), w.begin(), w.end());
  }
  return all;
}

/// |estimate − truth| ≤ 4 s.e. of the fitted parameter.
void check_parameter(const FamilyFit& fit, const std::string& name, double truth) {
  for (const auto& p : fit.parameters) {
    if (p.name == name) {
      INFO(fit.family << " " << name << " = " << p.value << ", truth " << truth);
      REQUIRE(p.standard_error.has_value());
      CHECK(std::abs(p.value - truth) <= 4.0 * *p.standard_error);
      return;
    }
  }
  FAIL("no parameter " << name);
}

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

TEST_CASE("fit: shifted exponential recovers a and lambda and richer families gain only chance",
          "[fit][heavy]") {
  ShiftedExponentialDelay delay(std::vector<double>(20, 1.0), {0.7, 1.9, TailScaling::kLoad});
  const auto sample = draw(delay, 1000, 11);  // 20 000 draws
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "shifted_exponential");
  CHECK(std::abs(f.value("shift") - 0.7) < 0.01);
  CHECK(std::abs(f.value("rate") / 1.9 - 1.0) < 0.03);
  // The observed information of λ is n/λ²: s.e. λ/√n.
  CHECK(*f.parameters[1].standard_error ==
        Approx(f.value("rate") / std::sqrt(20000.0)).epsilon(1e-3));
  REQUIRE(r.best.has_value());
  CHECK(f.ks.p_value > 0.01);
  CHECK(f.aic == Approx(2.0 * 2 - 2.0 * f.log_likelihood));
  CHECK_FALSE(r.heterogeneity.heterogeneous());
  // The families that nest it (bimodal, markov: a shifted exponential at π = 0 or κ = 1) fit at
  // least as well, by no more than chance: 2Δ log L below the 99.9 % point of χ² on their extra
  // parameters (a boundary null makes the χ² conservative). So AIC, which charges 2 a parameter,
  // may pick either within that margin, and nothing further from it.
  for (const auto& [name, extra] : {std::pair{"bimodal", 2}, std::pair{"markov", 4}}) {
    const FamilyFit& richer = family(r, name);
    INFO(name << " log L " << richer.log_likelihood << " against " << f.log_likelihood);
    CHECK(richer.log_likelihood >= f.log_likelihood - 1e-6);
    const boost::math::chi_squared_distribution<double> chi2(extra);
    CHECK(2.0 * (richer.log_likelihood - f.log_likelihood) < quantile(chi2, 0.999));
  }
  CHECK(r.fits[*r.best].aic >= f.aic - 2.0 * 4);
}

TEST_CASE("fit: pareto recovers shift scale and shape and wins by AIC", "[fit][heavy]") {
  ParetoDelay delay(std::vector<double>(20, 1.0), {0.7, 1.0, 2.5, TailScaling::kLoad});
  const auto sample = draw(delay, 1000, 12);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "pareto");
  check_parameter(f, "shift", 0.7);
  check_parameter(f, "scale", 1.0);
  check_parameter(f, "shape", 2.5);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "pareto");
  CHECK(f.ks.p_value > 0.01);
}

TEST_CASE("fit: bimodal recovers the mixture by EM and wins by AIC", "[fit][heavy]") {
  BimodalDelay delay(std::vector<double>(20, 1.0), {0.7, 1.9, TailScaling::kLoad, 0.1, 5.0});
  const auto sample = draw(delay, 1000, 13);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "bimodal");
  CHECK(std::abs(f.value("shift") - 0.7) < 0.01);
  check_parameter(f, "rate", 1.9);
  check_parameter(f, "slow_probability", 0.1);
  // κ sets where the slow support starts (κa), a boundary estimate: within 1%.
  CHECK(std::abs(f.value("slowdown") / 5.0 - 1.0) < 0.01);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "bimodal");
  CHECK(f.ks.p_value > 0.01);
  CHECK_FALSE(r.heterogeneity.heterogeneous());
}

TEST_CASE("fit: markov recovers persistent stragglers by baum-welch", "[fit][heavy]") {
  const auto sample = markov_sample(20, 1000, 14);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "markov");
  CHECK(std::abs(f.value("shift") - 0.7) < 0.01);
  // b is a boundary estimate like a: within 0.05 s of the truth at this sample size.
  CHECK(std::abs(f.value("slow_shift") - 3.0) < 0.05);
  check_parameter(f, "rate", 1.9);
  check_parameter(f, "slow_rate", 0.5);
  check_parameter(f, "to_slow", 0.05);
  check_parameter(f, "to_normal", 0.2);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "markov");
  // Without iteration order the same times cannot be told from a mixture.
  const DelayFitReport unordered = fit_delay_models(sample, false);
  CHECK_FALSE(family(unordered, "markov").fitted());
  CHECK(family(unordered, "markov").problem == "needs iteration order (an iteration column)");
  // Persistence inflates per-worker means; the batch-means dispersion absorbs it.
  CHECK(r.heterogeneity.dispersion > 2.0);
  CHECK_FALSE(r.heterogeneity.heterogeneous());
}

TEST_CASE("fit: heterogeneous workers are flagged and their factors recovered", "[fit][heavy]") {
  std::vector<double> factors(20, 1.0);
  for (std::size_t i = 0; i < 20; i += 5) {
    factors[i] = 1.5;
  }
  HeterogeneousDelay delay(std::vector<double>(20, 1.0), {0.7, 1.9, TailScaling::kLoad, factors});
  const auto sample = draw(delay, 1000, 15);
  const DelayFitReport r = fit_delay_models(sample, true);
  CHECK(r.heterogeneity.heterogeneous());
  CHECK(r.heterogeneity.p_value < 1e-12);
  CHECK(r.heterogeneity.degrees_of_freedom == 19);
  const FamilyFit& f = family(r, "heterogeneous");
  REQUIRE(f.fitted());
  // Each factor is a ratio of means of 1000 draws: relative s.e. ≈ (1/λ)/(a + 1/λ)/√1000.
  const double relative_se = (1.0 / 1.9) / (0.7 + 1.0 / 1.9) / std::sqrt(1000.0) * std::sqrt(2.0);
  for (std::size_t i = 0; i < 20; ++i) {
    INFO("worker " << i);
    CHECK(std::abs(f.factors[i] / factors[i] - 1.0) < 4.0 * relative_se + 0.01);
  }
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous");
}

TEST_CASE("fit: the test of equal rates against its formula", "[fit]") {
  // Two workers, excess over the common minimum 0: ū₁ = 1, ū₂ = 3, ū = 2.
  const std::vector<std::vector<double>> s = {{0.0, 1.0, 2.0, 1.0}, {2.0, 4.0, 3.0, 3.0}};
  const HeterogeneityTest t = test_equal_rates(s);
  CHECK(t.statistic ==
        Approx(2.0 * (8.0 * std::log(2.0) - 4.0 * std::log(1.0) - 4.0 * std::log(3.0))));
  // Batches of 2: worker 1 batch means 0.5, 1.5; worker 2 3, 3 → within = 2·0.5, df 2.
  CHECK(t.dispersion == Approx((2.0 * 0.5 / 2.0) / 4.0));
  CHECK(t.degrees_of_freedom == 1);
}

TEST_CASE("fit: degenerate samples are refused with a reason", "[fit]") {
  const std::vector<double> same = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  CHECK(fit_shifted_exponential(same).problem == "needs at least two distinct times");
  CHECK(fit_bimodal(same).problem == "needs at least five distinct times");
  const std::vector<double> zero = {0.0, 1.0, 2.0};
  CHECK(fit_pareto(zero).problem == "needs every time > 0 (the Pareto scale is positive)");
}

}  // namespace
// The log-normal, gamma, Weibull and heterogeneous Markov families and the degenerate flags.
TEST_CASE("fit: lognormal recovers shift log_mean and log_sd", "[fit][families][heavy]") {
  LogNormalDelay delay(std::vector<double>(20, 1.0),
                       {.shift = 0.6, .log_mean = -0.3, .log_sd = 0.5});
  const auto sample = draw(delay, 1000, 21);
  const FamilyFit f = fit_lognormal(pooled(sample));
  REQUIRE(f.fitted());
  CHECK_FALSE(f.degenerate());
  check_parameter(f, "shift", 0.6);
  check_parameter(f, "log_mean", -0.3);
  check_parameter(f, "log_sd", 0.5);
  CHECK(f.parameter_count == 3);
  CHECK(f.ks.p_value > 0.01);
  const DelayFitReport r = fit_delay_models(sample, true);
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "lognormal");
}

namespace {

/// A fit of a shift plus a (shape, scale) tail: fitted, not degenerate, each parameter
/// recovered (check_parameter) and the KS test passed.
void check_shape_scale_fit(const FamilyFit& f, double shift, double shape, double scale) {
  REQUIRE(f.fitted());
  CHECK_FALSE(f.degenerate());
  check_parameter(f, "shift", shift);
  check_parameter(f, "shape", shape);
  check_parameter(f, "scale", scale);
  CHECK(f.ks.p_value > 0.01);
}

}  // namespace

TEST_CASE("fit: gamma recovers shift shape and scale", "[fit][families]") {
  GammaDelay delay(std::vector<double>(20, 1.0), {.shift = 0.5, .shape = 2.5, .scale = 0.4});
  const FamilyFit f = fit_gamma(pooled(draw(delay, 1000, 22)));
  check_shape_scale_fit(f, 0.5, 2.5, 0.4);
}

TEST_CASE("fit: weibull recovers shift shape and scale", "[fit][families]") {
  WeibullDelay delay(std::vector<double>(20, 1.0), {.shift = 0.8, .shape = 1.8, .scale = 1.2});
  const FamilyFit f = fit_weibull(pooled(draw(delay, 1000, 23)));
  check_shape_scale_fit(f, 0.8, 1.8, 1.2);
}

TEST_CASE("fit: heterogeneous markov recovers factors and the chain", "[fit][families][heavy]") {
  std::vector<double> factors(12, 1.0);
  for (std::size_t i = 0; i < 4; ++i) {
    factors[i] = 1.6;
  }
  const MarkovDelay::Options m{.shift = 0.5,
                               .rate = 2.0,
                               .slow_shift = 2.0,
                               .slow_rate = 0.5,
                               .to_slow = 0.05,
                               .to_normal = 0.2};
  HeterogeneousMarkovDelay delay(std::vector<double>(12, 1.0), {.markov = m, .factors = factors});
  const auto sample = draw(delay, 1500, 24);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "heterogeneous_markov");
  REQUIRE(f.fitted());
  CHECK(f.parameter_count == 6 + 11);
  // Each factor is a ratio of two workers' means of 1500 persistent draws; the ratio's relative
  // s.e. (with the chain's autocorrelation, Var inflated ~4-fold) is about 0.05: within 0.15.
  for (std::size_t i = 0; i < factors.size(); ++i) {
    INFO("worker " << i);
    CHECK(std::abs(f.factors[i] / factors[i] - 1.0) < 0.15);
  }
  check_parameter(f, "to_slow", 0.05);
  check_parameter(f, "to_normal", 0.2);
  // The chain's times share their scale with the factors (fastest fitted worker at 1), so the
  // rates' s.e. (conditional on the factors) do not cover that scale's noise: compare the
  // scale-free mean excess of worker 4 (factor 1) per state, c·(1/λ), within 10%.
  const double c4 = f.factors[4] / f.factors[11];  // worker 11 has the truth's factor 1 too
  CHECK(c4 == Approx(1.0).epsilon(0.1));
  CHECK(f.factors[4] / f.value("rate") == Approx(1.0 / 2.0).epsilon(0.1));
  // The slow shift is profiled (a boundary estimate) and trades with the slow rate: 15%.
  CHECK(f.factors[4] / f.value("slow_rate") == Approx(1.0 / 0.5).epsilon(0.15));
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous_markov");
  CHECK(r.choice.starts_with("heterogeneous_markov: smallest AIC"));
}

TEST_CASE("fit: the report of two threads equals the families fitted one by one", "[fit][heavy]") {
  // 6 workers × 7 000 iterations: beyond the local-search limit (32 768 times), so the search
  // sample, the local sample and the polish all run. fit_delay_models fits the families two at a
  // time; each must be exactly what its own function returns on one thread.
  const auto sample = markov_sample(6, 7000, 41);
  const std::vector<double> all = pooled(sample);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit markov = fit_markov(sample);
  const std::vector<FamilyFit> alone = {fit_shifted_exponential(all),
                                        fit_pareto(all),
                                        fit_lognormal(all),
                                        fit_gamma(all),
                                        fit_weibull(all),
                                        fit_bimodal(all),
                                        markov,
                                        fit_heterogeneous(sample),
                                        fit_heterogeneous_markov(sample, &markov)};
  REQUIRE(r.fits.size() == alone.size());
  for (std::size_t i = 0; i < alone.size(); ++i) {
    INFO(alone[i].family);
    CHECK(r.fits[i].family == alone[i].family);
    CHECK(r.fits[i].log_likelihood == alone[i].log_likelihood);
    CHECK(r.fits[i].ks.statistic == alone[i].ks.statistic);
    REQUIRE(r.fits[i].parameters.size() == alone[i].parameters.size());
    for (std::size_t k = 0; k < alone[i].parameters.size(); ++k) {
      CHECK(r.fits[i].parameters[k].value == alone[i].parameters[k].value);
    }
    CHECK(r.fits[i].factors == alone[i].factors);
  }
  // The chain recovers its parameters through the polish, and the heterogeneous chain, which
  // nests it, fits at least as well.
  check_parameter(markov, "to_slow", 0.05);
  check_parameter(markov, "to_normal", 0.2);
  check_parameter(markov, "rate", 1.9);
  check_parameter(markov, "slow_rate", 0.5);
  CHECK(std::abs(markov.value("slow_shift") - 3.0) < 0.05);
  CHECK(family(r, "heterogeneous_markov").log_likelihood >= markov.log_likelihood);
}

TEST_CASE("fit: a markov chain fitted to i.i.d. data is flagged and never chosen",
          "[fit][families][heavy]") {
  // Independent over iterations, but 4 of 15 workers 2.5 times slower: the best chain is frozen
  // (each worker keeps its initial state), its transition probabilities at the 1e-9 clamp.
  std::vector<double> factors(15, 1.0);
  for (std::size_t i = 0; i < 4; ++i) {
    factors[i] = 2.5;
  }
  HeterogeneousDelay delay(std::vector<double>(15, 1.0), {0.7, 1.9, TailScaling::kLoad, factors});
  const auto sample = draw(delay, 400, 25);
  const DelayFitReport r = fit_delay_models(sample, true);
  const FamilyFit& f = family(r, "markov");
  REQUIRE(f.fitted());
  INFO(f.flag);
  CHECK(f.flag.starts_with("degenerate: to_slow at 1e-09"));
  CHECK(f.degenerate());
  REQUIRE(r.best.has_value());
  CHECK(r.fits[*r.best].family == "heterogeneous");
  CHECK_FALSE(r.fits[*r.best].degenerate());
  CHECK(r.choice.find("markov (degenerate)") != std::string::npos);
}

}  // namespace stragglersim::sim

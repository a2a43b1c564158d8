#pragma once
// Samples and checks shared by the tests of the delay-family estimators (fit/delay_fit.h).

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/exponential_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fit/delay_fit.h"
#include "models/base/random_stream.h"
#include "sim/delays/delay_model.h"

namespace stragglersim::sim::fit_testing {

/// `iterations` draws of every worker of `delay` at load 1: [worker][iteration].
inline std::vector<std::vector<double>> draw(DelayModel& delay,
                                             int iterations,
                                             std::uint64_t seed) {
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
inline std::vector<std::vector<double>> markov_sample(int workers,
                                                      int iterations,
                                                      std::uint64_t seed) {
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

/// The fit of family `name` in the report.
inline const FamilyFit& family(const DelayFitReport& r, const std::string& name) {
  for (const auto& f : r.fits) {
    if (f.family == name) {
      return f;
    }
  }
  FAIL("no family " << name);
  return r.fits.front();
}

/// Every worker's times in one sample.
inline std::vector<double> pooled(const std::vector<std::vector<double>>& s) {
  std::vector<double> all;
  for (const auto& w : s) {
    all.insert(all.end(), w.begin(), w.end());
  }
  return all;
}

/// |estimate − truth| ≤ 4 s.e. of the fitted parameter.
inline void check_parameter(const FamilyFit& fit, const std::string& name, double truth) {
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

/// A fit of a shift plus a (shape, scale) tail: fitted, not degenerate, each parameter
/// recovered (check_parameter) and the KS test passed.
inline void check_shape_scale_fit(const FamilyFit& f, double shift, double shape, double scale) {
  REQUIRE(f.fitted());
  CHECK_FALSE(f.degenerate());
  check_parameter(f, "shift", shift);
  check_parameter(f, "shape", shape);
  check_parameter(f, "scale", scale);
  CHECK(f.ks.p_value > 0.01);
}

}  // namespace stragglersim::sim::fit_testing

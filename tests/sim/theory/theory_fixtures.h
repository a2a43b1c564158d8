#pragma once
// Schemes, delays and the Monte Carlo of the stopping time through the real StoppingRule objects,
// shared by the tests of the iteration-time theory (sim/theory/iteration_time_theory.h).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "sim/delays/delay_model.h"
#include "sim/stopping_rule.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim::theory_testing {

inline SchemeDescription scheme(
    int n, CodeFamily code, int d, RuleKind rule, int r = 1, double tau = 0.0) {
  return {.workers = n, .code = code, .d = d, .rule = rule, .r = r, .deadline = tau};
}

inline ShiftedExponentialDelay exponential(const SchemeDescription& s,
                                           TailScaling tail = TailScaling::kLoad,
                                           double shift = 1.0,
                                           double rate = 1.0) {
  return ShiftedExponentialDelay(scheme_loads(s), {.shift = shift, .rate = rate, .tail = tail});
}

/// Monte Carlo of the stopping time through the real StoppingRule objects.
struct MonteCarlo {
  double mean = 0.0;
  double sd = 0.0;
  double mean_se = 0.0;
  double sd_se = 0.0;  ///< of the standard deviation, by the delta method
  double q = 0.0;      ///< fraction of (iteration, group) pairs erased
  double q2 = 0.0;     ///< fraction of (iteration, pair of groups) with both groups erased
  double draws = 0.0;
};

inline std::shared_ptr<const StoppingRule> make_rule(const SchemeDescription& s) {
  std::shared_ptr<const codes::GradientCode> code;
  if (s.code == CodeFamily::kFractionalRepetition) {
    code = std::make_shared<codes::FractionalRepetitionCode>(s.workers, s.d);
  } else {
    code = std::make_shared<codes::UncodedCode>(s.workers);
  }
  switch (s.rule) {
    case RuleKind::kAll:
      return std::make_shared<AllStopping>(s.workers);
    case RuleKind::kFirstR:
      return std::make_shared<FirstRStopping>(s.r);
    case RuleKind::kDeadline:
      return std::make_shared<DeadlineStopping>(s.deadline, s.workers);
    case RuleKind::kDecodable:
      return std::make_shared<DecodableStopping>(code);
    case RuleKind::kFirstROrDecodable:
      return std::make_shared<FirstROrDecodableStopping>(s.r, code);
  }
  return nullptr;
}

inline MonteCarlo simulate(const SchemeDescription& s,
                           DelayModel& delay,
                           int draws,
                           std::uint64_t seed) {
  REQUIRE(s.code != CodeFamily::kCyclic);
  const auto rule = make_rule(s);
  const auto n = static_cast<std::size_t>(s.workers);
  const int groups = s.workers / s.d;
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  std::vector<double> t(n);
  std::vector<int> order(n);
  std::vector<int> heard;
  std::vector<char> covered(static_cast<std::size_t>(groups));
  double sum = 0.0;
  double sum2 = 0.0;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(draws));
  double erased = 0.0;
  double erased2 = 0.0;
  for (int k = 0; k < draws; ++k) {
    delay.sample(static_cast<std::uint64_t>(k), rng, t);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return t[static_cast<std::size_t>(a)] < t[static_cast<std::size_t>(b)];
    });
    heard.clear();
    const double deadline = rule->deadline().value_or(std::numeric_limits<double>::infinity());
    double stop = deadline;
    for (const int i : order) {
      if (t[static_cast<std::size_t>(i)] > deadline) {
        break;
      }
      heard.push_back(i);
      if (rule->stop_after(heard)) {
        stop = t[static_cast<std::size_t>(i)];
        break;
      }
    }
    std::fill(covered.begin(), covered.end(), 0);
    for (const int i : heard) {
      covered[static_cast<std::size_t>(i / s.d)] = 1;
    }
    double e = 0.0;
    for (const char c : covered) {
      e += c == 0 ? 1.0 : 0.0;
    }
    erased += e;
    if (groups >= 2) {
      erased2 += e * (e - 1.0) / (static_cast<double>(groups) * (groups - 1));
    }
    times.push_back(stop);
    sum += stop;
  }
  MonteCarlo mc;
  mc.draws = draws;
  mc.mean = sum / draws;
  double m4 = 0.0;
  for (const double x : times) {
    sum2 += (x - mc.mean) * (x - mc.mean);
    m4 += std::pow(x - mc.mean, 4);
  }
  const double var = sum2 / draws;
  m4 /= draws;
  mc.sd = std::sqrt(var);
  mc.mean_se = std::sqrt(var / draws);
  mc.sd_se = std::sqrt((m4 - var * var) / draws) / (2.0 * mc.sd);
  mc.q = erased / (static_cast<double>(draws) * groups);
  mc.q2 = erased2 / draws;
  return mc;
}

/// Checks a prediction against Monte Carlo: mean and sd within 4 standard errors; q, q₂ within
/// 4 standard errors of a [0, 1] variable per iteration (the fraction of groups, or pairs of
/// groups, erased), bounded by the binomial sqrt(q(1 − q)/iterations).
inline void check_against(const IterationTimePrediction& p, const MonteCarlo& mc) {
  INFO("predicted mean " << p.mean << " sd " << p.sd << " q " << p.q << " q2 " << p.q2);
  INFO("simulated mean " << mc.mean << " ± " << mc.mean_se << " sd " << mc.sd << " ± " << mc.sd_se
                         << " q " << mc.q << " q2 " << mc.q2);
  if (mc.sd == 0.0) {  // a deadline that always binds: Z = τ exactly
    CHECK(p.mean == Approx(mc.mean).epsilon(1e-9));
    CHECK(p.sd < 1e-6 * p.mean);
  } else {
    CHECK(std::abs(p.mean - mc.mean) < 4.0 * mc.mean_se);
    CHECK(std::abs(p.sd - mc.sd) < 4.0 * mc.sd_se);
  }
  if (!std::isnan(p.q)) {
    CHECK(std::abs(p.q - mc.q) <= 4.0 * std::sqrt(p.q * (1.0 - p.q) / mc.draws) + 1e-12);
  }
  if (!std::isnan(p.q2)) {
    CHECK(std::abs(p.q2 - mc.q2) <= 4.0 * std::sqrt(p.q2 * (1.0 - p.q2) / mc.draws) + 1e-12);
  }
}

}  // namespace stragglersim::sim::theory_testing

// The Markov-modulated (persistent straggler) delay model (sim/delays/markov_delay.h): stationary
// law, spell lengths, marginal formulas, the draw order, and determinism.

#include "sim/delays/markov_delay.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "models/base/random_stream.h"

namespace stragglersim::sim {
namespace {

constexpr double kToSlow = 0.02;
constexpr double kToNormal = 0.2;

MarkovDelay::Options persistent() {
  return {.shift = 1.0,
          .rate = 1.0,
          .slow_shift = 4.0,
          .slow_rate = 0.25,
          .to_slow = kToSlow,
          .to_normal = kToNormal,
          .tail = TailScaling::kLoad};
}

TEST_CASE("markov delay: the first iteration's states follow the stationary law", "[sim][markov]") {
  constexpr int kWorkers = 20000;
  MarkovDelay d(std::vector<double>(kWorkers, 1.0), persistent());
  const double pi = kToSlow / (kToSlow + kToNormal);
  CHECK(d.stationary_slow() == pi);
  RandomEngine rng = make_engine(3, Stream::kDelays);
  std::vector<double> out(kWorkers);
  d.sample(1, rng, out);
  int slow = 0;
  for (int i = 0; i < kWorkers; ++i) slow += d.slow(i) ? 1 : 0;
  // Independent workers: binomial standard error.
  CHECK(std::abs(slow - kWorkers * pi) < 4.0 * std::sqrt(kWorkers * pi * (1.0 - pi)));
}

TEST_CASE("markov delay: long-run slow fraction and slow spells of mean 1/q", "[sim][markov]") {
  constexpr int kWorkers = 20;
  constexpr int kIterations = 50000;
  MarkovDelay d(std::vector<double>(kWorkers, 1.0), persistent());
  RandomEngine rng = make_engine(9, Stream::kDelays);
  std::vector<double> out(kWorkers);
  std::vector<int> run(kWorkers, 0);  // current slow spell length, 0 when normal
  std::vector<bool> seen_normal(kWorkers, false);
  double slow_total = 0.0;
  double spells = 0.0;
  double spell_sum = 0.0;
  for (int t = 0; t < kIterations; ++t) {
    d.sample(static_cast<std::uint64_t>(t + 1), rng, out);
    for (int i = 0; i < kWorkers; ++i) {
      const auto w = static_cast<std::size_t>(i);
      if (d.slow(i)) {
        slow_total += 1.0;
        ++run[w];
      } else {
        // A spell counts once it ended and began after a normal iteration (whole spells only).
        if (run[w] > 0 && seen_normal[w]) {
          spells += 1.0;
          spell_sum += run[w];
        }
        seen_normal[w] = true;
        run[w] = 0;
      }
    }
  }
  const double pi = kToSlow / (kToSlow + kToNormal);
  // The time average of a two-state chain's indicator has asymptotic variance
  // π(1 − π)(1 + ρ)/((1 − ρ)T) with ρ = 1 − p − q (its lag-1 autocorrelation).
  const double rho = 1.0 - kToSlow - kToNormal;
  const double count = static_cast<double>(kWorkers) * kIterations;
  const double se_fraction = std::sqrt(pi * (1.0 - pi) * (1.0 + rho) / (1.0 - rho) / count);
  CHECK(std::abs(slow_total / count - pi) < 4.0 * se_fraction);
  // Spell lengths are i.i.d. Geometric(q) on {1, 2, …}: mean 1/q, variance (1 − q)/q².
  REQUIRE(spells > 1000.0);
  const double se_spell = std::sqrt((1.0 - kToNormal) / (kToNormal * kToNormal) / spells);
  CHECK(std::abs(spell_sum / spells - 1.0 / kToNormal) < 4.0 * se_spell);
}

TEST_CASE("markov delay: marginal is the stationary mixture of the two shifted exponentials",
          "[sim][markov]") {
  const std::vector<double> loads = {1.0, 2.0};
  const MarkovDelay d(loads, persistent());
  const double pi = d.stationary_slow();
  const ShiftedExponentialDelay normal(loads, {.shift = 1.0, .rate = 1.0});
  const ShiftedExponentialDelay slow(loads, {.shift = 4.0, .rate = 0.25});
  for (int i = 0; i < 2; ++i) {
    for (const double t : {0.5, 1.5, 3.0, 6.0, 12.0}) {
      CHECK(d.cdf(i, t) == Approx((1.0 - pi) * normal.cdf(i, t) + pi * slow.cdf(i, t)));
    }
    const double mean = (1.0 - pi) * normal.mean(i) + pi * slow.mean(i);
    CHECK(d.mean(i) == Approx(mean));
    const double second = (1.0 - pi) * (normal.variance(i) + normal.mean(i) * normal.mean(i)) +
                          pi * (slow.variance(i) + slow.mean(i) * slow.mean(i));
    CHECK(d.variance(i) == Approx(second - mean * mean));
    CHECK(d.lower_bound(i) == normal.lower_bound(i));
  }
  // Worker 1 at load 2, tail load: slow-state delays start at 2·4 = 8.
  CHECK(d.cdf(1, 2.0) == Approx(0.0).margin(1e-15));
}

TEST_CASE("markov delay: draws in worker order from the run's stream, deterministically",
          "[sim][markov]") {
  const std::vector<double> loads(6, 1.0);
  const auto draw = [&](MarkovDelay::Options o, std::uint64_t seed) {
    MarkovDelay d(loads, o);
    RandomEngine rng = make_engine(seed, Stream::kDelays);
    std::vector<std::vector<double>> rows;
    std::vector<double> out(loads.size());
    for (int t = 0; t < 50; ++t) {
      d.sample(static_cast<std::uint64_t>(t + 1), rng, out);
      rows.push_back(out);
    }
    return rows;
  };
  CHECK(draw(persistent(), 4) == draw(persistent(), 4));
  CHECK(draw(persistent(), 4) != draw(persistent(), 5));
  // With to_slow = 0 no state is ever drawn (π = 0 and p = 0: Boost skips the draw), so the
  // stream is exactly the shifted exponential's: one Exp(1) per worker in worker order.
  auto never = persistent();
  never.to_slow = 0.0;
  ShiftedExponentialDelay se(loads, {.shift = 1.0, .rate = 1.0});
  RandomEngine rng = make_engine(4, Stream::kDelays);
  std::vector<double> out(loads.size());
  for (const auto& row : draw(never, 4)) {
    se.sample(1, rng, out);
    CHECK(row == out);
  }
  // Always slow (q = 0, π = 1): at the first iteration one Bernoulli(1) draw (one engine
  // output) before each worker's Exp(1); afterwards q = 0 draws nothing.
  auto stuck = persistent();
  stuck.to_normal = 0.0;
  RandomEngine twin = make_engine(4, Stream::kDelays);
  bool first = true;
  for (const auto& row : draw(stuck, 4)) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (first) twin.discard(1);
      std::vector<double> one(1);
      ShiftedExponentialDelay single({1.0}, {.shift = 4.0, .rate = 0.25});
      single.sample(1, twin, one);
      CHECK(row[i] == one[0]);
    }
    first = false;
  }
}

TEST_CASE("markov delay: options name the violated constraint", "[sim][markov]") {
  CHECK(MarkovDelay::Options{.to_slow = 1.5}.validate().value().field == "to_slow");
  CHECK(MarkovDelay::Options{.slow_rate = 0.0}.validate().value().field == "slow_rate");
  CHECK(MarkovDelay::Options{.slow_shift = -1.0}.validate().value().field == "slow_shift");
  const auto frozen = MarkovDelay::Options{.to_slow = 0.0, .to_normal = 0.0}.validate();
  CHECK(frozen.value().field == "to_normal");
  CHECK(frozen.value().expected ==
        "a number in (0, 1] when to_slow = 0 (the chain needs a stationary law)");
  CHECK_FALSE(MarkovDelay::Options{}.validate());
}

}  // namespace
}  // namespace stragglersim::sim

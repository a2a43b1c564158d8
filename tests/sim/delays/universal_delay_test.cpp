// The universal computation model (sim/delays/universal_delay.h): durations against integrals
// worked by hand on a small power trace, the Markov chain's stationary law and durations against
// their closed forms, equality with the fixed model, determinism, and the power file's errors.

#include "sim/delays/universal_delay.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fit/delay_trace.h"
#include "models/base/random_stream.h"
#include "sim/delays/fixed_delay.h"
#include "tests/test_support.h"

namespace stragglersim::sim {
namespace {

/// One worker: power 1 on [0, 2), 0 on [2, 3) (an outage), 2 on [3, 5), 0.5 on [5, 6); period 6,
/// 6.5 units of work per period.
std::shared_ptr<const PowerFile> universal_hand_trace() {
  auto file = std::make_shared<PowerFile>();
  file->workers.push_back(PowerTrace{{0.0, 2.0, 3.0, 5.0}, {1.0, 0.0, 2.0, 0.5}, 6.0});
  return file;
}

UniversalDelay universal_on_trace(std::vector<double> loads,
                                  std::shared_ptr<const PowerFile> trace,
                                  std::vector<double> speeds = {}) {
  UniversalDelay::Options o;
  o.trace = std::move(trace);
  o.speeds = std::move(speeds);
  return UniversalDelay(std::move(loads), o);
}

UniversalDelay universal_on_chain(std::vector<double> loads, PowerChain chain) {
  UniversalDelay::Options o;
  o.chain = std::move(chain);
  return UniversalDelay(std::move(loads), o);
}

/// On/off chain: power 1 or 0, on → off at rate kUniversalOff, off → on at kUniversalOn.
constexpr double kUniversalOff = 1.0;
constexpr double kUniversalOn = 2.0;

PowerChain universal_on_off() {
  return PowerChain{{1.0, 0.0}, {{0.0, kUniversalOff}, {kUniversalOn, 0.0}}};
}

}  // namespace

TEST_CASE("universal delay: durations on a power trace are the hand-worked integrals",
          "[sim][universal]") {
  UniversalDelay d = universal_on_trace({1.0}, universal_hand_trace());
  RandomEngine rng = make_engine(1, Stream::kDelays);
  // Inside the first segment: 1 unit at power 1.
  CHECK(d.duration_at(0, 0.5, rng) == Approx(1.0));
  // Crossing the outage: 1 unit by t = 2, nothing on [2, 3), 2 units at power 2 by t = 4.
  UniversalDelay three = universal_on_trace({3.0}, universal_hand_trace());
  CHECK(three.duration_at(0, 1.0, rng) == Approx(3.0));
  // Starting inside the outage: wait until 3, then 1 unit at power 2.
  CHECK(d.duration_at(0, 2.5, rng) == Approx(1.0));
  // Across the wrap: 1 unit on [4.5, 5), 0.5 on [5, 6), then 0.5 at power 1 from 6 (phase 0).
  UniversalDelay two = universal_on_trace({2.0}, universal_hand_trace());
  CHECK(two.duration_at(0, 4.5, rng) == Approx(2.0));
  // Whole periods: 2·6.5 + 1 units from 0 end at 2·6 + 1.
  UniversalDelay long_load = universal_on_trace({14.0}, universal_hand_trace());
  CHECK(long_load.duration_at(0, 0.0, rng) == Approx(13.0));
  // The first time the integral reaches the load: 6 units from 0 are done at 5 (the end of the
  // power-2 segment), not later.
  UniversalDelay six = universal_on_trace({6.0}, universal_hand_trace());
  CHECK(six.duration_at(0, 0.0, rng) == Approx(5.0));
  // A start many periods later sees the same phase.
  CHECK(d.duration_at(0, 6000.5, rng) == Approx(1.0));
}

TEST_CASE("universal delay: a speed divides the power and a trace draws nothing",
          "[sim][universal]") {
  UniversalDelay slow = universal_on_trace({0.5}, universal_hand_trace(), {0.5});
  RandomEngine rng = make_engine(2, Stream::kDelays);
  RandomEngine untouched = make_engine(2, Stream::kDelays);
  CHECK(slow.duration_at(0, 0.5, rng) == Approx(1.0));  // 0.5 / 0.5 = 1 unit at power 1
  std::vector<double> out(1);
  // From 1.5: 0.5 unit by 2, the outage until 3, 0.5 unit at power 2 by 3.25.
  slow.sample_at(1, 1.5, rng, out);
  CHECK(out[0] == Approx(1.75));
  CHECK(rng() == untouched());
  CHECK(slow.time_varying());
  CHECK_FALSE(slow.shifted_exponential().has_value());
  CHECK_FALSE(slow.independent_workers());  // a trace's workers share the clock
}

TEST_CASE("universal delay: the stationary marginal of a trace is the phase average",
          "[sim][universal]") {
  // Power 1 on [0, 1), 0 on [1, 2); load 0.5. D(s) = 0.5 on [0, 0.5], 1.5 on (0.5, 1),
  // 2.5 − s on [1, 2): mean 1, E[D²] = 7/6, P(D ≤ 0.5) = 1/4.
  auto file = std::make_shared<PowerFile>();
  file->workers.push_back(PowerTrace{{0.0, 1.0}, {1.0, 0.0}, 2.0});
  UniversalDelay d = universal_on_trace({0.5}, file);
  CHECK(d.mean(0) == Approx(1.0).epsilon(1e-6));
  CHECK(d.variance(0) == Approx(7.0 / 6.0 - 1.0).epsilon(1e-4));
  CHECK(d.cdf(0, 0.5) == Approx(0.25));
  CHECK(d.lower_bound(0) == Approx(0.5));
  CHECK_FALSE(d.atoms(0).empty());
  // sample() starts at a uniform phase: its draws follow that law.
  RandomEngine rng = make_engine(3, Stream::kDelays);
  stragglersim::testing::Sample phase_draws;
  std::vector<double> out(1);
  for (int k = 0; k < 20000; ++k) {
    d.sample(1, rng, out);
    phase_draws.add(out[0]);
  }
  CHECK(std::abs(phase_draws.mean() - 1.0) < 4.0 * phase_draws.se());
}

TEST_CASE("universal delay: a one-state chain is the fixed model", "[sim][universal]") {
  const std::vector<double> loads = {1.0, 2.0, 0.5, 1.0};
  UniversalDelay::Options o;
  o.chain = PowerChain{{0.5}};
  o.speeds.resize(loads.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    o.speeds[i] = 1.0 / std::sqrt(static_cast<double>(i + 1));
  }
  UniversalDelay universal(loads, o);
  FixedDelay::Options f;
  f.formula = FixedDelay::Formula::kSqrt;
  f.scale = 2.0;  // 1 / power
  FixedDelay fixed(loads, f);
  RandomEngine rng = make_engine(4, Stream::kDelays);
  RandomEngine untouched = make_engine(4, Stream::kDelays);
  std::vector<double> got(loads.size());
  std::vector<double> want(loads.size());
  for (double start : {0.0, 3.5, 100.0}) {
    universal.sample_at(1, start, rng, got);
    fixed.sample(1, rng, want);
    for (std::size_t i = 0; i < loads.size(); ++i) {
      CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
      CHECK(universal.mean(static_cast<int>(i)) == Approx(fixed.mean(static_cast<int>(i))));
      CHECK(universal.variance(static_cast<int>(i)) == Approx(0.0).margin(1e-12));
    }
  }
  CHECK(rng() == untouched());  // one state: no state or holding time to draw
}

TEST_CASE("universal delay: the stationary law solves the balance equations", "[sim][universal]") {
  UniversalDelay on_off = universal_on_chain({1.0}, universal_on_off());
  REQUIRE(on_off.stationary().size() == 2);
  CHECK(on_off.stationary()[0] == Approx(kUniversalOn / (kUniversalOn + kUniversalOff)));
  CHECK(on_off.stationary()[1] == Approx(kUniversalOff / (kUniversalOn + kUniversalOff)));
  PowerChain three{{1.0, 0.5, 0.0}};
  three.switch_rate = 0.7;
  UniversalDelay uniform = universal_on_chain({1.0}, three);
  for (const double p : uniform.stationary()) {
    CHECK(p == Approx(1.0 / 3.0));
  }
}

TEST_CASE("universal delay: on-off chain durations match the closed form", "[sim][universal]") {
  // Work w at power 1, on → off at rate a, off → on at rate b: the on-time is w, during which
  // N ~ Poisson(a·w) outages of mean 1/b begin; a start in the off state (probability a/(a+b))
  // first waits Exp(b). From a stationary start E[T] = w + a·w/b + π_off/b; from the end of a
  // computation (always on) E[T] = w + a·w/b.
  const double a = kUniversalOff;
  const double b = kUniversalOn;
  const double pi_off = a / (a + b);
  UniversalDelay d = universal_on_chain({1.0}, universal_on_off());
  RandomEngine rng = make_engine(5, Stream::kDelays);
  stragglersim::testing::Sample stationary;
  std::vector<double> out(1);
  for (int k = 0; k < 40000; ++k) {
    d.sample(1, rng, out);
    stationary.add(out[0]);
  }
  CHECK(std::abs(stationary.mean() - (1.0 + a / b + pi_off / b)) < 4.0 * stationary.se());
  // The lazy path, one computation after the other.
  stragglersim::testing::Sample back_to_back;
  double clock = d.duration_at(0, 0.0, rng);
  for (int k = 0; k < 40000; ++k) {
    const double t = d.duration_at(0, clock, rng);
    back_to_back.add(t);
    clock += t;
  }
  CHECK(std::abs(back_to_back.mean() - (1.0 + a / b)) < 4.0 * back_to_back.se());
  // Back to back, the worker computes whenever it is on: 40001 units of work at power 1 over
  // the whole path is its fraction of time on, π_on (a loose bound: the path is ~60000 s long).
  CHECK(std::abs(40001.0 / clock - b / (a + b)) < 0.02);
  // The numerical marginal (1024 Monte Carlo paths): within its own standard error.
  const double sd =
      std::sqrt(a * 2.0 / (b * b) + pi_off * 2.0 / (b * b) - pi_off * pi_off / (b * b));
  CHECK(std::abs(d.mean(0) - (1.0 + a / b + pi_off / b)) <
        4.0 * sd / std::sqrt(static_cast<double>(UniversalDelay::kMarginalPoints)));
}

TEST_CASE("universal delay: the same seed gives the same durations", "[sim][universal]") {
  auto durations = [](std::uint64_t seed) {
    PowerChain chain{{1.0, 0.25, 0.0}};
    chain.switch_rate = 0.3;
    UniversalDelay d = universal_on_chain({1.0, 1.0, 2.0}, chain);
    RandomEngine rng = make_engine(seed, Stream::kDelays);
    std::vector<double> all;
    std::vector<double> out(3);
    double clock = 0.0;
    for (int k = 0; k < 200; ++k) {
      d.sample_at(static_cast<std::uint64_t>(k), clock, rng, out);
      all.insert(all.end(), out.begin(), out.end());
      clock += out[0];
    }
    return all;
  };
  const std::vector<double> first = durations(9);
  CHECK(first == durations(9));
  CHECK(first != durations(10));
}

TEST_CASE("universal delay: chain options name the bad field", "[sim][universal]") {
  CHECK(PowerChain{{0.0, 0.0}}.validate()->field == "powers");
  CHECK(PowerChain{{1.0, -1.0}}.validate()->field == "powers/1");
  PowerChain zero{{1.0, 0.0}};
  zero.switch_rate = 0.0;
  CHECK(zero.validate()->field == "switch_rate");
  CHECK(PowerChain{{1.0, 0.0}, {{0.0, -1.0}, {1.0, 0.0}}}.validate()->field == "rates/0/1");
  CHECK(PowerChain{{1.0, 0.0}, {{0.0, 1.0}, {0.0, 0.0}}}.validate()->field == "rates/1");
  CHECK(PowerChain{{1.0, 0.0, 1.0}, {{0, 1, 0}, {1, 0, 0}, {1, 0, 0}}}.validate()->field ==
        "rates");
  CHECK_FALSE(universal_on_off().validate());
}

TEST_CASE("universal delay: a power file is read per worker with its period", "[sim][universal]") {
  const stragglersim::testing::TempDir dir("universal_delay");
  const std::string path =
      dir.write("p.csv", "time,worker,power\n0,1,2\n0,0,1\n\n2,0,0\n3,0,2\n5,0,0.5\n6,0,1\n");
  const PowerFile file = read_power_file(path, 2);
  REQUIRE(file.workers.size() == 2);
  CHECK(file.workers[0].start == std::vector<double>{0.0, 2.0, 3.0, 5.0});
  CHECK(file.workers[0].power == std::vector<double>{1.0, 0.0, 2.0, 0.5});
  CHECK(file.workers[0].period == 6.0);
  CHECK(file.workers[1].power == std::vector<double>{2.0});
  auto error = [&](const std::string& text, int workers = 2) {
    const std::string p = dir.write("bad.csv", text);
    return stragglersim::testing::message_of<TraceFileError>(
        [&] { (void)read_power_file(p, workers); });
  };
  const std::string bad = (dir.path() / "bad.csv").string();
  CHECK(error("time,worker,power\n0,0,1\n0,1,-1\n1,0,1\n") ==
        bad + ":3: negative power; got -1 (expected a number >= 0)");
  CHECK(error("time,worker,power\n0,0,1\n0,2,1\n") ==
        bad + ":3: worker '2' out of range (expected an integer in [0, 1]: the run's workers)");
  CHECK(error("time,worker,power\n0,0,1\n1,1,1\n") ==
        bad + ":0: worker 1 has no row at time 0 (expected every worker's power from time 0)");
  CHECK(error("time,worker,power\n0,0,1\n0,1,0\n1,1,0\n") ==
        bad +
            ":0: worker 1 has power 0 over the whole period (expected some power > 0, or its "
            "computations never end)");
  CHECK(error("time,worker,power\n0,0,1\n0,0,2\n1,1,1\n") ==
        bad + ":3: duplicate time 0 for worker 0 (expected one power per time)");
  CHECK(error("t,worker,power\n") ==
        bad +
            ":1: header has no 'time' column; got 't,worker,power' (expected a header with "
            "columns time,worker,power)");
}

}  // namespace stragglersim::sim

// The trace delay model (sim/delays/trace_delay.h): the load convention, cycle and bootstrap replay
// of both trace forms, and the empirical marginals (the theory on them:
// tests/sim/theory/trace_theory_test.cpp).

#include "sim/delays/trace_delay.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "models/base/random_stream.h"

namespace stragglersim::sim {
namespace {

/// A 3-worker iteration-form trace of 4 rows (row t holds distinct values).
DelayTrace iteration_trace() {
  DelayTrace t;
  t.path = "t.csv";
  t.workers = 3;
  t.has_iterations = true;
  t.per_iteration = {{0.5, 1.5, 0.25}, {2.0, 0.75, 1.0}, {0.125, 3.0, 0.5}, {1.25, 0.5, 4.0}};
  t.iterations = {1, 2, 3, 4};
  t.per_worker.assign(3, {});
  for (const auto& row : t.per_iteration) {
    for (std::size_t i = 0; i < 3; ++i) t.per_worker[i].push_back(row[i]);
  }
  return t;
}

/// A 3-worker pool trace with pools of different sizes.
DelayTrace pool_trace() {
  DelayTrace t;
  t.path = "pool.csv";
  t.workers = 3;
  t.per_worker = {{1.0, 2.0}, {0.5, 1.5, 2.5}, {2.25, 0.75, 1.75, 3.5}};
  return t;
}

std::vector<std::vector<double>> draws(TraceDelay& d, RandomEngine& rng, int count) {
  std::vector<std::vector<double>> out;
  std::vector<double> row(static_cast<std::size_t>(d.workers()));
  for (int k = 0; k < count; ++k) {
    d.sample(static_cast<std::uint64_t>(k + 1), rng, row);
    out.push_back(row);
  }
  return out;
}

TEST_CASE("trace delay: load scales the whole time (tail load) or only the shift (none)",
          "[sim][trace]") {
  const std::vector<double> loads = {1.0, 2.0, 3.0};
  const TraceDelay a(loads, iteration_trace(), {.tail = TailScaling::kLoad});
  const TraceDelay b(loads, iteration_trace(), {.tail = TailScaling::kNone});
  // b_i: the worker's smallest time: 0.125, 0.5, 0.25.
  CHECK(a.scaled(0, 0.5) == 0.5);
  CHECK(b.scaled(0, 0.5) == 0.5);
  CHECK(a.scaled(1, 0.75) == 1.5);
  CHECK(b.scaled(1, 0.75) == 0.75 + 1.0 * 0.5);
  CHECK(a.scaled(2, 1.0) == 3.0);
  CHECK(b.scaled(2, 1.0) == 1.0 + 2.0 * 0.25);
  CHECK(a.lower_bound(2) == 0.75);
  CHECK(b.lower_bound(2) == 0.75);  // ℓ·b_i in both conventions
}

TEST_CASE("trace delay: cycle replays the rows in order, wrapping, without drawing",
          "[sim][trace]") {
  const DelayTrace t = iteration_trace();
  TraceDelay d({1.0, 1.0, 1.0}, t, {.mode = TraceDelay::Mode::kCycle});
  RandomEngine rng = make_engine(7, Stream::kDelays);
  const RandomEngine before = rng;
  const auto got = draws(d, rng, 10);
  for (std::size_t k = 0; k < got.size(); ++k) {
    CHECK(got[k] == t.per_iteration[k % 4]);
  }
  CHECK(rng == before);

  const DelayTrace p = pool_trace();
  TraceDelay pool({1.0, 1.0, 1.0}, p, {.mode = TraceDelay::Mode::kCycle});
  const auto pooled = draws(pool, rng, 13);
  for (std::size_t k = 0; k < pooled.size(); ++k) {
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(pooled[k][i] == p.per_worker[i][k % p.per_worker[i].size()]);
    }
  }
}

TEST_CASE("trace delay: bootstrap draws whole rows uniformly, reproducibly per seed",
          "[sim][trace]") {
  const DelayTrace t = iteration_trace();
  const auto run = [&](std::uint64_t seed, int count) {
    TraceDelay d({1.0, 1.0, 1.0}, t, {.mode = TraceDelay::Mode::kBootstrap});
    RandomEngine rng = make_engine(seed, Stream::kDelays);
    return draws(d, rng, count);
  };
  constexpr int kCount = 40000;
  const auto got = run(11, kCount);
  CHECK(got == run(11, kCount));
  CHECK(got != run(12, kCount));
  std::vector<int> hits(4, 0);
  for (const auto& row : got) {
    const auto it = std::find(t.per_iteration.begin(), t.per_iteration.end(), row);
    REQUIRE(it != t.per_iteration.end());  // a whole measured row, never a mix
    ++hits[static_cast<std::size_t>(it - t.per_iteration.begin())];
  }
  // Each row with probability 1/4: binomial standard error sqrt(N·p·(1 − p)).
  const double se = std::sqrt(kCount * 0.25 * 0.75);
  for (const int h : hits) {
    CHECK(std::abs(h - kCount * 0.25) < 4.0 * se);
  }
}

TEST_CASE("trace delay: pool bootstrap draws each worker from its own times", "[sim][trace]") {
  const DelayTrace p = pool_trace();
  TraceDelay d({1.0, 1.0, 1.0}, p, {.mode = TraceDelay::Mode::kBootstrap});
  RandomEngine rng = make_engine(5, Stream::kDelays);
  constexpr int kCount = 30000;
  const auto got = draws(d, rng, kCount);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& pool = p.per_worker[i];
    std::vector<int> hits(pool.size(), 0);
    for (const auto& row : got) {
      const auto it = std::find(pool.begin(), pool.end(), row[i]);
      REQUIRE(it != pool.end());
      ++hits[static_cast<std::size_t>(it - pool.begin())];
    }
    const double prob = 1.0 / static_cast<double>(pool.size());
    const double se = std::sqrt(kCount * prob * (1.0 - prob));
    for (const int h : hits) {
      CHECK(std::abs(h - kCount * prob) <= 4.0 * se);
    }
  }
}

TEST_CASE("trace delay: cdf, mean, variance and lower bound of the empirical marginal",
          "[sim][trace]") {
  const TraceDelay d({1.0, 2.0, 1.0}, iteration_trace(), {.tail = TailScaling::kLoad});
  // Worker 1 at load 2: {3.0, 1.5, 6.0, 1.0}.
  CHECK(d.lower_bound(1) == 1.0);
  CHECK(d.cdf(1, 0.99) == 0.0);
  CHECK(d.cdf(1, 1.0) == 0.25);
  CHECK(d.cdf(1, 2.9) == 0.5);
  CHECK(d.cdf(1, 6.0) == 1.0);
  const double mean = (3.0 + 1.5 + 6.0 + 1.0) / 4.0;
  CHECK(d.mean(1) == Approx(mean));
  const double var = ((3.0 - mean) * (3.0 - mean) + (1.5 - mean) * (1.5 - mean) +
                      (6.0 - mean) * (6.0 - mean) + (1.0 - mean) * (1.0 - mean)) /
                     4.0;
  CHECK(d.variance(1) == Approx(var));
}

}  // namespace
}  // namespace stragglersim::sim

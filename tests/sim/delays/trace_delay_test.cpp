// The trace delay model (sim/delays/trace_delay.h): the load convention, cycle and bootstrap replay
// of both trace forms, and the empirical marginals (the theory on them:
// tests/sim/theory/trace_theory_test.cpp).

#include "sim/delays/trace_delay.h"

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "models/base/random_stream.h"
#include "tests/sim/delays/trace_fixtures.h"

namespace stragglersim::sim {
namespace {

using testing::iteration_trace;
using testing::pool_trace;

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

TEST_CASE(
    "trace delay: cycle from a start row replays (s + k) mod T and a random start is one draw",
    "[sim][trace]") {
  const DelayTrace t = iteration_trace();
  for (std::size_t start = 0; start < 4; ++start) {
    TraceDelay d({1.0, 1.0, 1.0}, t, {.mode = TraceDelay::Mode::kCycle, .start = start});
    RandomEngine rng = make_engine(3, Stream::kDelays);
    const RandomEngine before = rng;
    const auto got = draws(d, rng, 9);
    for (std::size_t k = 0; k < got.size(); ++k) {
      CHECK(got[k] == t.per_iteration[(start + k) % 4]);
    }
    CHECK(rng == before);
  }
  // Random start: the first row is the uniform draw boost makes from the same stream, and
  // nothing else is drawn; every row is a start for some seed, each about 1/4 of the time.
  std::vector<int> starts(4, 0);
  constexpr int kSeeds = 4000;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    TraceDelay d({1.0, 1.0, 1.0}, t, {.mode = TraceDelay::Mode::kCycle, .random_start = true});
    RandomEngine rng = make_engine(seed, Stream::kDelays);
    RandomEngine expected = rng;
    const auto first = boost::random::uniform_int_distribution<std::size_t>(0, 3)(expected);
    const auto got = draws(d, rng, 6);
    for (std::size_t k = 0; k < got.size(); ++k) {
      REQUIRE(got[k] == t.per_iteration[(first + k) % 4]);
    }
    REQUIRE(rng == expected);
    ++starts[first];
  }
  const double se = std::sqrt(kSeeds * 0.25 * 0.75);
  for (const int h : starts) {
    CHECK(std::abs(h - kSeeds * 0.25) < 4.0 * se);
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

namespace stragglersim::sim {
namespace {

/// T rows of n workers, every value distinct and encoding its row: worker i of row t measures
/// t + 1 + i/100.
DelayTrace numbered_trace(int rows, int workers) {
  DelayTrace t;
  t.path = "numbered.csv";
  t.workers = workers;
  t.has_iterations = true;
  t.per_worker.assign(static_cast<std::size_t>(workers), {});
  for (int r = 0; r < rows; ++r) {
    std::vector<double> row;
    for (int i = 0; i < workers; ++i) {
      row.push_back(r + 1.0 + i / 100.0);
      t.per_worker[static_cast<std::size_t>(i)].push_back(row.back());
    }
    t.per_iteration.push_back(row);
    t.iterations.push_back(r + 1);
  }
  return t;
}

/// The row a numbered_trace value came from.
int row_of(double value) { return static_cast<int>(std::floor(value)) - 1; }

TEST_CASE("trace delay: block mode replays blocks of L consecutive rows from uniform starts",
          "[sim][trace][block]") {
  const int rows = 7;
  const std::size_t length = 3;
  const DelayTrace t = numbered_trace(rows, 2);
  TraceDelay d({1.0, 1.0}, t, {.mode = TraceDelay::Mode::kBlock, .block = length});
  CHECK(d.block_length() == length);
  CHECK_FALSE(d.independent_workers());
  RandomEngine rng = make_engine(11, Stream::kDelays);
  const int count = 21000;
  const auto got = draws(d, rng, count);
  std::vector<int> frequency(rows, 0);
  std::vector<int> starts(rows, 0);
  for (int k = 0; k < count; ++k) {
    const auto& row = got[static_cast<std::size_t>(k)];
    const int r = row_of(row[0]);
    REQUIRE(row_of(row[1]) == r);  // both workers of one measured row
    ++frequency[static_cast<std::size_t>(r)];
    if (k % 3 == 0) {
      ++starts[static_cast<std::size_t>(r)];
    } else {
      // Inside a block: the next row, wrapping after the last.
      CHECK(r == (row_of(got[static_cast<std::size_t>(k - 1)][0]) + 1) % rows);
    }
  }
  // Starts are i.i.d. uniform: each row's count is Binomial(count/L, 1/T); so is every row's
  // frequency over the calls at one offset, hence the sum's sd ≤ L·sd of one offset.
  const double blocks = count / 3.0;
  const double p = 1.0 / rows;
  for (int r = 0; r < rows; ++r) {
    const auto s = static_cast<std::size_t>(r);
    CHECK(std::abs(starts[s] - blocks * p) < 4.0 * std::sqrt(blocks * p * (1.0 - p)));
    CHECK(std::abs(frequency[s] - count * p) < 4.0 * 3.0 * std::sqrt(blocks * p * (1.0 - p)));
  }
  // Reproducible per seed; another seed, other starts.
  TraceDelay again({1.0, 1.0}, t, {.mode = TraceDelay::Mode::kBlock, .block = length});
  RandomEngine same = make_engine(11, Stream::kDelays);
  CHECK(draws(again, same, 60) == std::vector<std::vector<double>>(got.begin(), got.begin() + 60));
  TraceDelay other({1.0, 1.0}, t, {.mode = TraceDelay::Mode::kBlock, .block = length});
  RandomEngine different = make_engine(12, Stream::kDelays);
  CHECK(draws(other, different, 60) !=
        std::vector<std::vector<double>>(got.begin(), got.begin() + 60));
}

TEST_CASE("trace delay: auto block length is the first lag under 2 over root T capped at T/4",
          "[sim][trace][block]") {
  // Alternating signs: ρ(1) ≈ −1, already below the band.
  std::vector<double> alternating;
  for (int t = 0; t < 400; ++t) alternating.push_back(t % 2 == 0 ? 1.0 : -1.0);
  CHECK(auto_block_length(alternating) == 1);
  // A square wave of runs of 8 (mean 0 over 25 periods): the products x_t·x_{t+k} are −1 at k of
  // every 8 positions, so ρ(k) ≈ (1 − k/T)(1 − k/4): ρ(3) ≈ 0.25 > 0.1 = 2/√400, ρ(4) ≈ 0.
  std::vector<double> square;
  for (int t = 0; t < 400; ++t) square.push_back((t / 8) % 2 == 0 ? 1.0 : -1.0);
  CHECK(auto_block_length(square) == 4);
  // A ramp stays correlated (ρ(T/4) ≈ 0.28 for a continuous ramp): the cap T/4 = 100.
  std::vector<double> ramp;
  for (int t = 0; t < 400; ++t) ramp.push_back(t);
  CHECK(auto_block_length(ramp) == 100);
  CHECK(auto_block_length(std::vector<double>(50, 2.0)) == 1);        // constant: no correlation
  CHECK(auto_block_length(std::vector<double>{1.0, 2.0, 3.0}) == 1);  // cap max(1, ⌊3/4⌋)
  // The model applies it to the per-iteration means of its trace.
  DelayTrace t;
  t.workers = 2;
  t.has_iterations = true;
  t.per_worker.assign(2, {});
  for (int k = 0; k < 400; ++k) {
    const double base = square[static_cast<std::size_t>(k)] + 3.0;
    t.per_iteration.push_back({base - 0.5, base + 0.5});
    t.per_worker[0].push_back(base - 0.5);
    t.per_worker[1].push_back(base + 0.5);
    t.iterations.push_back(k);
  }
  const TraceDelay block({1.0, 1.0}, t, {.mode = TraceDelay::Mode::kBlock});
  CHECK(block.block_length() == 4);
  CHECK(iteration_means(t)[8] == Approx(2.0));
}

TEST_CASE("trace delay: empirical mode draws each worker independently from its own times",
          "[sim][trace][empirical]") {
  const int rows = 5;
  const DelayTrace t = numbered_trace(rows, 3);
  TraceDelay d({1.0, 1.0, 1.0}, t, {.mode = TraceDelay::Mode::kEmpirical});
  CHECK(d.rows().empty());
  CHECK(d.independent_workers());
  RandomEngine rng = make_engine(5, Stream::kDelays);
  const int count = 20000;
  const auto got = draws(d, rng, count);
  std::vector<std::vector<int>> frequency(3, std::vector<int>(rows, 0));
  int same_row = 0;
  for (const auto& row : got) {
    for (std::size_t i = 0; i < 3; ++i) {
      // Worker i only ever gets its own measured times.
      REQUIRE(std::abs((row[i] - std::floor(row[i])) - static_cast<double>(i) / 100.0) < 1e-9);
      ++frequency[i][static_cast<std::size_t>(row_of(row[i]))];
    }
    same_row += row_of(row[0]) == row_of(row[1]) ? 1 : 0;
  }
  const double p = 1.0 / rows;
  const double sd = std::sqrt(count * p * (1.0 - p));
  for (std::size_t i = 0; i < 3; ++i) {
    for (int r = 0; r < rows; ++r) {
      CHECK(std::abs(frequency[i][static_cast<std::size_t>(r)] - count * p) < 4.0 * sd);
    }
  }
  // Independent workers: two of them share a row with probability 1/T (not 1, as rows would).
  CHECK(std::abs(same_row - count * p) < 4.0 * sd);
}

TEST_CASE("trace delay: rows holds the scaled table in the modes that replay whole rows",
          "[sim][trace]") {
  const DelayTrace t = iteration_trace();
  for (const auto mode :
       {TraceDelay::Mode::kCycle, TraceDelay::Mode::kBootstrap, TraceDelay::Mode::kBlock}) {
    const TraceDelay d({1.0, 2.0, 1.0}, t, {.mode = mode, .block = 2});
    REQUIRE(d.rows().size() == 12);
    CHECK_FALSE(d.independent_workers());
    for (std::size_t k = 0; k < 4; ++k) {
      for (std::size_t i = 0; i < 3; ++i) {
        CHECK(d.rows()[k * 3 + i] == d.scaled(static_cast<int>(i), t.per_iteration[k][i]));
      }
    }
  }
  // Pools: whole rows only for cycle over equal counts.
  CHECK(
      TraceDelay({1.0, 1.0, 1.0}, pool_trace(), {.mode = TraceDelay::Mode::kCycle}).rows().empty());
  DelayTrace equal;
  equal.workers = 2;
  equal.per_worker = {{1.0, 2.0}, {3.0, 4.0}};
  const TraceDelay pool({1.0, 1.0}, equal, {.mode = TraceDelay::Mode::kCycle});
  CHECK(std::vector<double>(pool.rows().begin(), pool.rows().end()) ==
        std::vector<double>{1.0, 3.0, 2.0, 4.0});
  CHECK(TraceDelay({1.0, 1.0}, equal, {.mode = TraceDelay::Mode::kBootstrap}).rows().empty());
}

}  // namespace
}  // namespace stragglersim::sim

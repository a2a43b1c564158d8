#include "sim/simulated_cluster.h"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "codes/bernoulli_gradient_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/fastpath/delay_only.h"
#include "sim/scheme.h"
#include "tests/sim/table_delay.h"

namespace stragglersim::sim {
namespace {

double harmonic(int m) {
  double h = 0.0;
  for (int i = 1; i <= m; ++i) {
    h += 1.0 / i;
  }
  return h;
}

struct Case {
  const char* name;
  int d;     // 1: uncoded
  int rule;  // 0 all, 1 decodable, 2 first_r
  TailScaling tail;
  double expected;  // docs/model.md §6
};

std::shared_ptr<const codes::GradientCode> make_code(int n, int d) {
  if (d == 1) {
    return std::make_shared<codes::UncodedCode>(n);
  }
  return std::make_shared<codes::FractionalRepetitionCode>(n, d);
}

std::shared_ptr<const StoppingRule> make_rule(
    int rule, int r, const std::shared_ptr<const codes::GradientCode>& code) {
  switch (rule) {
    case 0:
      return std::make_shared<AllStopping>(code->workers());
    case 1:
      return std::make_shared<DecodableStopping>(code);
    default:
      return std::make_shared<FirstRStopping>(r);
  }
}

}  // namespace

TEST_CASE("sim: mean iteration time matches the closed forms of docs/model.md §6",
          "[sim][cluster][statistical]") {
  constexpr int n = 64;
  constexpr int d = 2;
  constexpr int r = 32;
  constexpr double a = 1.0;
  constexpr double lambda = 1.0;
  const double hn = harmonic(n);
  const std::vector<Case> cases = {
      {"uncoded A", 1, 0, TailScaling::kLoad, a + hn / lambda},
      {"uncoded B", 1, 0, TailScaling::kNone, a + hn / lambda},
      {"FRC A", d, 1, TailScaling::kLoad, d * a + harmonic(n / d) / lambda},
      {"FRC B", d, 1, TailScaling::kNone, d * a + harmonic(n / d) / (d * lambda)},
      {"ErasureHead A", d, 2, TailScaling::kLoad, d * (a + (hn - harmonic(n - r)) / lambda)},
      {"ErasureHead B", d, 2, TailScaling::kNone, d * a + (hn - harmonic(n - r)) / lambda},
  };
  // The design's worked numbers for n = 64, d = 2, r = 32, Model A.
  CHECK(cases[0].expected == Approx(5.7439).margin(5e-5));
  CHECK(cases[2].expected == Approx(6.0585).margin(5e-5));
  CHECK(cases[4].expected == Approx(3.3708).margin(5e-5));

  constexpr int iterations = 20000;
  for (const Case& c : cases) {
    INFO(c.name);
    const auto code = make_code(n, c.d);
    const auto rule = make_rule(c.rule, r, code);
    auto delays = [&] {
      return std::make_unique<ShiftedExponentialDelay>(
          code->loads(),
          ShiftedExponentialDelay::Options{.shift = a, .rate = lambda, .tail = c.tail});
    };
    // Through the event engine.
    SimulatedCluster cluster(delays(), rule, StragglerPolicy::kCancel, 2024);
    DelayOnlyStatistics engine;
    for (int t = 0; t < iterations; ++t) {
      engine.add(cluster.next_iteration().iteration_time);
    }
    CHECK(std::abs(engine.mean - c.expected) < 4.0 * engine.standard_error());
    // Through the fast path, which must reproduce the engine's times exactly.
    DelayOnlySimulator fast(delays(), rule, code, StragglerPolicy::kCancel, 2024);
    const DelayOnlyStatistics stats = fast.run(iterations);
    CHECK(fast.uses_selection());
    CHECK(stats.mean == engine.mean);
    CHECK(std::abs(stats.mean - c.expected) < 4.0 * stats.standard_error());
  }
}

TEST_CASE("sim: the fraction of erased groups under first_r is C(n-d r)/C(n r)",
          "[sim][cluster][statistical]") {
  for (const auto& [n, d, r] :
       std::vector<std::tuple<int, int, int>>{{64, 2, 32}, {30, 3, 15}, {12, 4, 5}}) {
    INFO("n=" << n << " d=" << d << " r=" << r);
    const auto code = std::make_shared<codes::FractionalRepetitionCode>(n, d);
    const auto rule = std::make_shared<FirstRStopping>(r);
    double q = 1.0;
    for (int i = 0; i < d; ++i) {
      q *= static_cast<double>(n - r - i) / (n - i);
    }
    if (n == 64) {
      CHECK(q == Approx(0.246032).margin(1e-6));
    }
    constexpr int iterations = 20000;
    SimulatedCluster cluster(std::make_unique<ShiftedExponentialDelay>(
                                 code->loads(),
                                 ShiftedExponentialDelay::Options{
                                     .shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
                             rule,
                             StragglerPolicy::kCancel,
                             99);
    // Per-iteration erased fraction: mean over iterations, SE from its sample variance.
    DelayOnlyStatistics erased;
    const int groups = n / d;
    for (int t = 0; t < iterations; ++t) {
      const auto& timing = cluster.next_iteration();
      const auto dec = code->decode_optimal(timing.heard);
      erased.add(1.0 - static_cast<double>(dec.partitions_covered / d) / groups);
    }
    CHECK(std::abs(erased.mean - q) < 4.0 * erased.standard_error());
    // The fast path counts the same coverage.
    DelayOnlySimulator fast(std::make_unique<ShiftedExponentialDelay>(
                                code->loads(),
                                ShiftedExponentialDelay::Options{
                                    .shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
                            rule,
                            code,
                            StragglerPolicy::kCancel,
                            99);
    const auto stats = fast.run(iterations);
    CHECK(stats.erasure_fraction() == Approx(erased.mean).epsilon(1e-12));
  }
}

TEST_CASE("sim: deadline and first_r_or_decodable and finish agree between engine and fast path",
          "[sim][cluster]") {
  const int n = 24;
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(n, 3);
  const std::vector<std::shared_ptr<const StoppingRule>> rules = {
      std::make_shared<DeadlineStopping>(4.5, n),
      std::make_shared<FirstROrDecodableStopping>(12, code),
      std::make_shared<FirstROrDecodableStopping>(20, code),
      std::make_shared<DecodableStopping>(code),
  };
  for (const auto policy :
       {StragglerPolicy::kCancel, StragglerPolicy::kFinish, StragglerPolicy::kDrain}) {
    for (const auto& rule : rules) {
      INFO(rule->name() << " policy " << static_cast<int>(policy));
      auto delays = [&] {
        return std::make_unique<ShiftedExponentialDelay>(
            code->loads(),
            ShiftedExponentialDelay::Options{
                .shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
      };
      SimulatedCluster cluster(delays(), rule, policy, 5);
      DelayOnlySimulator fast(delays(), rule, code, policy, 5);
      std::vector<DelayOnlyIteration> fast_its;
      fast.run(500, [&](const DelayOnlyIteration& it) { fast_its.push_back(it); });
      for (const auto& f : fast_its) {
        const auto& e = cluster.next_iteration();
        REQUIRE(e.iteration_time == f.iteration_time);
        REQUIRE(e.wall_time == f.wall_time);
        REQUIRE(static_cast<int>(e.heard.size()) == f.workers_heard);
      }
    }
  }
}

TEST_CASE("sim: straggler policies", "[sim][cluster]") {
  // Four uncoded workers, shifted-exponential delays (shift 1, rate 1, Model A), first_r with
  // r = 2: two workers straggle in every iteration. The same seed gives the three clusters the
  // same delays.
  const auto code = std::make_shared<codes::UncodedCode>(4);
  const auto rule = std::make_shared<FirstRStopping>(2);
  auto delays = [&] {
    return std::make_unique<ShiftedExponentialDelay>(
        code->loads(),
        ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
  };
  SimulatedCluster cancel(delays(), rule, StragglerPolicy::kCancel, 1);
  SimulatedCluster finish(delays(), rule, StragglerPolicy::kFinish, 1);
  SimulatedCluster drain(delays(), rule, StragglerPolicy::kDrain, 1);
  // First iteration: identical for all three policies, drain's wall time is the last arrival.
  const auto c1 = cancel.next_iteration();
  const auto f1 = finish.next_iteration();
  const auto d1 = drain.next_iteration();
  CHECK(c1.iteration_time == f1.iteration_time);
  CHECK(c1.iteration_time == d1.iteration_time);
  std::vector<double> sorted = c1.delays;
  std::sort(sorted.begin(), sorted.end());
  CHECK(c1.iteration_time == sorted[1]);
  CHECK(d1.wall_time == sorted[3]);
  CHECK(c1.wall_time == c1.iteration_time);
  // Second iteration: under finish, the two stragglers start late by (T_i − stop).
  const auto c2 = cancel.next_iteration();
  const auto f2 = finish.next_iteration();
  std::vector<double> arrivals(4);
  for (int i = 0; i < 4; ++i) {
    const auto w = static_cast<std::size_t>(i);
    arrivals[w] = std::max(0.0, c1.delays[w] - c1.iteration_time) + c2.delays[w];
  }
  std::sort(arrivals.begin(), arrivals.end());
  CHECK(f2.iteration_time == Approx(arrivals[1]).epsilon(1e-14));
  CHECK(cancel.time() == Approx(c1.iteration_time + c2.iteration_time));
  CHECK(drain.wall_time() > drain.time());
}

namespace {

/// A time-varying model whose worker i takes i + 1 seconds, recording every start it is asked
/// about (worker, start).
class ClusterClockDelay final : public DelayModel {
 public:
  explicit ClusterClockDelay(std::vector<std::pair<int, double>>* starts) : starts_(starts) {}
  [[nodiscard]] std::string name() const override { return "clock"; }
  [[nodiscard]] int workers() const override { return 3; }
  void sample(std::uint64_t /*iteration*/,
              RandomEngine& /*rng*/,
              std::span<double> /*out*/) override {
    FAIL("a time-varying model is asked at a start");
  }
  [[nodiscard]] double cdf(int /*worker*/, double /*t*/) const override { return 0.0; }
  [[nodiscard]] double mean(int /*worker*/) const override { return 1.0; }
  [[nodiscard]] double variance(int /*worker*/) const override { return 0.0; }
  [[nodiscard]] double lower_bound(int /*worker*/) const override { return 0.0; }
  [[nodiscard]] bool time_varying() const override { return true; }
  double duration_at(int worker, double start, RandomEngine& /*rng*/) override {
    starts_->emplace_back(worker, start);
    return worker + 1.0;
  }
  void sample_at(std::uint64_t /*iteration*/,
                 double start,
                 RandomEngine& rng,
                 std::span<double> out) override {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = duration_at(static_cast<int>(i), start, rng);
    }
  }

 private:
  std::vector<std::pair<int, double>>* starts_;
};

}  // namespace

TEST_CASE("sim: a time-varying delay model is asked at each computation's start",
          "[sim][cluster]") {
  // Workers take 1, 2, 3 s; first_r with r = 1 stops after 1 s each iteration.
  const auto rule = std::make_shared<FirstRStopping>(1);
  std::vector<std::pair<int, double>> starts;
  SimulatedCluster cancel(
      std::make_unique<ClusterClockDelay>(&starts), rule, StragglerPolicy::kCancel, 1);
  (void)cancel.next_iteration();
  (void)cancel.next_iteration();
  using Starts = std::vector<std::pair<int, double>>;
  CHECK(starts == Starts{{0, 0.0}, {1, 0.0}, {2, 0.0}, {0, 1.0}, {1, 1.0}, {2, 1.0}});
  // Under finish, a straggler starts when it is free: worker 1 at 2, worker 2 at 3.
  starts.clear();
  SimulatedCluster finish(
      std::make_unique<ClusterClockDelay>(&starts), rule, StragglerPolicy::kFinish, 1);
  (void)finish.next_iteration();
  (void)finish.next_iteration();
  CHECK(starts == Starts{{0, 0.0}, {1, 0.0}, {2, 0.0}, {0, 1.0}, {1, 2.0}, {2, 3.0}});
  // Under drain, the next broadcast waits for every worker: the wall clock, 3 s.
  starts.clear();
  SimulatedCluster drain(
      std::make_unique<ClusterClockDelay>(&starts), rule, StragglerPolicy::kDrain, 1);
  (void)drain.next_iteration();
  (void)drain.next_iteration();
  CHECK(starts == Starts{{0, 0.0}, {1, 0.0}, {2, 0.0}, {0, 3.0}, {1, 3.0}, {2, 3.0}});
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {

TEST_CASE("sim: sample-bracketed selection equals nth_element for every rank",
          "[sim][delay_only]") {
  RandomEngine rng(42);
  std::vector<double> scratch;
  std::vector<double> sample;
  for (const std::size_t n : {std::size_t{5}, std::size_t{3000}, std::size_t{70000}}) {
    std::vector<double> values(n);
    boost::random::exponential_distribution<double> e(1.0);
    for (auto& v : values) {
      v = e(rng);
    }
    // Ties and a sorted run exercise the bracket's edges.
    for (std::size_t i = 0; i < n / 10; ++i) {
      values[i] = 0.5;
    }
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t step = std::max<std::size_t>(1, n / 97);
    for (std::size_t r = 1; r <= n; r += step) {
      REQUIRE(select_rth(values, static_cast<int>(r), scratch, sample) == sorted[r - 1]);
    }
    REQUIRE(select_rth(values, static_cast<int>(n), scratch, sample) == sorted[n - 1]);
    REQUIRE(select_rth(values, 1, scratch, sample) == sorted[0]);
  }
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {
namespace {

/// A collective over `n` ranks: `kind` with latency `alpha` and bandwidth `bandwidth` (bytes/s),
/// over 24 elements of one byte each.
CollectiveAggregation cluster_collective(collectives::CollectiveKind kind,
                                         int n,
                                         double alpha,
                                         double bandwidth) {
  CollectiveAggregation c;
  c.options.kind = kind;
  c.options.link.latency = alpha;
  c.options.link.bandwidth = bandwidth;
  c.schedule =
      std::make_shared<const collectives::Schedule>(collectives::build_schedule(c.options, n, 24));
  c.bytes_per_element = 1.0;
  return c;
}

/// Two iterations' delays of four workers (ties included: workers 1 and 3 in the second).
const std::vector<std::vector<double>> kCollectiveTable = {{3.0, 1.0, 4.0, 2.0},
                                                           {0.5, 2.5, 1.5, 2.5}};

/// The rule's stop on compute ends `t`, written out here: all → the largest; first_r → the r-th
/// smallest; deadline τ → min(τ, the largest).
double collective_stop(int rule, std::vector<double> t) {
  std::sort(t.begin(), t.end());
  switch (rule) {
    case 0:
      return t.back();
    case 1:
      return t[1];  // r = 2
    default:
      return std::min(2.0, t.back());  // τ = 2
  }
}

std::shared_ptr<const StoppingRule> collective_rule(int rule) {
  switch (rule) {
    case 0:
      return std::make_shared<AllStopping>(4);
    case 1:
      return std::make_shared<FirstRStopping>(2);
    default:
      return std::make_shared<DeadlineStopping>(2.0, 4);
  }
}

}  // namespace

TEST_CASE("sim: with a collective the iteration lasts until the last rank completes",
          "[sim][cluster][aggregation]") {
  using collectives::CollectiveKind;
  for (const CollectiveKind kind : {CollectiveKind::kRing, CollectiveKind::kTree}) {
    for (int rule = 0; rule < 3; ++rule) {
      INFO("kind " << collectives::kind_name(kind) << ", rule " << rule);
      const CollectiveAggregation c = cluster_collective(kind, 4, 0.125, 32.0);
      SimulatedCluster cluster(std::make_unique<testing::TableDelay>(kCollectiveTable),
                               collective_rule(rule),
                               StragglerPolicy::kCancel,
                               1,
                               {},
                               std::nullopt,
                               c);
      double total = 0.0;
      for (const auto& delays : kCollectiveTable) {
        const IterationTiming& timing = cluster.next_iteration();
        // ready_i = min(T_i, t*), then the schedule's completions, independently here.
        const double stop = collective_stop(rule, delays);
        std::vector<double> ready(4);
        for (std::size_t i = 0; i < 4; ++i) {
          ready[i] = std::min(delays[i], stop);
        }
        std::vector<double> completion(4);
        collectives::complete_times(*c.schedule, c.options, 1.0, ready, completion);
        const double last = *std::max_element(completion.begin(), completion.end());
        CHECK(timing.ready == ready);
        CHECK(timing.completion == completion);
        CHECK(timing.iteration_time == last);
        CHECK(timing.wall_time == last);
        CHECK(last >= stop + 0.125);
        total += last;
      }
      CHECK(cluster.time() == total);
    }
  }
}

TEST_CASE("sim: a free collective ends every iteration at the parameter server's stop",
          "[sim][cluster][aggregation]") {
  // Zero latency and an infinite bandwidth: every rank completes when the last rank is ready,
  // which is the stop (the ranks not heard join at it).
  for (int rule = 0; rule < 3; ++rule) {
    INFO("rule " << rule);
    SimulatedCluster server(std::make_unique<testing::TableDelay>(kCollectiveTable),
                            collective_rule(rule),
                            StragglerPolicy::kCancel,
                            1);
    SimulatedCluster ring(
        std::make_unique<testing::TableDelay>(kCollectiveTable),
        collective_rule(rule),
        StragglerPolicy::kCancel,
        1,
        {},
        std::nullopt,
        cluster_collective(
            collectives::CollectiveKind::kRing, 4, 0.0, std::numeric_limits<double>::infinity()));
    for (int t = 0; t < 4; ++t) {
      const IterationTiming& ps = server.next_iteration();
      const double stop = ps.iteration_time;
      const std::vector<int> heard = ps.heard;
      const IterationTiming& timing = ring.next_iteration();
      CHECK(timing.iteration_time == stop);
      CHECK(timing.heard == heard);
    }
  }
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {

TEST_CASE("scheme: the optimal decoder's weights are decode_optimal's for every heard set",
          "[sim][scheme]") {
  // Scheme::decode takes the outcome (no SVD for the condition number's value): the same
  // weights, α, error and exactness on every subset of the workers of a BGC and a CRC code.
  const std::vector<std::shared_ptr<const codes::GradientCode>> scheme_test_codes = {
      std::make_shared<const codes::BernoulliGradientCode>(6, 6, 2.0, 11),
      std::make_shared<const codes::CyclicRepetitionCode>(7, 2, 3)};
  for (const auto& code : scheme_test_codes) {
    Scheme scheme;
    scheme.code = code;
    scheme.decoder = DecoderKind::kOptimal;
    const int n = code->workers();
    for (unsigned mask = 1; mask < (1U << static_cast<unsigned>(n)); ++mask) {
      std::vector<int> heard;
      for (int w = 0; w < n; ++w) {
        if (((mask >> static_cast<unsigned>(w)) & 1U) != 0) {
          heard.push_back(w);
        }
      }
      INFO(code->name() << " mask " << mask);
      const codes::Decoding d = scheme.decode(heard, 1);
      const codes::Decoding opt = code->decode_optimal(heard);
      CHECK(d.weights == opt.weights);
      CHECK(d.alpha == opt.alpha);
      CHECK(d.error == opt.error);
      CHECK(d.exact == opt.exact);
    }
  }
}

}  // namespace stragglersim::sim

// Dynamic clustering (docs/model.md §5 "dynamic_frc"): a hand-computed history of the regrouper,
// the spread of every ranking over the groups, the cluster drawing each position's delay from the
// worker playing it, persistent stragglers spread over the groups, exact decoding, reproducibility,
// and the config.

#include "sim/regrouping.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "codes/dynamic_frc_code.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/simulated_cluster.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::sim {
namespace {

std::vector<int> frc_groups(int n, int d) {
  std::vector<int> groups(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    groups[static_cast<std::size_t>(p)] = p / d;
  }
  return groups;
}

std::vector<int> worker_at(const Regrouper& r) {
  return {r.worker_at().begin(), r.worker_at().end()};
}

/// n workers with slowdown `factors` (shift 1, rate 1) under `rule`, regrouped every `every`
/// iterations into FRC groups of d (every = 0: fixed groups).
SimulatedCluster cluster_of(const std::vector<double>& factors,
                            std::shared_ptr<const StoppingRule> rule,
                            int d,
                            int every,
                            std::uint64_t seed) {
  const int n = static_cast<int>(factors.size());
  HeterogeneousDelay::Options o;
  o.factors = factors;
  std::optional<RegroupOptions> regroup;
  if (every > 0) {
    regroup = RegroupOptions{every, frc_groups(n, d)};
  }
  return {std::make_unique<HeterogeneousDelay>(std::vector<double>(factors.size(), 1.0), o),
          std::move(rule),
          StragglerPolicy::kCancel,
          seed,
          NetworkOptions{},
          regroup};
}

}  // namespace

TEST_CASE("regrouping: a hand-computed history", "[sim][regrouping]") {
  // n = 6, groups {0,1} {2,3} {4,5}, K = 2. Epoch 1 (identity): heard [5 2 0], then [2 5 4 1]:
  // lateness w0 = 2+6, w1 = 6+3, w2 = 1+0, w3 = 6+6, w4 = 6+2, w5 = 0+1. Ranking w2 w5 w0 w4 w1 w3
  // dealt over 3 groups: positions 0 2 4 1 3 5.
  Regrouper r(RegroupOptions{2, frc_groups(6, 2)});
  CHECK(worker_at(r) == std::vector<int>{0, 1, 2, 3, 4, 5});
  r.observe(std::vector<int>{5, 2, 0});
  CHECK(worker_at(r) == std::vector<int>{0, 1, 2, 3, 4, 5});  // mid-epoch: unchanged
  r.observe(std::vector<int>{2, 5, 4, 1});
  CHECK(r.regroupings() == 1);
  CHECK(worker_at(r) == std::vector<int>{2, 4, 5, 1, 0, 3});
  // Epoch 2: positions [0 1] are workers 2 and 4; then nobody. Lateness w2 = 0+6, w4 = 1+6, the
  // rest 12: ranking w2 w4 w0 w1 w3 w5 (ties by index). The counts were reset.
  r.observe(std::vector<int>{0, 1});
  r.observe(std::vector<int>{});
  CHECK(r.regroupings() == 2);
  CHECK(worker_at(r) == std::vector<int>{2, 1, 4, 3, 0, 5});
}

TEST_CASE("regrouping: every ranking is dealt one tier per group", "[sim][regrouping]") {
  // K = 1: each iteration's arrival order alone ranks the workers. Whatever the order (random
  // heard sets of every size), group g holds the workers ranked g, g + G and g + 2G, in that
  // order of its positions.
  const int n = 12;
  const int d = 3;
  const int groups = n / d;
  Regrouper r(RegroupOptions{1, frc_groups(n, d)});
  std::mt19937 rng(5);
  for (int t = 0; t < 300; ++t) {
    std::vector<int> positions(static_cast<std::size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    std::shuffle(positions.begin(), positions.end(), rng);
    positions.resize(static_cast<std::size_t>(t % (n + 1)));
    // The ranking written out: heard workers in arrival order, then the others by index.
    const std::vector<int> before = worker_at(r);
    std::vector<int> ranking;
    for (const int p : positions) {
      ranking.push_back(before[static_cast<std::size_t>(p)]);
    }
    for (int w = 0; w < n; ++w) {
      if (std::find(ranking.begin(), ranking.end(), w) == ranking.end()) {
        ranking.push_back(w);
      }
    }
    r.observe(positions);
    const std::vector<int> after = worker_at(r);
    CHECK(std::set<int>(after.begin(), after.end()).size() == static_cast<std::size_t>(n));
    for (int g = 0; g < groups; ++g) {
      for (int m = 0; m < d; ++m) {
        CHECK(after[static_cast<std::size_t>(g * d + m)] ==
              ranking[static_cast<std::size_t>(m * groups + g)]);
      }
    }
  }
}

TEST_CASE("regrouping: each position takes the delay of the worker playing it",
          "[sim][regrouping]") {
  // A twin with fixed groups draws the same delays in worker order; waiting for all, both stop at
  // the same maximum; the regrouper fed the heard positions by hand gives the cluster's mapping.
  const std::vector<double> factors = {3.0, 1.0, 1.0, 2.5, 1.0, 1.0, 1.0, 1.5};
  const int n = static_cast<int>(factors.size());
  SimulatedCluster cluster = cluster_of(factors, std::make_shared<AllStopping>(n), 2, 3, 9);
  SimulatedCluster twin = cluster_of(factors, std::make_shared<AllStopping>(n), 2, 0, 9);
  Regrouper hand(RegroupOptions{3, frc_groups(n, 2)});
  bool moved = false;
  for (int t = 1; t <= 40; ++t) {
    const IterationTiming& timing = cluster.next_iteration();
    const IterationTiming& fixed = twin.next_iteration();
    REQUIRE(timing.worker_at == worker_at(hand));
    CHECK(fixed.worker_at.empty());
    for (std::size_t p = 0; p < timing.delays.size(); ++p) {
      CHECK(timing.delays[p] == fixed.delays[static_cast<std::size_t>(timing.worker_at[p])]);
    }
    CHECK(timing.iteration_time == fixed.iteration_time);
    moved = moved || timing.worker_at != worker_at(Regrouper(RegroupOptions{3, frc_groups(n, 2)}));
    hand.observe(timing.heard);
  }
  CHECK(moved);
}

TEST_CASE("regrouping: under finish a worker's leftover work follows it to its new position",
          "[sim][regrouping]") {
  // Regrouped every iteration: a worker not heard at iteration t − 1 starts iteration t when its
  // stale work ends, whatever position it plays now, i.e. start = max(0, its previous arrival −
  // the previous stop) on the free network.
  const std::vector<double> factors = {3.0, 1.0, 2.0, 1.0, 1.0, 1.5};
  const int n = static_cast<int>(factors.size());
  HeterogeneousDelay::Options o;
  o.factors = factors;
  SimulatedCluster cluster(
      std::make_unique<HeterogeneousDelay>(std::vector<double>(factors.size(), 1.0), o),
      std::make_shared<FirstRStopping>(3),
      StragglerPolicy::kFinish,
      4,
      NetworkOptions{},
      RegroupOptions{1, frc_groups(n, 2)});
  std::vector<double> leftover(factors.size(), 0.0);  // by worker: stale work past the last stop
  int late_starts = 0;
  for (int t = 1; t <= 200; ++t) {
    const IterationTiming& timing = cluster.next_iteration();
    for (std::size_t p = 0; p < leftover.size(); ++p) {
      const auto w = static_cast<std::size_t>(timing.worker_at[p]);
      CHECK(timing.arrivals[p] - timing.delays[p] == Approx(leftover[w]).margin(1e-12));
      late_starts += leftover[w] > 0.0 ? 1 : 0;
    }
    std::ranges::fill(leftover, 0.0);
    std::vector<char> heard(leftover.size(), 0);
    for (const int p : timing.heard) {
      heard[static_cast<std::size_t>(p)] = 1;
    }
    for (std::size_t p = 0; p < leftover.size(); ++p) {
      if (heard[p] == 0) {
        leftover[static_cast<std::size_t>(timing.worker_at[p])] =
            timing.arrivals[p] - timing.iteration_time;
      }
    }
  }
  CHECK(late_starts > 100);
}

TEST_CASE("regrouping: persistent stragglers are spread over the groups", "[sim][regrouping]") {
  // Workers 0 and 1 (group 0 under FRC) are 4x slower; ErasureHead's first 4 of 8. With fixed
  // groups group 0 is erased almost always; regrouped every 5 iterations, each slow worker shares
  // a group with a fast one, so all four groups are covered far more often.
  const std::vector<double> factors = {4.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  const auto rule = std::make_shared<FirstRStopping>(4);
  const auto coverage = [&](int every) {
    SimulatedCluster cluster = cluster_of(factors, rule, 2, every, 21);
    const int iterations = 4000;
    double full = 0.0;
    for (int t = 0; t < iterations; ++t) {
      std::set<int> groups;
      for (const int p : cluster.next_iteration().heard) {
        groups.insert(p / 2);
      }
      full += groups.size() == 4 ? 1.0 : 0.0;
    }
    return full / iterations;
  };
  const double fixed = coverage(0);
  const double dynamic = coverage(5);
  // Fixed: a slow worker is among the first 4 only when it beats two fast ones (well under 5 %).
  // Dynamic: all four groups are covered whenever the first four fast arrivals fall in four
  // groups, a probability above 0.2 (s.e. of each fraction below 0.008 at 4000 iterations).
  CHECK(fixed < 0.05);
  CHECK(dynamic > fixed + 0.15);
}

TEST_CASE("regrouping: the config plans dynamic_frc, decodes exactly, or refuses at its pointer",
          "[sim][regrouping]") {
  const auto dir = stragglersim::testing::process_scratch("regrouping_test");
  auto config = [] {
    auto c = stragglersim::testing::small_least_squares_config();
    c["code"] = {{"kind", "dynamic_frc"}, {"d", 2}, {"every", 3}};
    c["stopping"] = {{"rule", "decodable"}};
    c["delay"] = {{"kind", "heterogeneous"}, {"factors", {3.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0}}};
    return c;
  };
  const experiments::RunPlan plan = experiments::plan_run(config(), "cfg.json", dir);
  REQUIRE(plan.scheme.code->regroup_every() == 3);
  const auto a = stragglersim::testing::train_plan(plan);
  const auto b =
      stragglersim::testing::train_plan(experiments::plan_run(config(), "cfg.json", dir));
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 1; t < a.size(); ++t) {
    INFO("iteration " << t);
    CHECK(a[t].loss == b[t].loss);
    CHECK(a[t].heard == b[t].heard);
    // Exact: the full gradient, to rounding (relative to the starting gradient: the gradient
    // itself goes to 0 in this well-conditioned problem).
    REQUIRE(a[t].gradient_error);
    CHECK(*a[t].gradient_error <= 1e-12 * a[0].grad_norm);
    CHECK(a[t].decoding_error == 0.0);
  }

  struct Case {
    const char* pointer;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/code/every",
       0,
       "cfg.json:/code/every: out of range; got 0; expected an integer in [1, 1000000000]"},
      {"/code/d",
       3,
       "cfg.json:/code/d: replication must divide the workers; got 3; expected a "
       "divisor of workers = 8"},
      {"/backend",
       {{"kind", "mpi"}, {"inject", false}},
       "cfg.json:/backend/inject: code 'dynamic_frc' regroups the workers by their injected "
       "delays; got false; expected \"inject\": true and no faults, or a code with fixed groups"},
      {"/backend",
       {{"kind", "threads"}, {"faults", {{{"worker", 1}, {"kind", "crash"}}}}},
       "cfg.json:/backend/faults: code 'dynamic_frc' moves the workers between code positions; "
       "a fault names a worker; got [{\"kind\":\"crash\",\"worker\":1}]; expected \"inject\": "
       "true and no faults, or a code with fixed groups"},
  };
  for (const Case& c : cases) {
    auto bad = config();
    bad[nlohmann::json::json_pointer(c.pointer)] = c.value;
    CHECK(stragglersim::testing::plan_error(bad, dir) == c.message);
  }
}

}  // namespace stragglersim::sim

#include "sim/asynchronous_cluster.h"

#include <catch2/catch.hpp>
#include <set>

#include "sim/simulated_cluster.h"

namespace stragglersim::sim {
namespace {

std::unique_ptr<DelayModel> exponential_delays(int n, double shift) {
  return std::make_unique<ShiftedExponentialDelay>(
      n, 1.0, ShiftedExponentialDelay::Options{.shift = shift, .rate = 1.0});
}

}  // namespace

TEST_CASE("async: staleness is never negative and follows each discipline", "[sim][async]") {
  const int n = 6;
  for (const UpdateMode mode :
       {UpdateMode::kKBatchSync, UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    for (const int k : {1, 2, 6}) {
      AsynchronousCluster cluster(exponential_delays(n, 0.2), mode, k, 11);
      double previous = 0.0;
      std::uint64_t largest = 0;
      for (int u = 1; u <= 3000; ++u) {
        const AsynchronousUpdate& up = cluster.next_update();
        REQUIRE(up.update == static_cast<std::uint64_t>(u));
        REQUIRE(up.used.size() == static_cast<std::size_t>(k));
        REQUIRE(up.time >= previous);
        previous = up.time;
        std::set<int> workers;
        for (const UsedGradient& g : up.used) {
          // τ = (u − 1) − v, computed in unsigned arithmetic: v ≤ u − 1 is what keeps it ≥ 0.
          REQUIRE(g.version <= up.update - 1);
          REQUIRE(g.staleness == up.update - 1 - g.version);
          REQUIRE(g.arrival <= up.time);
          largest = std::max(largest, g.staleness);
          workers.insert(g.worker);
        }
        if (mode == UpdateMode::kKBatchSync) {
          REQUIRE(largest == 0);  // every gradient is at the current x
        }
        if (mode == UpdateMode::kKAsync) {
          REQUIRE(workers.size() == static_cast<std::size_t>(k));  // one in flight per worker
        }
      }
      if (mode != UpdateMode::kKBatchSync && k < n) {
        CHECK(largest > 0);  // the asynchronous disciplines do use stale gradients
      }
    }
  }
}

TEST_CASE("async: K-async with K = n has the updates of the synchronous all rule", "[sim][async]") {
  const int n = 5;
  AsynchronousCluster async(exponential_delays(n, 0.5), UpdateMode::kKAsync, n, 3);
  SimulatedCluster sync(
      exponential_delays(n, 0.5), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 3);
  for (int t = 0; t < 500; ++t) {
    const AsynchronousUpdate& a = async.next_update();
    sync.next_iteration();
    REQUIRE(a.time == sync.time());  // the same delays, summed in the same order
    for (const UsedGradient& g : a.used) {
      REQUIRE(g.staleness == 0);
    }
  }
}

TEST_CASE("async: the same seed gives the same updates", "[sim][async]") {
  for (const UpdateMode mode :
       {UpdateMode::kKBatchSync, UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    AsynchronousCluster a(exponential_delays(4, 0.1), mode, 2, 9);
    AsynchronousCluster b(exponential_delays(4, 0.1), mode, 2, 9);
    AsynchronousCluster c(exponential_delays(4, 0.1), mode, 2, 10);
    bool differs = false;
    for (int u = 0; u < 200; ++u) {
      const AsynchronousUpdate ua = a.next_update();
      const AsynchronousUpdate& ub = b.next_update();
      const AsynchronousUpdate& uc = c.next_update();
      REQUIRE(ua.time == ub.time);
      for (std::size_t l = 0; l < ua.used.size(); ++l) {
        REQUIRE(ua.used[l].worker == ub.used[l].worker);
        REQUIRE(ua.used[l].computation == ub.used[l].computation);
      }
      differs = differs || ua.time != uc.time;
    }
    CHECK(differs);
  }
}

TEST_CASE("async: K-batch-async with K = 1 pushes each worker's computations back to back",
          "[sim][async]") {
  // Every worker is always busy: worker i's c-th push is at the sum of its first c delays, so
  // the update times are the merged renewal epochs, which a direct computation reproduces.
  const int n = 3;
  AsynchronousCluster cluster(exponential_delays(n, 0.3), UpdateMode::kKBatchAsync, 1, 5);
  auto reference = exponential_delays(n, 0.3);
  RandomEngine rng = make_engine(5, Stream::kDelays);
  std::vector<double> epochs;
  std::vector<double> clock(n, 0.0);
  std::vector<double> round(n);
  for (std::uint64_t c = 1; c <= 200; ++c) {
    reference->sample(c, rng, round);
    for (int i = 0; i < n; ++i) {
      clock[static_cast<std::size_t>(i)] += round[static_cast<std::size_t>(i)];
      epochs.push_back(clock[static_cast<std::size_t>(i)]);
    }
  }
  std::sort(epochs.begin(), epochs.end());
  for (int u = 0; u < 300; ++u) {  // well before any worker's 200th push
    REQUIRE(cluster.next_update().time == epochs[static_cast<std::size_t>(u)]);
  }
}

}  // namespace stragglersim::sim

#include "sim/asynchronous_cluster.h"

#include <catch2/catch.hpp>
#include <set>

#include "sim/simulated_cluster.h"

namespace stragglersim::sim {
namespace {

std::unique_ptr<DelayModel> async_test_delays(int n, double shift) {
  return std::make_unique<ShiftedExponentialDelay>(
      n, 1.0, ShiftedExponentialDelay::Options{.shift = shift, .rate = 1.0});
}

}  // namespace

TEST_CASE("async: staleness is never negative and follows each discipline", "[sim][async]") {
  const int n = 6;
  for (const UpdateMode mode :
       {UpdateMode::kKBatchSync, UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    for (const int k : {1, 2, 6}) {
      AsynchronousCluster cluster(async_test_delays(n, 0.2), mode, k, 11);
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
  AsynchronousCluster async(async_test_delays(n, 0.5), UpdateMode::kKAsync, n, 3);
  SimulatedCluster sync(
      async_test_delays(n, 0.5), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 3);
  for (int t = 0; t < 500; ++t) {
    const AsynchronousUpdate& a = async.next_update();
    sync.next_iteration();
    REQUIRE(a.time == sync.time());  // the same delays, summed in the same order
    for (const UsedGradient& g : a.used) {
      REQUIRE(g.staleness == 0);
    }
  }
}

TEST_CASE("async: K-async with K = n and a network has the updates of all over that network",
          "[sim][async][network]") {
  // Every push of an update has arrived when the next computations start, so the serial link
  // is idle at each update as the synchronous model assumes at each broadcast.
  const int n = 5;
  for (const bool serial : {false, true}) {
    const NetworkOptions network{
        .latency = 0.01, .bandwidth = 100.0, .message_bytes = 20.0, .serial = serial};
    AsynchronousCluster async(async_test_delays(n, 0.5), UpdateMode::kKAsync, n, 3, network);
    SimulatedCluster sync(async_test_delays(n, 0.5),
                          std::make_shared<AllStopping>(n),
                          StragglerPolicy::kCancel,
                          3,
                          network);
    for (int t = 0; t < 500; ++t) {
      const AsynchronousUpdate& a = async.next_update();
      sync.next_iteration();
      // The synchronous clock adds each iteration's arrival after its broadcast, this one adds
      // the delay and then the link to the clock: equal up to the rounding of the association.
      REQUIRE(a.time == Approx(sync.time()).epsilon(1e-12));
    }
  }
}

TEST_CASE("async: over parallel links each push arrives L + S/B after its compute end",
          "[sim][async][network]") {
  // K-batch-async with K = 1: a worker restarts when its push arrives, so worker i's c-th
  // arrival is the sum of its first c delays each plus L + S/B (summed as the cluster does).
  const int n = 3;
  const NetworkOptions network{.latency = 0.02, .bandwidth = 1e3, .message_bytes = 50.0};
  AsynchronousCluster cluster(async_test_delays(n, 0.3), UpdateMode::kKBatchAsync, 1, 5, network);
  auto reference = async_test_delays(n, 0.3);
  RandomEngine rng = make_engine(5, Stream::kDelays);
  std::vector<double> epochs;
  std::vector<double> clock(n, 0.0);
  std::vector<double> round(n);
  const double shift = network.latency + network.transfer_time();
  for (std::uint64_t c = 1; c <= 200; ++c) {
    reference->sample(c, rng, round);
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      clock[i] = (clock[i] + round[i]) + shift;
      epochs.push_back(clock[i]);
    }
  }
  std::sort(epochs.begin(), epochs.end());
  for (int u = 0; u < 300; ++u) {
    REQUIRE(cluster.next_update().time == epochs[static_cast<std::size_t>(u)]);
  }
}

TEST_CASE("async: a busy serial link delivers one push per S/B", "[sim][async][network]") {
  // Computations of about 0.011 s against 1 s on the link: from the first arrival on, the link
  // always has a message waiting, so the pushes arrive exactly S/B apart, and the first one at
  // the first compute end + L + S/B.
  const int n = 4;
  const NetworkOptions network{
      .latency = 0.5, .bandwidth = 10.0, .message_bytes = 10.0, .serial = true};
  for (const UpdateMode mode : {UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    AsynchronousCluster cluster(
        std::make_unique<ShiftedExponentialDelay>(
            n, 1.0, ShiftedExponentialDelay::Options{.shift = 0.001, .rate = 100.0}),
        mode,
        1,
        8,
        network);
    const double first = cluster.next_update().time;
    CHECK(first > 1.5);
    CHECK(first < 1.5 + 0.001 + 0.2);  // one Exp(100) draw above 0.2 has probability 2e-9
    for (int u = 2; u <= 400; ++u) {
      const AsynchronousUpdate& up = cluster.next_update();
      REQUIRE(up.update_time == Approx(1.0).margin(1e-9));
      REQUIRE(up.time == Approx(first + (u - 1)).epsilon(1e-12));
    }
  }
}

TEST_CASE("async: the same seed gives the same updates", "[sim][async]") {
  for (const UpdateMode mode :
       {UpdateMode::kKBatchSync, UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    AsynchronousCluster a(async_test_delays(4, 0.1), mode, 2, 9);
    AsynchronousCluster b(async_test_delays(4, 0.1), mode, 2, 9);
    AsynchronousCluster c(async_test_delays(4, 0.1), mode, 2, 10);
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
  AsynchronousCluster cluster(async_test_delays(n, 0.3), UpdateMode::kKBatchAsync, 1, 5);
  auto reference = async_test_delays(n, 0.3);
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

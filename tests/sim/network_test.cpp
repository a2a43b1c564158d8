#include "sim/network.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/fastpath/delay_only.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {
namespace {

/// The serial link's arrivals by the closed form of the queue recursion (Lindley's, unrolled):
/// the k-th message in order of compute end arrives at max over j ≤ k of
/// c_(j) + L + (k − j + 1)·S/B. Written here independently of Network::deliver.
std::vector<double> serial_by_closed_form(const std::vector<double>& c,
                                          double latency,
                                          double transfer) {
  std::vector<std::size_t> order(c.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return c[a] < c[b]; });
  std::vector<double> out(c.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j <= k; ++j) {
      best = std::max(best, c[order[j]] + latency + static_cast<double>(k - j + 1) * transfer);
    }
    out[order[k]] = best;
  }
  return out;
}

}  // namespace

TEST_CASE("sim: parallel links add latency plus size over bandwidth to every compute end",
          "[sim][network]") {
  Network net({.latency = 0.1, .bandwidth = 1000.0, .message_bytes = 250.0, .serial = false});
  const std::vector<double> c{0.5, 0.1, 0.3};
  std::vector<double> a(3);
  net.deliver(c, a);
  CHECK(a[0] == Approx(0.85).epsilon(1e-15));
  CHECK(a[1] == Approx(0.45).epsilon(1e-15));
  CHECK(a[2] == Approx(0.65).epsilon(1e-15));
}

TEST_CASE("sim: a serial link receives one message at a time in order of compute end",
          "[sim][network]") {
  // L = 0.1, S/B = 0.25; by hand: worker 1 (c = 0.1) arrives 0.1 + 0.1 + 0.25 = 0.45; worker 2
  // (c = 0.3) is at the link at 0.4 but waits until 0.45: 0.70; worker 0 (c = 0.5) waits
  // from 0.6 until 0.70: 0.95.
  Network net({.latency = 0.1, .bandwidth = 1000.0, .message_bytes = 250.0, .serial = true});
  const std::vector<double> c{0.5, 0.1, 0.3};
  std::vector<double> a(3);
  net.deliver(c, a);
  CHECK(a[1] == Approx(0.45).epsilon(1e-15));
  CHECK(a[2] == Approx(0.70).epsilon(1e-15));
  CHECK(a[0] == Approx(0.95).epsilon(1e-15));
  // A gap idles the link: a message reaching a free link goes at once.
  const std::vector<double> spread{0.0, 2.0};
  std::vector<double> b(2);
  net.deliver(spread, b);
  CHECK(b[0] == Approx(0.35).epsilon(1e-15));
  CHECK(b[1] == Approx(2.35).epsilon(1e-15));
}

TEST_CASE("sim: serial link arrivals equal the queue's closed form for every ordering",
          "[sim][network]") {
  // Every permutation of five compute ends (with a tie), two transfer times: short (messages
  // rarely queue) and long (they always do).
  const std::vector<double> values{0.0, 0.2, 0.2, 0.7, 1.5};
  for (const double transfer : {0.05, 0.6}) {
    Network net({.latency = 0.3, .bandwidth = 1.0, .message_bytes = transfer, .serial = true});
    std::vector<double> c = values;
    std::sort(c.begin(), c.end());
    int permutations = 0;
    do {
      std::vector<double> a(c.size());
      net.deliver(c, a);
      const std::vector<double> expected = serial_by_closed_form(c, 0.3, transfer);
      for (std::size_t i = 0; i < c.size(); ++i) {
        REQUIRE(a[i] == Approx(expected[i]).epsilon(1e-14));
      }
      // Arrivals keep the order of compute ends, one transfer apart at least.
      std::vector<double> sorted = a;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t k = 1; k < sorted.size(); ++k) {
        REQUIRE(sorted[k] - sorted[k - 1] >= transfer * (1.0 - 1e-12));
      }
      ++permutations;
    } while (std::next_permutation(c.begin(), c.end()));
    CHECK(permutations == 60);  // 5! / 2! (the tie)
  }
}

TEST_CASE("sim: tied compute ends are served in worker order", "[sim][network]") {
  Network net({.latency = 0.0, .bandwidth = 2.0, .message_bytes = 1.0, .serial = true});
  const std::vector<double> c{1.0, 1.0, 1.0};
  std::vector<double> a(3);
  net.deliver(c, a);
  CHECK(a == std::vector<double>{1.5, 2.0, 2.5});
}

TEST_CASE("sim: network options name the first violated constraint", "[sim][network]") {
  CHECK(NetworkOptions{.latency = -1.0}.validate()->field == "latency");
  CHECK(NetworkOptions{.bandwidth = 0.0}.validate()->field == "bandwidth");
  CHECK(NetworkOptions{.message_bytes = -2.0}.validate()->field == "message_bytes");
  CHECK_FALSE(NetworkOptions{}.validate());
  CHECK(NetworkOptions{}.is_free());
  CHECK(NetworkOptions{.latency = 0.0, .bandwidth = 1e9, .message_bytes = 8e6}.transfer_time() ==
        Approx(0.008));
}

namespace {

std::unique_ptr<DelayModel> per_load_delays(int n, int d) {
  return std::make_unique<ShiftedExponentialDelay>(
      std::vector<double>(static_cast<std::size_t>(n), static_cast<double>(d)),
      ShiftedExponentialDelay::Options{});
}

}  // namespace

TEST_CASE("sim: the cluster stops on the network's arrivals, computed from the drawn delays",
          "[sim][network][cluster]") {
  constexpr int n = 6;
  constexpr int r = 4;
  const NetworkOptions options{
      .latency = 0.2, .bandwidth = 4.0, .message_bytes = 1.0, .serial = true};
  auto rule = std::make_shared<FirstRStopping>(r);
  SimulatedCluster cluster(per_load_delays(n, 1), rule, StragglerPolicy::kCancel, 11, options);
  for (int t = 0; t < 50; ++t) {
    const IterationTiming& it = cluster.next_iteration();
    const std::vector<double> arrivals = serial_by_closed_form(it.delays, 0.2, 0.25);
    std::vector<double> sorted = arrivals;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(it.iteration_time == Approx(sorted[r - 1]).epsilon(1e-14));
    // The heard set is the first r workers in order of compute end.
    std::vector<int> by_compute(n);
    std::iota(by_compute.begin(), by_compute.end(), 0);
    std::stable_sort(by_compute.begin(), by_compute.end(), [&](int a, int b) {
      return it.delays[static_cast<std::size_t>(a)] < it.delays[static_cast<std::size_t>(b)];
    });
    REQUIRE(it.heard == std::vector<int>(by_compute.begin(), by_compute.begin() + r));
  }
}

TEST_CASE("sim: the delay-only path gives the event engine's times with a network",
          "[sim][network][delay_only]") {
  constexpr int n = 12;
  constexpr int d = 3;
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(n, d);
  const std::vector<std::shared_ptr<const StoppingRule>> rules{
      std::make_shared<AllStopping>(n),
      std::make_shared<FirstRStopping>(5),
      std::make_shared<DeadlineStopping>(4.5, n),
      std::make_shared<DecodableStopping>(code),
      std::make_shared<FirstROrDecodableStopping>(7, code)};
  for (const bool serial : {false, true}) {
    for (const auto policy :
         {StragglerPolicy::kCancel, StragglerPolicy::kFinish, StragglerPolicy::kDrain}) {
      for (const auto& rule : rules) {
        const NetworkOptions net{
            .latency = 0.3, .bandwidth = 10.0, .message_bytes = 2.0, .serial = serial};
        SimulatedCluster cluster(per_load_delays(n, d), rule, policy, 5, net);
        DelayOnlySimulator fast(per_load_delays(n, d), rule, code, policy, 5, net);
        REQUIRE(fast.uses_selection());
        std::vector<double> times;
        std::vector<double> walls;
        std::vector<int> heard;
        fast.run(40, [&](const DelayOnlyIteration& it) {
          times.push_back(it.iteration_time);
          walls.push_back(it.wall_time);
          heard.push_back(it.workers_heard);
        });
        for (std::size_t t = 0; t < times.size(); ++t) {
          const IterationTiming& it = cluster.next_iteration();
          INFO("rule " << rule->name() << " serial " << serial << " iteration " << t + 1);
          REQUIRE(times[t] == it.iteration_time);
          REQUIRE(walls[t] == it.wall_time);
          REQUIRE(heard[t] == static_cast<int>(it.heard.size()));
        }
      }
    }
  }
}

TEST_CASE("sim: a free network leaves the iteration times unchanged", "[sim][network][cluster]") {
  constexpr int n = 8;
  auto rule = std::make_shared<FirstRStopping>(5);
  SimulatedCluster plain(per_load_delays(n, 1), rule, StragglerPolicy::kFinish, 3);
  SimulatedCluster free(
      per_load_delays(n, 1), rule, StragglerPolicy::kFinish, 3, NetworkOptions{.serial = true});
  for (int t = 0; t < 30; ++t) {
    REQUIRE(plain.next_iteration().iteration_time == free.next_iteration().iteration_time);
  }
}

TEST_CASE("sim: the delay-only run stops at the first iteration reaching the time budget",
          "[sim][delay_only][time_budget]") {
  constexpr int n = 8;
  const auto code = std::make_shared<codes::UncodedCode>(n);
  auto rule = std::make_shared<AllStopping>(n);
  DelayOnlySimulator full(per_load_delays(n, 1), rule, code, StragglerPolicy::kCancel, 9);
  std::vector<double> cumulative;
  double time = 0.0;
  full.run(100, [&](const DelayOnlyIteration& it) {
    time += it.iteration_time;
    cumulative.push_back(time);
  });
  const double budget = 0.5 * (cumulative[9] + cumulative[10]);  // between iterations 10 and 11
  DelayOnlySimulator budgeted(per_load_delays(n, 1), rule, code, StragglerPolicy::kCancel, 9);
  const DelayOnlyStatistics stats = budgeted.run(100, {}, budget);
  CHECK(stats.iterations == 11);
  CHECK(stats.total_time == Approx(cumulative[10]).epsilon(1e-14));
  CHECK(stats.total_time >= budget);
}

}  // namespace stragglersim::sim

#include "sim/asynchronous_cluster.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <vector>

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

namespace stragglersim::sim {
namespace {

/// Worker i's c-th computation takes table[c − 1][i] (rows cycle): draws with no ties, shared by
/// the cluster and the reference loop below.
class TimeOptimalTable final : public DelayModel {
 public:
  TimeOptimalTable(int workers, int rows, std::uint64_t seed) : workers_(workers) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> draw(0.3, 2.0);
    table_.resize(static_cast<std::size_t>(workers * rows));
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(workers); ++i) {
        // Worker i is (1 + i/2)× slower: heterogeneous, as the methods' papers assume.
        table_[r * static_cast<std::size_t>(workers) + i] =
            draw(engine) * (1.0 + 0.5 * static_cast<double>(i));
      }
    }
  }
  [[nodiscard]] std::string name() const override { return "table"; }
  [[nodiscard]] int workers() const override { return workers_; }
  void sample(std::uint64_t iteration, RandomEngine& /*rng*/, std::span<double> out) override {
    for (int i = 0; i < workers_; ++i) {
      out[static_cast<std::size_t>(i)] = at(iteration, i);
    }
  }
  [[nodiscard]] double at(std::uint64_t computation, int worker) const {
    const std::size_t rows = table_.size() / static_cast<std::size_t>(workers_);
    const std::size_t r = static_cast<std::size_t>(computation - 1) % rows;
    return table_[r * static_cast<std::size_t>(workers_) + static_cast<std::size_t>(worker)];
  }
  [[nodiscard]] double cdf(int /*worker*/, double t) const override { return t >= 2.0 ? 1.0 : 0.5; }
  [[nodiscard]] double mean(int worker) const override {
    return 1.15 * (1.0 + 0.5 * static_cast<double>(worker));
  }
  [[nodiscard]] double variance(int /*worker*/) const override { return 0.2; }
  [[nodiscard]] double lower_bound(int /*worker*/) const override { return 0.3; }

 private:
  int workers_;
  std::vector<double> table_;
};

struct ReferenceGradient {
  int worker = 0;
  std::uint64_t version = 0;
  std::uint64_t computation = 0;
  double arrival = 0.0;
};

struct ReferenceUpdate {
  double time = 0.0;
  std::vector<ReferenceGradient> used;
};

/// The methods as their papers state them, by a direct loop over the workers' next event (no
/// event queue, no rounds): a worker that delivers is sent the current x and restarts at once.
std::vector<ReferenceUpdate> reference_updates(
    int n,
    const std::function<double(int, std::uint64_t, double)>& duration,
    const UpdateShape& shape,
    int updates) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::uint64_t> attempts(un, 0);
  std::vector<std::uint64_t> version(un, 0);
  std::vector<double> ends(un, 0.0);
  std::vector<char> abandons(un, 0);
  std::uint64_t k = 0;
  auto start = [&](int w, double now) {
    const auto i = static_cast<std::size_t>(w);
    attempts[i] += 1;
    version[i] = k;
    const double d = duration(w, attempts[i], now);
    const bool cut = shape.mode == UpdateMode::kMindFlayer && d > shape.cutoffs[i];
    abandons[i] = cut ? 1 : 0;
    ends[i] = now + (cut ? shape.cutoffs[i] : d);
  };
  for (int w = 0; w < n; ++w) {
    start(w, 0.0);
  }
  std::vector<ReferenceUpdate> out;
  std::vector<ReferenceGradient> batch;
  std::vector<int> counts(un, 0);
  const bool fresh_only = shape.fresh_only();
  auto ready = [&] {
    if (shape.mode != UpdateMode::kMalenia) {
      return static_cast<int>(batch.size()) >= shape.k;
    }
    double inverse = 0.0;
    for (const int b : counts) {
      if (b == 0) {
        return false;
      }
      inverse += 1.0 / b;
    }
    return shape.k * inverse <= static_cast<double>(n * n) * (1.0 + 1e-12);
  };
  while (static_cast<int>(out.size()) < updates) {
    const auto next = static_cast<std::size_t>(
        std::distance(ends.begin(), std::min_element(ends.begin(), ends.end())));
    const int w = static_cast<int>(next);
    const double now = ends[next];
    if (abandons[next] != 0) {
      start(w, now);
      continue;
    }
    const ReferenceGradient g{w, version[next], attempts[next], now};
    if (fresh_only) {
      if (g.version == k) {
        batch.push_back(g);
        counts[next] += 1;
      }
    } else if (!shape.max_delay || k - g.version < *shape.max_delay) {
      batch.push_back(g);
    }
    if (!ready()) {
      start(w, now);
      continue;
    }
    k += 1;
    out.push_back({now, batch});
    batch.clear();
    std::fill(counts.begin(), counts.end(), 0);
    start(w, now);
    for (int o = 0; o < n; ++o) {
      const auto i = static_cast<std::size_t>(o);
      if (o == w || !shape.stop_stale) {
        continue;
      }
      // Batch methods: every other computation is at an old x; Ringmaster: those at delay R.
      if (fresh_only || k - version[i] >= *shape.max_delay) {
        start(o, now);
      }
    }
  }
  return out;
}

/// A time-varying model (the universal computation model's interface): a computation of worker
/// i started at s takes 0.4 + 0.2 i + 0.5 (1 + sin(3s + i)) seconds.
class SinePower final : public DelayModel {
 public:
  explicit SinePower(int workers) : workers_(workers) {}
  [[nodiscard]] static double at(int worker, double start) {
    return 0.4 + 0.2 * worker + 0.5 * (1.0 + std::sin(3.0 * start + worker));
  }
  [[nodiscard]] std::string name() const override { return "sine"; }
  [[nodiscard]] int workers() const override { return workers_; }
  void sample(std::uint64_t /*iteration*/, RandomEngine& /*rng*/, std::span<double> out) override {
    for (int i = 0; i < workers_; ++i) {
      out[static_cast<std::size_t>(i)] = at(i, 0.0);
    }
  }
  [[nodiscard]] bool time_varying() const override { return true; }
  double duration_at(int worker, double start, RandomEngine& /*rng*/) override {
    return at(worker, start);
  }
  [[nodiscard]] double cdf(int /*worker*/, double t) const override { return t >= 2.0 ? 1.0 : 0.5; }
  [[nodiscard]] double mean(int worker) const override { return 0.9 + 0.2 * worker; }
  [[nodiscard]] double variance(int /*worker*/) const override { return 0.1; }
  [[nodiscard]] double lower_bound(int worker) const override { return 0.4 + 0.2 * worker; }

 private:
  int workers_;
};

UpdateShape time_optimal_shape(UpdateMode mode, int k) {
  UpdateShape s;
  s.mode = mode;
  s.k = k;
  return s;
}

}  // namespace

TEST_CASE("async: the time-optimal methods make the updates of a direct reference loop",
          "[sim][async][time_optimal]") {
  const int n = 5;
  std::vector<UpdateShape> shapes;
  for (const bool stop : {false, true}) {
    for (const int b : {1, 3, 5, 12}) {
      UpdateShape rennala = time_optimal_shape(UpdateMode::kRennala, b);
      rennala.stop_stale = stop;
      shapes.push_back(rennala);
      UpdateShape malenia = time_optimal_shape(UpdateMode::kMalenia, b);
      malenia.stop_stale = stop;
      shapes.push_back(malenia);
      UpdateShape mindflayer = time_optimal_shape(UpdateMode::kMindFlayer, b);
      mindflayer.stop_stale = stop;
      mindflayer.cutoffs = {1.2, 1.5, 1.8, 2.4, 5.0};
      shapes.push_back(mindflayer);
    }
    for (const std::uint64_t r : {1U, 2U, 4U}) {
      UpdateShape ringmaster = time_optimal_shape(UpdateMode::kRingmaster, 1);
      ringmaster.max_delay = r;
      ringmaster.stop_stale = stop;
      shapes.push_back(ringmaster);
    }
  }
  shapes.push_back(time_optimal_shape(UpdateMode::kRingmaster, 1));
  shapes.push_back(time_optimal_shape(UpdateMode::kRescaledAsync, 1));
  for (const UpdateShape& shape : shapes) {
    INFO(update_mode_name(shape.mode) << " k " << shape.k << " R " << shape.max_delay.value_or(0)
                                      << " stop " << shape.stop_stale);
    const TimeOptimalTable table(n, 97, 55);
    const auto expected = reference_updates(
        n, [&](int w, std::uint64_t c, double /*start*/) { return table.at(c, w); }, shape, 300);
    AsynchronousCluster cluster(std::make_unique<TimeOptimalTable>(n, 97, 55), shape, 1);
    for (const ReferenceUpdate& want : expected) {
      const AsynchronousUpdate& got = cluster.next_update();
      REQUIRE(got.time == want.time);
      REQUIRE(got.used.size() == want.used.size());
      for (std::size_t l = 0; l < want.used.size(); ++l) {
        REQUIRE(got.used[l].worker == want.used[l].worker);
        REQUIRE(got.used[l].version == want.used[l].version);
        REQUIRE(got.used[l].computation == want.used[l].computation);
        REQUIRE(got.used[l].arrival == want.used[l].arrival);
        REQUIRE(got.used[l].staleness == got.update - 1 - want.used[l].version);
      }
    }
  }
}

TEST_CASE("async: a time-varying delay model times each computation from its own start",
          "[sim][async][time_optimal]") {
  const int n = 4;
  UpdateShape ringmaster = time_optimal_shape(UpdateMode::kRingmaster, 1);
  ringmaster.max_delay = 2;
  ringmaster.stop_stale = true;
  UpdateShape mindflayer = time_optimal_shape(UpdateMode::kMindFlayer, 5);
  mindflayer.cutoffs = {1.2, 1.3, 1.5, 1.9};
  for (const UpdateShape& shape : {time_optimal_shape(UpdateMode::kRennala, 6),
                                   time_optimal_shape(UpdateMode::kMalenia, 7),
                                   ringmaster,
                                   mindflayer,
                                   time_optimal_shape(UpdateMode::kRescaledAsync, 1)}) {
    INFO(update_mode_name(shape.mode));
    const auto expected = reference_updates(
        n,
        [](int w, std::uint64_t /*c*/, double start) { return SinePower::at(w, start); },
        shape,
        200);
    AsynchronousCluster cluster(std::make_unique<SinePower>(n), shape, 1);
    for (const ReferenceUpdate& want : expected) {
      const AsynchronousUpdate& got = cluster.next_update();
      REQUIRE(got.time == want.time);
      REQUIRE(got.used.size() == want.used.size());
      for (std::size_t l = 0; l < want.used.size(); ++l) {
        REQUIRE(got.used[l].worker == want.used[l].worker);
        REQUIRE(got.used[l].version == want.used[l].version);
      }
    }
  }
}

TEST_CASE("async: the batch methods use only gradients at the current x",
          "[sim][async][time_optimal]") {
  const int n = 4;
  for (const UpdateMode mode : {UpdateMode::kRennala, UpdateMode::kMalenia}) {
    AsynchronousCluster cluster(async_test_delays(n, 0.1),
                                time_optimal_shape(mode, mode == UpdateMode::kMalenia ? 8 : 6),
                                9);
    std::uint64_t discarded = 0;
    for (int u = 0; u < 500; ++u) {
      const AsynchronousUpdate& up = cluster.next_update();
      discarded += up.discarded;
      std::vector<int> counts(n, 0);
      for (const UsedGradient& g : up.used) {
        REQUIRE(g.staleness == 0);
        counts[static_cast<std::size_t>(g.worker)] += 1;
      }
      if (mode == UpdateMode::kRennala) {
        REQUIRE(up.used.size() == 6);
      } else {
        // Malenia: every worker heard, and the harmonic mean of the counts at least S/n = 2.
        double inverse = 0.0;
        for (const int b : counts) {
          REQUIRE(b >= 1);
          inverse += 1.0 / b;
        }
        REQUIRE(static_cast<double>(n) / inverse >= 2.0 - 1e-12);
      }
    }
    CHECK(discarded > 0);  // without stop_stale the busy workers' old gradients are wasted
  }
}

TEST_CASE("async: Rescaled ASGD's step factors are tau_i over their harmonic mean",
          "[sim][async][time_optimal]") {
  const int n = 5;
  const AsynchronousCluster cluster(std::make_unique<TimeOptimalTable>(n, 7, 3),
                                    time_optimal_shape(UpdateMode::kRescaledAsync, 1),
                                    1);
  const TimeOptimalTable table(n, 7, 3);
  double inverse = 0.0;
  for (int i = 0; i < n; ++i) {
    inverse += 1.0 / table.mean(i);
  }
  double rate_weighted = 0.0;
  for (int i = 0; i < n; ++i) {
    CHECK(cluster.step_factor(i) == Approx(table.mean(i) * inverse / n).epsilon(1e-14));
    rate_weighted += cluster.step_factor(i) / table.mean(i) / inverse;
  }
  // Worker i updates at rate 1/τ_i: the mean factor over updates is 1 (the step is γ on average).
  CHECK(rate_weighted == Approx(1.0).epsilon(1e-14));
}

}  // namespace stragglersim::sim

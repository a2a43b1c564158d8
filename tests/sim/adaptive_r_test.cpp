// The adaptive r (docs/model.md §4 "Adaptive r"): the tracker's r against the rule written out
// over every heard pattern of a small cluster, a hand-computed history, the cluster stopping at
// the tracker's r-th arrival, scale invariance, reproducibility, and the config.

#include "sim/adaptive_r.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/simulated_cluster.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::sim {
namespace {

/// The rule written out: the window's sorted heard times, h, the means m(j) and the next r.
int reference(const std::vector<std::vector<double>>& window, const AdaptiveROptions& o) {
  std::size_t h = window.front().size();
  for (const auto& row : window) {
    h = std::min(h, row.size());
  }
  const auto r_min = static_cast<std::size_t>(o.r_min);
  if (h < r_min) {
    return o.r_max;
  }
  const auto mean = [&](std::size_t j) {
    double sum = 0.0;
    for (const auto& row : window) {
      sum += row[j - 1];
    }
    return sum;  // the window's size divides both sides of the comparison
  };
  const std::size_t top = std::min(h, static_cast<std::size_t>(o.r_max));
  std::size_t largest = r_min;
  for (std::size_t j = r_min; j <= top; ++j) {
    if (mean(j) <= (1.0 + o.slack) * mean(r_min)) {
      largest = j;
    }
  }
  return largest == top ? std::min(static_cast<int>(top) + 1, o.r_max) : static_cast<int>(largest);
}

std::unique_ptr<DelayModel> adaptive_r_delays(int workers, double shift = 1.0) {
  return std::make_unique<ShiftedExponentialDelay>(
      workers,
      1.0,
      ShiftedExponentialDelay::Options{.shift = shift, .rate = 1.0, .tail = TailScaling::kLoad});
}

SimulatedCluster adaptive_cluster(const AdaptiveROptions& o, std::uint64_t seed) {
  return {adaptive_r_delays(o.workers),
          std::make_shared<AdaptiveRStopping>(o),
          StragglerPolicy::kCancel,
          seed};
}

}  // namespace

TEST_CASE("adaptive r: a hand-computed history", "[sim][adaptive_r]") {
  const AdaptiveROptions o{.workers = 4, .window = 2, .r_min = 2, .r_max = 4, .slack = 0.5};
  ArrivalCountTracker tracker(o);
  CHECK(tracker.r() == 4);  // no history: r_max
  const std::vector<int> all = {3, 0, 1, 2};
  tracker.observe(all, std::vector<double>{2.0, 2.5, 4.0, 1.0});
  // Sorted 1, 2, 2.5, 4: m(2) = 2, limit 3; m(3) = 2.5 within, m(4) = 4 not: r = 3.
  CHECK(tracker.r() == 3);
  const std::vector<int> three = {0, 1, 2};
  tracker.observe(three, std::vector<double>{1.0, 2.0, 2.0, 9.0});
  // Rows {1, 2, 2.5, 4} and {1, 2, 2}: h = 3; sums m(2) = 4, m(3) = 4.5 ≤ 6: R = h, probe 4.
  CHECK(tracker.r() == 4);
  tracker.observe(three, std::vector<double>{1.0, 3.5, 4.0, 9.0});
  // Rows {1, 2, 2} and {1, 3.5, 4}: sums m(2) = 5.5, m(3) = 6 ≤ 8.25: h = 3 again, still 4.
  CHECK(tracker.r() == 4);
  CHECK(tracker.iterations() == 2);
  const std::vector<int> two = {1, 0};
  tracker.observe(two, std::vector<double>{1.0, 0.5, 7.0, 9.0});
  // Rows {1, 3.5, 4} and {0.5, 1}: h = 2 = r_min: R = h, probe 3.
  CHECK(tracker.r() == 3);
}

TEST_CASE("adaptive r: the tracker equals the rule written out in every case",
          "[sim][adaptive_r]") {
  // n = 4: every heard pattern of at least one worker (15, in a fixed order per iteration) in
  // turn, arrivals from a fixed sequence, windows 1..3, every r_min ≤ r_max and three slacks; 30
  // iterations each, r checked after each.
  const int n = 4;
  std::vector<AdaptiveROptions> options;
  for (int w = 1; w <= 3; ++w) {
    for (int lo = 1; lo <= n; ++lo) {
      for (int hi = lo; hi <= n; ++hi) {
        for (const double slack : {0.0, 0.3, 2.0}) {
          options.push_back({.workers = n, .window = w, .r_min = lo, .r_max = hi, .slack = slack});
        }
      }
    }
  }
  int checked = 0;
  std::vector<int> seen(n + 1, 0);
  for (const auto& o : options) {
    ArrivalCountTracker tracker(o);
    std::vector<std::vector<double>> history;
    for (int t = 0; t < 30; ++t) {
      std::vector<double> arrivals(n);
      std::vector<int> heard;
      for (int i = 0; i < n; ++i) {
        arrivals[static_cast<std::size_t>(i)] = 1.0 + std::fmod(0.37 * (t * n + i) * (i + 1), 2.0);
        if (((t % 15 + 1) >> i) & 1) {
          heard.insert(heard.begin(), i);  // reverse order: the tracker must sort
        }
      }
      tracker.observe(heard, arrivals);
      std::vector<double> row;
      for (const int i : heard) {
        row.push_back(arrivals[static_cast<std::size_t>(i)]);
      }
      std::sort(row.begin(), row.end());
      history.push_back(row);
      const auto from = history.size() > static_cast<std::size_t>(o.window)
                            ? history.size() - static_cast<std::size_t>(o.window)
                            : 0;
      const std::vector<std::vector<double>> window(
          history.begin() + static_cast<std::ptrdiff_t>(from), history.end());
      INFO("window " << o.window << ", r in [" << o.r_min << ", " << o.r_max << "], slack "
                     << o.slack << ", iteration " << t);
      REQUIRE(tracker.r() == reference(window, o));
      CHECK(tracker.r() >= o.r_min);
      CHECK(tracker.r() <= o.r_max);
      ++seen[static_cast<std::size_t>(tracker.r())];
      ++checked;
    }
  }
  CHECK(checked == 90 * 30);
  for (int r = 1; r <= n; ++r) {
    INFO("r = " << r);
    CHECK(seen[static_cast<std::size_t>(r)] > 50);  // every outcome is exercised
  }
}

TEST_CASE("adaptive r: the cluster stops at the tracker's r-th arrival", "[sim][adaptive_r]") {
  // A twin waiting for every worker draws the same delays; a tracker fed by hand gives r; the
  // heard set is the r earliest workers and the stop the r-th arrival.
  const int n = 8;
  const AdaptiveROptions o{.workers = n, .window = 4, .r_min = 3, .r_max = n, .slack = 0.4};
  SimulatedCluster cluster = adaptive_cluster(o, 17);
  SimulatedCluster twin(
      adaptive_r_delays(n), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 17);
  ArrivalCountTracker tracker(o);
  std::vector<int> counts(n + 1, 0);
  for (int t = 1; t <= 300; ++t) {
    const IterationTiming& timing = cluster.next_iteration();
    std::vector<double> delays = twin.next_iteration().delays;
    REQUIRE(timing.delays == delays);
    REQUIRE(timing.needed == tracker.r());
    const int r = tracker.r();
    std::vector<double> sorted = delays;
    std::sort(sorted.begin(), sorted.end());
    CHECK(timing.iteration_time == sorted[static_cast<std::size_t>(r - 1)]);
    REQUIRE(timing.heard.size() == static_cast<std::size_t>(r));
    for (const int i : timing.heard) {
      CHECK(delays[static_cast<std::size_t>(i)] <= timing.iteration_time);
    }
    ++counts[static_cast<std::size_t>(r)];
    tracker.observe(timing.heard, timing.arrivals);
  }
  CHECK(counts[n] >= 1);  // the first iteration
  int distinct = 0;
  for (const int c : counts) {
    distinct += c > 0 ? 1 : 0;
  }
  CHECK(distinct >= 3);  // r moves
}

TEST_CASE("adaptive r: a cluster-wide slowdown leaves r unchanged and a wider spread lowers it",
          "[sim][adaptive_r]") {
  // Every arrival times 7 (a slower cluster, the same ratios): the same r after every
  // iteration. A larger shift narrows the spread relative to the first arrivals: r is at least
  // as large on average.
  const int n = 10;
  const AdaptiveROptions o{.workers = n, .window = 5, .r_min = 2, .r_max = n, .slack = 0.5};
  ArrivalCountTracker plain(o);
  ArrivalCountTracker slow(o);
  SimulatedCluster twin(
      adaptive_r_delays(n, 0.2), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 3);
  SimulatedCluster narrow(
      adaptive_r_delays(n, 5.0), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 3);
  ArrivalCountTracker narrow_tracker(o);
  double sum_wide = 0.0;
  double sum_narrow = 0.0;
  for (int t = 0; t < 400; ++t) {
    const IterationTiming& timing = twin.next_iteration();
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) {
      order[static_cast<std::size_t>(i)] = i;
    }
    const std::vector<double> a = timing.arrivals;
    std::sort(order.begin(), order.end(), [&](int x, int y) {
      return a[static_cast<std::size_t>(x)] < a[static_cast<std::size_t>(y)];
    });
    const std::vector<int> heard(order.begin(), order.begin() + plain.r());
    std::vector<double> scaled = a;
    for (double& x : scaled) {
      x *= 7.0;
    }
    plain.observe(heard, a);
    slow.observe(heard, scaled);
    REQUIRE(plain.r() == slow.r());
    sum_wide += plain.r();
    const IterationTiming& n_timing = narrow.next_iteration();
    const std::vector<double> b = n_timing.arrivals;
    std::sort(order.begin(), order.end(), [&](int x, int y) {
      return b[static_cast<std::size_t>(x)] < b[static_cast<std::size_t>(y)];
    });
    narrow_tracker.observe(std::vector<int>(order.begin(), order.begin() + narrow_tracker.r()), b);
    sum_narrow += narrow_tracker.r();
  }
  // Shift 5: the slowest of 10 is about 5 + 2.9 against a second arrival near 5.2, within 1.5×:
  // r stays near n. Shift 0.2: the r_min-th arrival is near 0.4 and later ones soon pass 0.6.
  CHECK(sum_narrow / 400 > 9.0);
  CHECK(sum_wide / 400 < 6.0);
}

TEST_CASE("adaptive r: options name their first violation", "[sim][adaptive_r]") {
  struct Case {
    AdaptiveROptions options;
    const char* field;
  };
  const AdaptiveROptions ok{.workers = 4, .window = 3, .r_min = 2, .r_max = 3, .slack = 0.5};
  CHECK_FALSE(ok.validate());
  std::vector<Case> cases;
  cases.push_back({ok, "workers"});
  cases.back().options.workers = 0;
  cases.push_back({ok, "window"});
  cases.back().options.window = 0;
  for (const int r : {0, 5}) {
    cases.push_back({ok, "r_min"});
    cases.back().options.r_min = r;
  }
  for (const int r : {1, 5}) {
    cases.push_back({ok, "r_max"});
    cases.back().options.r_max = r;
  }
  for (const double slack : {-0.1, std::nan("")}) {
    cases.push_back({ok, "slack"});
    cases.back().options.slack = slack;
  }
  for (const auto& c : cases) {
    const Validation v = c.options.validate();
    REQUIRE(v);
    CHECK(v->field == c.field);
  }
}

TEST_CASE("adaptive r: the config plans it or refuses it at its pointer", "[sim][adaptive_r]") {
  const auto dir = testing::process_scratch("adaptive_r_test");
  auto config = [] {
    auto c = testing::small_logistic_config("adaptive");
    c["stopping"] = {{"rule", "adaptive_r"}, {"window", 3}, {"r_min", 2}, {"slack", 0.2}};
    return c;
  };
  const experiments::RunPlan plan = experiments::plan_run(config(), "cfg.json", dir);
  REQUIRE(plan.scheme.rule->adaptive_r());
  const AdaptiveROptions o = *plan.scheme.rule->adaptive_r();
  CHECK(o.window == 3);
  CHECK(o.r_min == 2);
  CHECK(o.r_max == 6);  // n by default
  CHECK(o.slack == 0.2);
  CHECK_FALSE(plan.scheme.rule->shape());
  // The same seed, the same r and losses.
  const auto a = testing::train_plan(plan);
  const auto b = testing::train_plan(experiments::plan_run(config(), "cfg.json", dir));
  REQUIRE(a.size() == b.size());
  CHECK(a[1].workers_heard == 6);  // no history: r_max
  int below = 0;
  for (std::size_t t = 1; t < a.size(); ++t) {
    CHECK(a[t].workers_heard == b[t].workers_heard);
    CHECK(a[t].loss == b[t].loss);
    CHECK(a[t].workers_heard >= 2);
    below += a[t].workers_heard < 6 ? 1 : 0;
  }
  CHECK(below > 0);

  struct Case {
    const char* pointer;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/stopping/window",
       0,
       "cfg.json:/stopping/window: out of range; got 0; expected an integer in [1, 1000000]"},
      {"/stopping/r_min",
       0,
       "cfg.json:/stopping/r_min: out of range; got 0; expected an integer in [1, 6]"},
      {"/stopping/r_max",
       1,
       "cfg.json:/stopping/r_max: out of range; got 1; expected an integer in [2, 6]"},
      {"/stopping/slack",
       -0.5,
       "cfg.json:/stopping/slack: out of range; got -0.5; expected a number >= 0"},
      {"/backend",
       {{"kind", "mpi"}, {"inject", false}},
       "cfg.json:/stopping/rule: the adaptive r follows the injected delays; this backend "
       "injects none; got \"adaptive_r\"; expected \"inject\": true, or a fixed r"},
  };
  for (const auto& c : cases) {
    auto edited = config();
    edited[nlohmann::json::json_pointer(c.pointer)] = c.value;
    INFO(c.pointer);
    CHECK(testing::plan_error(edited, dir) == c.message);
  }
}

}  // namespace stragglersim::sim

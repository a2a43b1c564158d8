// The adaptive deadline (docs/model.md §4 "Adaptive deadline"): the tracker's statistic against
// a sort of the pooled window over every heard pattern of a small cluster, a hand-computed
// history, the cluster stopping at the tracker's deadline, reproducibility, and the config.

#include "sim/adaptive_deadline.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/simulated_cluster.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::sim {
namespace {

using Statistic = AdaptiveDeadlineOptions::Statistic;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The statistic written out: sort the pooled window (censored = +inf) and index it.
std::optional<double> reference(std::vector<double> pool, const AdaptiveDeadlineOptions& o) {
  std::sort(pool.begin(), pool.end());
  const auto rank = [&](double q) {
    const double k = std::ceil(q * static_cast<double>(pool.size()));
    return static_cast<std::size_t>(std::max(k, 1.0)) - 1;
  };
  if (o.statistic == Statistic::kQuantile) {
    const double tau = pool[rank(o.quantile)];
    return tau < kInf ? std::optional<double>(tau) : std::nullopt;
  }
  const double median = pool[rank(0.5)];
  if (median == kInf) {
    return std::nullopt;
  }
  std::vector<double> deviations;
  for (const double x : pool) {
    deviations.push_back(x == kInf ? kInf : std::abs(x - median));
  }
  std::sort(deviations.begin(), deviations.end());
  const double mad = deviations[rank(0.5)];
  return mad < kInf ? std::optional<double>(median + o.mads * mad) : std::nullopt;
}

std::unique_ptr<DelayModel> exponential_delays(int workers) {
  return std::make_unique<ShiftedExponentialDelay>(
      workers,
      1.0,
      ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
}

/// A cluster of exponential_delays under the adaptive deadline `o`, cancel policy.
SimulatedCluster adaptive_cluster(const AdaptiveDeadlineOptions& o, std::uint64_t seed) {
  return {exponential_delays(o.workers),
          std::make_shared<AdaptiveDeadlineStopping>(o),
          StragglerPolicy::kCancel,
          seed};
}

}  // namespace

TEST_CASE("adaptive deadline: a hand-computed history", "[sim][adaptive_deadline]") {
  AdaptiveDeadlineOptions quantile{.workers = 2, .window = 2, .statistic = Statistic::kQuantile};
  AdaptiveDeadlineOptions mads{.workers = 2, .window = 2, .statistic = Statistic::kMedianMads};
  mads.mads = 2.0;
  quantile.quantile = 0.75;
  DeadlineTracker q(quantile);
  DeadlineTracker m(mads);
  CHECK_FALSE(q.deadline());  // no history: wait for all
  const std::vector<double> first = {1.0, 3.0};
  const std::vector<int> both = {0, 1};
  q.observe(both, first);
  m.observe(both, first);
  CHECK(q.deadline() == 3.0);  // pool {1, 3}: ⌈0.75·2⌉ = 2nd
  CHECK(m.deadline() == 1.0);  // median 1 (1st of 2), deviations {0, 2}: MAD 0
  const std::vector<double> second = {2.0, 5.0};
  const std::vector<int> only_first = {0};
  q.observe(only_first, second);
  m.observe(only_first, second);
  CHECK(q.deadline() == 3.0);  // pool {1, 2, 3, inf}: 3rd
  CHECK(m.deadline() == 4.0);  // median 2, deviations {1, 0, 1, inf}: MAD 1; 2 + 2·1
  const std::vector<int> none;
  q.observe(none, second);  // window 2: pool {2, inf, inf, inf}
  CHECK_FALSE(q.deadline());
  CHECK(q.iterations() == 2);
}

TEST_CASE("adaptive deadline: the statistic equals a sort of the pooled window in every case",
          "[sim][adaptive_deadline]") {
  // n = 3: every heard pattern (8) in turn, arrivals from a fixed sequence, windows 1..4, five
  // quantiles and four MAD multiples; 24 iterations each, the deadline checked after each.
  const int n = 3;
  std::vector<AdaptiveDeadlineOptions> options;
  for (int w = 1; w <= 4; ++w) {
    for (const double q : {0.1, 0.34, 0.5, 0.9, 1.0}) {
      options.push_back({.workers = n, .window = w, .statistic = Statistic::kQuantile});
      options.back().quantile = q;
    }
    for (const double k : {0.0, 0.5, 1.0, 3.0}) {
      options.push_back({.workers = n, .window = w, .statistic = Statistic::kMedianMads});
      options.back().mads = k;
    }
  }
  int checked = 0;
  int with_deadline = 0;
  for (const auto& o : options) {
    DeadlineTracker tracker(o);
    std::vector<std::vector<double>> history;
    for (int t = 0; t < 24; ++t) {
      std::vector<double> arrivals(n);
      std::vector<double> censored(n, kInf);
      std::vector<int> heard;
      for (int i = 0; i < n; ++i) {
        arrivals[static_cast<std::size_t>(i)] = 1.0 + std::fmod(0.37 * (t * n + i) * (i + 1), 2.0);
        if (((t % 8) >> i) & 1) {
          heard.push_back(i);
          censored[static_cast<std::size_t>(i)] = arrivals[static_cast<std::size_t>(i)];
        }
      }
      tracker.observe(heard, arrivals);
      history.push_back(censored);
      std::vector<double> pool;
      const auto from = history.size() > static_cast<std::size_t>(o.window)
                            ? history.size() - static_cast<std::size_t>(o.window)
                            : 0;
      for (std::size_t k = from; k < history.size(); ++k) {
        pool.insert(pool.end(), history[k].begin(), history[k].end());
      }
      INFO("window " << o.window << ", iteration " << t);
      CHECK(tracker.deadline() == reference(pool, o));
      ++checked;
      with_deadline += tracker.deadline() ? 1 : 0;
    }
  }
  CHECK(checked == 36 * 24);
  CHECK(with_deadline > checked / 4);
  CHECK(with_deadline < checked);
}

TEST_CASE("adaptive deadline: the median is quantile 0.5 and median + 0 MADs",
          "[sim][adaptive_deadline]") {
  const int n = 8;
  AdaptiveDeadlineOptions quantile{.workers = n, .window = 6, .statistic = Statistic::kQuantile};
  quantile.quantile = 0.5;
  AdaptiveDeadlineOptions mads{.workers = n, .window = 6, .statistic = Statistic::kMedianMads};
  mads.mads = 0.0;
  SimulatedCluster a = adaptive_cluster(quantile, 3);
  SimulatedCluster b = adaptive_cluster(mads, 3);
  int with = 0;
  for (int t = 0; t < 500; ++t) {
    const IterationTiming& x = a.next_iteration();
    const IterationTiming& y = b.next_iteration();
    REQUIRE(x.deadline == y.deadline);
    REQUIRE(x.heard == y.heard);
    with += x.deadline ? 1 : 0;
  }
  CHECK(with > 250);
}

TEST_CASE("adaptive deadline: the cluster stops at the tracker's deadline",
          "[sim][adaptive_deadline]") {
  // A twin waiting for every worker draws the same delays (rules do not touch the delay stream);
  // a tracker fed by hand gives the deadline; the heard set is every worker within it.
  const int n = 8;
  AdaptiveDeadlineOptions o{.workers = n, .window = 5, .statistic = Statistic::kMedianMads};
  o.mads = 1.0;
  SimulatedCluster cluster = adaptive_cluster(o, 17);
  SimulatedCluster twin(
      exponential_delays(n), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 17);
  DeadlineTracker tracker(o);
  int cut = 0;
  for (int t = 1; t <= 300; ++t) {
    const IterationTiming& timing = cluster.next_iteration();
    const std::vector<double>& delays = twin.next_iteration().delays;
    REQUIRE(timing.delays == delays);
    REQUIRE(timing.deadline == tracker.deadline());
    const double slowest = *std::max_element(delays.begin(), delays.end());
    std::vector<int> within;
    for (int i = 0; i < n; ++i) {
      if (!tracker.deadline() || delays[static_cast<std::size_t>(i)] <= *tracker.deadline()) {
        within.push_back(i);
      }
    }
    std::vector<int> heard = timing.heard;
    std::sort(heard.begin(), heard.end());
    CHECK(heard == within);
    const double stop = tracker.deadline() ? std::min(*tracker.deadline(), slowest) : slowest;
    CHECK(timing.iteration_time == stop);
    cut += static_cast<int>(within.size()) < n ? 1 : 0;
    tracker.observe(timing.heard, timing.arrivals);
  }
  CHECK(cut > 150);
}

TEST_CASE("adaptive deadline: options name their first violation", "[sim][adaptive_deadline]") {
  struct Case {
    AdaptiveDeadlineOptions options;
    const char* field;
  };
  AdaptiveDeadlineOptions ok{.workers = 4, .window = 3, .statistic = Statistic::kQuantile};
  CHECK_FALSE(ok.validate());
  std::vector<Case> cases;
  cases.push_back({ok, "workers"});
  cases.back().options.workers = 0;
  cases.push_back({ok, "window"});
  cases.back().options.window = 0;
  for (const double q : {0.0, -0.5, 1.5, std::nan("")}) {
    cases.push_back({ok, "quantile"});
    cases.back().options.quantile = q;
  }
  cases.push_back({ok, "mads"});
  cases.back().options.statistic = Statistic::kMedianMads;
  cases.back().options.mads = -1.0;
  for (const auto& c : cases) {
    const Validation v = c.options.validate();
    REQUIRE(v);
    CHECK(v->field == c.field);
  }
}

TEST_CASE("adaptive deadline: the config plans it or refuses it at its pointer",
          "[sim][adaptive_deadline]") {
  const auto dir = testing::process_scratch("adaptive_deadline_test");
  auto config = [] {
    auto c = testing::small_logistic_config("adaptive");
    c["stopping"] = {{"rule", "adaptive_deadline"}, {"window", 4}, {"quantile", 0.8}};
    return c;
  };
  const experiments::RunPlan plan = experiments::plan_run(config(), "cfg.json", dir);
  REQUIRE(plan.scheme.rule->adaptive_deadline());
  CHECK(plan.scheme.rule->adaptive_deadline()->window == 4);
  CHECK(plan.scheme.rule->adaptive_deadline()->quantile == 0.8);
  CHECK_FALSE(plan.scheme.rule->shape());
  // The same seed, the same deadlines.
  const auto a = testing::train_plan(plan);
  const auto b = testing::train_plan(experiments::plan_run(config(), "cfg.json", dir));
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    CHECK(a[t].deadline == b[t].deadline);
    CHECK(a[t].loss == b[t].loss);
  }
  CHECK_FALSE(a[1].deadline);  // no history yet
  int with = 0;
  for (std::size_t t = 2; t < a.size(); ++t) {
    if (a[t].deadline) {
      ++with;
      CHECK(a[t].iteration_time <= *a[t].deadline);
      CHECK(*a[t].deadline >= 1.0);  // every delay is at least its shift
    } else {
      CHECK(a[t].workers_heard == 6);
    }
  }
  CHECK(with > 0);

  struct Case {
    const char* pointer;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/stopping/window",
       0,
       "cfg.json:/stopping/window: out of range; got 0; expected an integer in [1, 1000000]"},
      {"/stopping/quantile",
       -0.1,
       "cfg.json:/stopping/quantile: out of range; got -0.1; expected a number in (0, 1]"},
      {"/stopping/mads",
       2,
       "cfg.json:/stopping/mads: the adaptive deadline takes one statistic; expected exactly one "
       "of 'quantile' (a number in (0, 1]) and 'mads' (a number >= 0)"},
      {"/backend",
       {{"kind", "mpi"}, {"inject", false}},
       "cfg.json:/stopping/rule: the adaptive deadline follows the injected delays; this backend "
       "injects none; got \"adaptive_deadline\"; expected \"inject\": true, or a fixed deadline"},
  };
  for (const auto& c : cases) {
    auto edited = config();
    edited[nlohmann::json::json_pointer(c.pointer)] = c.value;
    INFO(c.pointer);
    CHECK(testing::plan_error(edited, dir) == c.message);
  }
  auto negative = config();
  negative["stopping"].erase("quantile");
  negative["stopping"]["mads"] = -1;
  CHECK(testing::plan_error(negative, dir) ==
        "cfg.json:/stopping/mads: out of range; got -1; expected a number >= 0");
  auto neither = config();
  neither["stopping"].erase("quantile");
  CHECK(testing::plan_error(neither, dir) ==
        "cfg.json:/stopping/quantile: the adaptive deadline takes one statistic; expected "
        "exactly one of 'quantile' (a number in (0, 1]) and 'mads' (a number >= 0)");
}

}  // namespace stragglersim::sim

// The theory's trace-rows path (sim/theory/iteration_time_theory.h, method "trace rows"): exact
// averages over the rows of a replayed trace against an arrival-by-arrival walk of every row
// written here, and against long seeded replays in bootstrap and block mode.

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/delays/trace_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/stopping_rule.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {
namespace {

DelayTrace make_trace(const std::vector<std::vector<double>>& rows) {
  DelayTrace t;
  t.path = "rows.csv";
  t.workers = static_cast<int>(rows.front().size());
  t.has_iterations = true;
  t.per_iteration = rows;
  t.per_worker.assign(rows.front().size(), {});
  for (std::size_t k = 0; k < rows.size(); ++k) {
    t.iterations.push_back(static_cast<std::int64_t>(k));
    for (std::size_t i = 0; i < rows[k].size(); ++i) t.per_worker[i].push_back(rows[k][i]);
  }
  return t;
}

struct Walk {
  double stop = 0.0;
  std::vector<bool> group_heard;
};

/// Walks one row's arrivals in time order until the rule stops (distinct times within a row).
Walk walk_row(const SchemeDescription& s, std::vector<double> row) {
  const int n = s.workers;
  const int d = s.code == CodeFamily::kFractionalRepetition ? s.d : 1;
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return row[static_cast<std::size_t>(a)] < row[static_cast<std::size_t>(b)];
  });
  Walk w{0.0, std::vector<bool>(static_cast<std::size_t>(n / d), false)};
  int heard = 0;
  for (const int i : order) {
    const double t = row[static_cast<std::size_t>(i)];
    if (s.rule == RuleKind::kDeadline && t > s.deadline) {
      w.stop = s.deadline;
      return w;
    }
    ++heard;
    w.group_heard[static_cast<std::size_t>(i / d)] = true;
    w.stop = t;
    const bool covered =
        std::all_of(w.group_heard.begin(), w.group_heard.end(), [](bool b) { return b; });
    bool done = heard == n;
    if (s.rule == RuleKind::kFirstR) done = heard == s.r;
    if (s.rule == RuleKind::kDecodable && s.code == CodeFamily::kFractionalRepetition) {
      done = covered;
    }
    if (s.rule == RuleKind::kDecodable && s.code == CodeFamily::kCyclic) {
      done = heard == n - s.d + 1;
    }
    if (s.rule == RuleKind::kFirstROrDecodable) done = heard == s.r || covered;
    if (done) return w;
  }
  return w;
}

TEST_CASE(
    "theory: trace rows (mean, sd, quantiles, erasures) equal a walk of every row for every rule "
    "and code",
    "[sim][theory][trace_rows]") {
  // 6 workers, 9 rows; distinct times within a row, repeats across rows, a slow row; the
  // deadlines fall between the rows' maxima (some rows stop before them).
  std::vector<std::vector<double>> rows;
  for (int r = 0; r < 9; ++r) {
    std::vector<double> row;
    for (int i = 0; i < 6; ++i) {
      row.push_back(0.5 * ((r * 7 + i * 5) % 11 + 1) * (r == 4 ? 3.0 : 1.0) + 0.001 * i);
    }
    rows.push_back(row);
  }
  const DelayTrace trace = make_trace(rows);
  const auto frc = CodeFamily::kFractionalRepetition;
  const std::vector<SchemeDescription> schemes = {
      {.workers = 6, .rule = RuleKind::kAll},
      {.workers = 6, .rule = RuleKind::kFirstR, .r = 4},
      {.workers = 6, .rule = RuleKind::kDeadline, .deadline = 5.2},
      {.workers = 6, .rule = RuleKind::kDecodable},
      {.workers = 6, .rule = RuleKind::kFirstROrDecodable, .r = 2},
      {.workers = 6, .code = frc, .d = 2, .rule = RuleKind::kAll},
      {.workers = 6, .code = frc, .d = 2, .rule = RuleKind::kFirstR, .r = 2},
      {.workers = 6, .code = frc, .d = 2, .rule = RuleKind::kDeadline, .deadline = 10.5},
      {.workers = 6, .code = frc, .d = 2, .rule = RuleKind::kDecodable},
      {.workers = 6, .code = frc, .d = 3, .rule = RuleKind::kFirstROrDecodable, .r = 3},
      {.workers = 6, .code = frc, .d = 2, .rule = RuleKind::kFirstROrDecodable, .r = 4},
      {.workers = 6, .code = CodeFamily::kCyclic, .d = 2, .rule = RuleKind::kDecodable},
  };
  for (const auto& s : schemes) {
    const TraceDelay delay(scheme_loads(s), trace, {.mode = TraceDelay::Mode::kBootstrap});
    std::vector<double> stops;
    double erased = 0.0;
    double pairs_erased = 0.0;
    std::size_t groups = 0;
    std::size_t pairs = 0;
    for (const auto& row : rows) {
      std::vector<double> scaled;
      for (std::size_t i = 0; i < row.size(); ++i) {
        scaled.push_back(delay.scaled(static_cast<int>(i), row[i]));
      }
      const Walk w = walk_row(s, scaled);
      stops.push_back(w.stop);
      groups = w.group_heard.size();
      for (std::size_t g = 0; g < groups; ++g) {
        erased += w.group_heard[g] ? 0.0 : 1.0;
        for (std::size_t h = g + 1; h < groups; ++h) {
          pairs_erased += !w.group_heard[g] && !w.group_heard[h] ? 1.0 : 0.0;
        }
      }
      pairs = groups * (groups - 1) / 2;
    }
    const double count = static_cast<double>(rows.size());
    double mean = 0.0;
    for (const double z : stops) mean += z / count;
    double square = 0.0;
    for (const double z : stops) square += (z - mean) * (z - mean) / count;
    const auto p = predict_iteration_time(s, delay);
    INFO("rule " << static_cast<int>(s.rule) << " code " << static_cast<int>(s.code) << " d "
                 << s.d);
    CHECK(p.method == "trace rows");
    CHECK(p.mean == Approx(mean).epsilon(1e-13));
    // The p-quantile over rows is the ⌈9p⌉-th smallest stop.
    std::vector<double> sorted = stops;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [level, rank] : {std::pair{0.05, 1}, {0.3, 3}, {0.5, 5}, {0.9, 9}}) {
      CHECK(iteration_time_quantile(s, delay, level) == sorted[rank - 1]);
    }
    CHECK(p.sd == Approx(std::sqrt(square)).epsilon(1e-10));
    if (s.code != CodeFamily::kCyclic) {
      CHECK(p.q == Approx(erased / (count * static_cast<double>(groups))).margin(1e-15));
      CHECK(p.q2 == Approx(pairs_erased / (count * static_cast<double>(pairs))).margin(1e-15));
    } else {
      CHECK(p.q == 0.0);
    }
  }
}

TEST_CASE("theory: the marginal path on replayed rows says it assumes independent workers",
          "[sim][theory][trace_rows]") {
  const DelayTrace trace = make_trace({{1.0, 2.0}, {3.0, 4.0}});
  const SchemeDescription all{.workers = 2, .rule = RuleKind::kAll};
  const TraceDelay rows({1.0, 1.0}, trace, {.mode = TraceDelay::Mode::kCycle});
  const auto forced = predict_iteration_time(all, rows, PredictionMethod::kNumerical);
  CHECK(forced.method.find("numerical (independent marginals") == 0);
  // Marginals: max of independent {1, 3} and {2, 4}: (2 + 3 + 4 + 4)/4; rows: (2 + 4)/2.
  CHECK(forced.mean == Approx(13.0 / 4.0));
  CHECK(predict_iteration_time(all, rows).mean == 3.0);
  const TraceDelay empirical({1.0, 1.0}, trace, {.mode = TraceDelay::Mode::kEmpirical});
  const auto independent = predict_iteration_time(all, empirical);
  CHECK(independent.method == "numerical");
  CHECK(independent.mean == Approx(13.0 / 4.0));
}

/// 8 workers, 60 rows, persistent machine-wide slowness: rows in runs of 5 at factor 1 or 3,
/// each worker's own spread within a row.
DelayTrace correlated_trace() {
  boost::random::mt19937 engine(2024);
  boost::random::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::vector<double>> rows;
  for (int r = 0; r < 60; ++r) {
    const double factor = (r / 5) % 3 == 0 ? 3.0 : 1.0;
    std::vector<double> row;
    for (int i = 0; i < 8; ++i) row.push_back(factor * (1.0 + u(engine)));
    rows.push_back(row);
  }
  return make_trace(rows);
}

TEST_CASE("theory: trace rows match long seeded bootstrap and block replays",
          "[sim][theory][trace_rows]") {
  const DelayTrace trace = correlated_trace();
  const SchemeDescription s{.workers = 8,
                            .code = CodeFamily::kFractionalRepetition,
                            .d = 2,
                            .rule = RuleKind::kFirstROrDecodable,
                            .r = 3};
  auto code = std::make_shared<codes::FractionalRepetitionCode>(8, 2);
  const std::vector<double> loads = scheme_loads(s);
  for (const auto mode : {TraceDelay::Mode::kBootstrap, TraceDelay::Mode::kBlock}) {
    const TraceDelay theory_delay(loads, trace, {.mode = mode, .block = 10});
    const auto p = predict_iteration_time(s, theory_delay);
    REQUIRE(p.method == "trace rows");
    DelayOnlySimulator simulator(
        std::make_unique<TraceDelay>(loads, trace, TraceDelay::Options{.mode = mode, .block = 10}),
        std::make_shared<FirstROrDecodableStopping>(3, code),
        code,
        StragglerPolicy::kCancel,
        23);
    // Batch means over 400 batches of 250 iterations (≫ L): an honest s.e. under block
    // persistence.
    const int batch = 250;
    const int batches = 400;
    std::vector<double> time_means(batches, 0.0);
    std::vector<double> erased_means(batches, 0.0);
    int k = 0;
    simulator.run(static_cast<std::uint64_t>(batch) * batches, [&](const DelayOnlyIteration& it) {
      const auto b = static_cast<std::size_t>(k++ / batch);
      time_means[b] += it.iteration_time / batch;
      erased_means[b] += (4.0 - it.groups_covered) / 4.0 / batch;
    });
    const auto mean_se = [&](const std::vector<double>& v) {
      double m = 0.0;
      for (const double x : v) m += x / batches;
      double ss = 0.0;
      for (const double x : v) ss += (x - m) * (x - m);
      return std::pair{m, std::sqrt(ss / (batches - 1.0) / batches)};
    };
    const auto [time, time_se] = mean_se(time_means);
    const auto [q, q_se] = mean_se(erased_means);
    INFO("mode " << static_cast<int>(mode) << ": theory " << p.mean << " q " << p.q << ", replay "
                 << time << " ± " << time_se << " q " << q << " ± " << q_se);
    CHECK(std::abs(time - p.mean) < 4.0 * time_se);
    CHECK(std::abs(q - p.q) < 4.0 * q_se);
    // The independent-marginal prediction misses the machine-wide slowness.
    const auto marginal = predict_iteration_time(s, theory_delay, PredictionMethod::kNumerical);
    CHECK(std::abs(time - marginal.mean) > 10.0 * time_se);
  }
}

}  // namespace
}  // namespace stragglersim::sim

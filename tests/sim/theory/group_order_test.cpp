// Group codes whose groups are not runs of consecutive workers (`proportional`): the view in
// group order against the model it permutes, the permutation check over every small vector, and
// the theory's predictions for `proportional` against a hand-computed replay, FRC worker for
// worker, and the event engine.

#include "sim/theory/group_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/trace_delay.h"
#include "sim/simulated_cluster.h"
#include "sim/stopping_rule.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {
namespace {

std::shared_ptr<const codes::ProportionalCode> proportional(int n,
                                                            int k,
                                                            int d,
                                                            std::vector<double> factors) {
  return std::make_shared<codes::ProportionalCode>(codes::ProportionalCode::Options{
      .workers = n, .partitions = k, .d = d, .factors = std::move(factors)});
}

SchemeDescription describe(std::shared_ptr<const codes::GradientCode> code,
                           std::shared_ptr<const StoppingRule> rule) {
  std::string why;
  const auto s = describe_scheme({std::move(code), std::move(rule)}, &why);
  INFO(why);
  REQUIRE(s.has_value());
  return *s;
}

/// A 1.6× worker every fourth of 12, the others within 2 % of 1.
std::vector<double> scattered_factors(int n) {
  std::vector<double> f(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    f[static_cast<std::size_t>(i)] = i % 4 == 1 ? 1.6 : 1.0 + 0.01 * (i % 3);
  }
  return f;
}

}  // namespace

TEST_CASE("group order: the permutation check agrees with a count over every small vector",
          "[theory][group_order]") {
  // Every vector of length 0..3 over {-1, ..., 3}, against "each of 0..n-1 exactly once".
  int permutations = 0;
  int checked = 0;
  for (int length = 0; length <= 3; ++length) {
    int total = 1;
    for (int j = 0; j < length; ++j) total *= 5;
    for (int code = 0; code < total; ++code) {
      std::vector<int> v;
      for (int j = 0, c = code; j < length; ++j, c /= 5) v.push_back(c % 5 - 1);
      for (int n = 0; n <= 4; ++n) {
        bool expected = static_cast<int>(v.size()) == n;
        for (int i = 0; i < n && expected; ++i) {
          expected = std::count(v.begin(), v.end(), i) == 1;
        }
        CHECK(is_permutation_of_workers(v, n) == expected);
        permutations += expected ? 1 : 0;
        ++checked;
      }
    }
  }
  CHECK(checked == 5 * (1 + 5 + 25 + 125));
  CHECK(permutations == 1 + 1 + 2 + 6);
}

TEST_CASE("group order: the view answers for the worker it renumbers", "[theory][group_order]") {
  const std::vector<double> factors = scattered_factors(8);
  const std::vector<double> loads = {1.0, 2.0, 1.5, 1.0, 3.0, 1.0, 2.5, 1.2};
  const HeterogeneousDelay model(loads, {.shift = 0.5, .rate = 2.0, .factors = factors});
  const std::vector<int> order = {3, 7, 0, 5, 1, 6, 2, 4};
  const GroupOrderedDelay view(model, order);
  REQUIRE(view.workers() == 8);
  CHECK(view.name() == model.name());
  for (int j = 0; j < 8; ++j) {
    const int i = order[static_cast<std::size_t>(j)];
    CHECK(view.mean(j) == model.mean(i));
    CHECK(view.variance(j) == model.variance(i));
    CHECK(view.lower_bound(j) == model.lower_bound(i));
    for (const double t : {0.5, 1.0, 2.0, 4.0}) {
      CHECK(view.cdf(j, t) == model.cdf(i, t));
    }
  }
  // A shifted exponential's per-worker arrays are renumbered too.
  const ShiftedExponentialDelay se(loads, {.shift = 1.0, .rate = 1.0});
  const GroupOrderedDelay se_view(se, order);
  const auto shape = se_view.shifted_exponential();
  REQUIRE(shape);
  const auto original = se.shifted_exponential();
  REQUIRE(shape->worker_shift.size() == 8);
  for (std::size_t j = 0; j < 8; ++j) {
    CHECK(shape->worker_shift[j] == original->worker_shift[static_cast<std::size_t>(order[j])]);
    CHECK(shape->worker_scale[j] == original->worker_scale[static_cast<std::size_t>(order[j])]);
  }
}

TEST_CASE("group order: proportional on a replayed table equals the stops computed by hand",
          "[theory][group_order]") {
  // n = 4, d = 2: workers 1 and 3 (factor 1) form group 0, workers 0 and 2 (1.6) group 1, so the
  // groups are not consecutive. A table of 3 rows, replayed in cycle: E[T] and q are averages
  // over the rows of each row's stop, computed here from the code's groups and loads directly.
  const auto code = proportional(4, 8, 2, {1.6, 1.0, 1.6, 1.0});
  const std::vector<int> group = *code->worker_groups();
  REQUIRE(group == std::vector<int>{1, 0, 1, 0});
  const std::vector<std::vector<double>> table = {
      {1.0, 2.0, 3.0, 4.0}, {2.5, 0.5, 1.0, 3.0}, {4.0, 3.0, 2.0, 1.0}};
  DelayTrace trace;
  trace.path = "rows.csv";
  trace.workers = 4;
  trace.has_iterations = true;
  trace.per_iteration = table;
  trace.per_worker.assign(4, {});
  for (std::size_t k = 0; k < table.size(); ++k) {
    trace.iterations.push_back(static_cast<std::int64_t>(k));
    for (std::size_t i = 0; i < 4; ++i) trace.per_worker[i].push_back(table[k][i]);
  }
  const std::vector<double> loads = code->loads();
  const TraceDelay delay(loads, trace, {.mode = TraceDelay::Mode::kCycle});
  // Decodable: the later of the two groups' first arrivals (tail "load": T = load · seconds).
  double expected = 0.0;
  for (const auto& row : table) {
    std::vector<double> first(2, INFINITY);
    for (std::size_t i = 0; i < 4; ++i) {
      double& f = first[static_cast<std::size_t>(group[i])];
      f = std::min(f, loads[i] * row[i]);
    }
    expected += std::max(first[0], first[1]) / 3.0;
  }
  const SchemeDescription s = describe(code, std::make_shared<DecodableStopping>(code));
  CHECK(s.code == CodeFamily::kFractionalRepetition);
  CHECK(s.d == 2);
  CHECK(s.loads == loads);
  const IterationTimePrediction p = predict_iteration_time(s, delay);
  CHECK(p.method == "trace rows");
  CHECK(p.mean == Approx(expected).epsilon(1e-14));
  // First 2: a group is erased when the two earliest workers both belong to the other group.
  double q = 0.0;
  for (const auto& row : table) {
    std::vector<std::size_t> by_time = {0, 1, 2, 3};
    std::sort(by_time.begin(), by_time.end(), [&](std::size_t x, std::size_t y) {
      return loads[x] * row[x] < loads[y] * row[y];
    });
    const bool same = group[by_time[0]] == group[by_time[1]];
    q += (same ? 1.0 : 0.0) / 2.0 / 3.0;
  }
  CHECK(q > 0.0);
  const IterationTimePrediction first_two =
      predict_iteration_time(describe(code, std::make_shared<FirstRStopping>(2)), delay);
  CHECK(first_two.q == Approx(q).epsilon(1e-14));
}

TEST_CASE("group order: proportional with equal factors and k = n is FRC worker for worker",
          "[theory][group_order]") {
  const int n = 12;
  const auto code = proportional(n, n, 3, std::vector<double>(n, 1.0));
  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(n, 3);
  const HeterogeneousDelay delay(frc->loads(),
                                 {.shift = 1.0, .rate = 1.0, .factors = scattered_factors(n)});
  for (const auto& rule : std::vector<std::shared_ptr<const StoppingRule>>{
           std::make_shared<FirstRStopping>(6), std::make_shared<DeadlineStopping>(4.0, n)}) {
    const IterationTimePrediction a = predict_iteration_time(describe(code, rule), delay);
    const IterationTimePrediction b = predict_iteration_time(describe(frc, rule), delay);
    CHECK(a.mean == b.mean);
    CHECK(a.q == b.q);
    CHECK(a.q2 == b.q2);
  }
}

TEST_CASE("group order: proportional's mean time and q are the event engine's within 4 s.e.",
          "[theory][group_order]") {
  // n = 12, d = 2, k = 4n under the factors' heterogeneous shifted exponential: the engine
  // stops by the rule on the code itself and never sees the theory's group order.
  const int n = 12;
  const std::vector<double> factors = scattered_factors(n);
  const auto code = proportional(n, 4 * n, 2, factors);
  const std::vector<int> group = *code->worker_groups();
  const HeterogeneousDelay::Options options{.shift = 1.0, .rate = 1.0, .factors = factors};
  for (const auto& rule : std::vector<std::shared_ptr<const StoppingRule>>{
           std::make_shared<DecodableStopping>(code),
           std::make_shared<FirstRStopping>(6),
           std::make_shared<DeadlineStopping>(4.0, n)}) {
    const HeterogeneousDelay model(code->loads(), options);
    const IterationTimePrediction p = predict_iteration_time(describe(code, rule), model);
    SimulatedCluster cluster(std::make_unique<HeterogeneousDelay>(code->loads(), options),
                             rule,
                             StragglerPolicy::kCancel,
                             21);
    const int draws = 20000;
    double sum = 0.0;
    double sum2 = 0.0;
    double erased = 0.0;
    double erased2 = 0.0;
    for (int t = 0; t < draws; ++t) {
      const IterationTiming& it = cluster.next_iteration();
      sum += it.iteration_time;
      sum2 += it.iteration_time * it.iteration_time;
      std::vector<char> covered(static_cast<std::size_t>(n / 2), 0);
      for (const int i : it.heard)
        covered[static_cast<std::size_t>(group[static_cast<std::size_t>(i)])] = 1;
      const double e =
          1.0 - static_cast<double>(std::count(covered.begin(), covered.end(), 1)) / (n / 2.0);
      erased += e;
      erased2 += e * e;
    }
    const double mean = sum / draws;
    const double se = std::sqrt((sum2 / draws - mean * mean) / (draws - 1));
    const double q = erased / draws;
    const double q_se = std::sqrt(std::max(erased2 / draws - q * q, 0.0) / (draws - 1));
    INFO(rule->name() << ": theory " << p.mean << ", simulated " << mean << " ± " << se << "; q "
                      << p.q << " against " << q << " ± " << q_se);
    CHECK(std::abs(p.mean - mean) <= 4.0 * se);
    CHECK(std::abs(p.q - q) <= 4.0 * q_se + 1e-12);
  }
}

}  // namespace stragglersim::sim

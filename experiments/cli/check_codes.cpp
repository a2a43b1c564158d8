// The `check` rows of the codes' group erasure (sim/theory/iteration_time_theory.h): q of FRC
// under first_r, deadline and first_r_or_decodable, and the heterogeneity-aware loads
// (`proportional`, `proportional_crc`) under heterogeneous workers, against the fast path and
// the event engine.

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codes/proportional_code.h"
#include "codes/proportional_cyclic_code.h"
#include "experiments/cli/check_claims.h"
#include "models/base/invariant.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments::check {

namespace {

/// The slowdown factors of the heterogeneous-loads rows: 1.6 for every fourth worker (from the
/// second), 1.00–1.02 for the others, so that sorted groups are not runs of consecutive workers.
std::vector<double> persistent_factors(int n) {
  std::vector<double> factors(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    factors[static_cast<std::size_t>(i)] = i % 4 == 1 ? 1.6 : 1.0 + 0.01 * (i % 3);
  }
  return factors;
}

}  // namespace

void erasure_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 4000 : 40000;
  struct Case {
    std::string label;
    int n, d;
    std::shared_ptr<const sim::StoppingRule> rule;
    sim::SchemeDescription description;
  };
  const std::vector<Case> cases = {
      {"first_r n=64 d=2 r=32",
       64,
       2,
       std::make_shared<sim::FirstRStopping>(32),
       {64, sim::CodeFamily::kFractionalRepetition, 2, sim::RuleKind::kFirstR, 32, 0.0}},
      {"first_r n=30 d=3 r=15",
       30,
       3,
       std::make_shared<sim::FirstRStopping>(15),
       {30, sim::CodeFamily::kFractionalRepetition, 3, sim::RuleKind::kFirstR, 15, 0.0}},
      {"deadline n=30 d=2 after=3.5",
       30,
       2,
       std::make_shared<sim::DeadlineStopping>(3.5, 30),
       {30, sim::CodeFamily::kFractionalRepetition, 2, sim::RuleKind::kDeadline, 1, 3.5}},
      {"first_r_or_decodable n=12 d=3 r=9",
       12,
       3,
       nullptr,
       {12, sim::CodeFamily::kFractionalRepetition, 3, sim::RuleKind::kFirstROrDecodable, 9, 0.0}},
  };
  for (const auto& c : cases) {
    const auto code = frc_or_uncoded(c.n, c.d);
    const auto rule = c.rule ? c.rule : std::make_shared<sim::FirstROrDecodableStopping>(9, code);
    const sim::ShiftedExponentialDelay model(
        code->loads(), {.shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad});
    const auto p = sim::predict_iteration_time(c.description, model);
    sim::DelayOnlySimulator s(std::make_unique<sim::ShiftedExponentialDelay>(
                                  code->loads(),
                                  sim::ShiftedExponentialDelay::Options{
                                      .shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad}),
                              rule,
                              code,
                              sim::StragglerPolicy::kCancel,
                              12);
    Mean erased;
    const double groups = static_cast<double>(c.n / c.d);
    s.run(iterations,
          [&](const sim::DelayOnlyIteration& it) { erased.add(1.0 - it.groups_covered / groups); });
    rows.push_back(two_sided("q " + c.label, p.q, erased.mean, erased.se()));
  }
}

/// Heterogeneity-aware loads (`proportional`, docs/model.md §5) under heterogeneous shifted
/// exponentials: n = 24, d = 2, k = 4n, a 1.6× worker every fourth (so the groups are not runs of
/// consecutive workers); E[T] and q of the theory (FRC's formulas in group order, the code's
/// loads) against the event engine, which knows nothing of the theory's groups.
void proportional_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 10000 : 100000;
  const int n = 24;
  const std::vector<double> factors = persistent_factors(n);
  const auto code = std::make_shared<codes::ProportionalCode>(codes::ProportionalCode::Options{
      .workers = n, .partitions = 4 * n, .d = 2, .factors = factors});
  const std::vector<int> group = *code->worker_groups();
  const sim::HeterogeneousDelay::Options delay{.shift = 1.0, .rate = 1.0, .factors = factors};
  const std::vector<std::pair<std::string, std::shared_ptr<const sim::StoppingRule>>> rules = {
      {"decodable", std::make_shared<sim::DecodableStopping>(code)},
      {"first_r r=12", std::make_shared<sim::FirstRStopping>(12)},
      {"deadline after=4", std::make_shared<sim::DeadlineStopping>(4.0, n)}};
  for (const auto& [label, rule] : rules) {
    std::string why;
    const auto description = sim::describe_scheme({code, rule}, &why);
    STRAGGLERSIM_ASSERT(description.has_value(), why);
    const sim::HeterogeneousDelay model(code->loads(), delay);
    const auto p = sim::predict_iteration_time(*description, model);
    sim::SimulatedCluster cluster(std::make_unique<sim::HeterogeneousDelay>(code->loads(), delay),
                                  rule,
                                  sim::StragglerPolicy::kCancel,
                                  14);
    Mean time;
    Mean erased;
    std::vector<char> covered;
    for (std::uint64_t t = 0; t < iterations; ++t) {
      const sim::IterationTiming& it = cluster.next_iteration();
      time.add(it.iteration_time);
      covered.assign(static_cast<std::size_t>(n / 2), 0);
      for (const int i : it.heard) {
        covered[static_cast<std::size_t>(group[static_cast<std::size_t>(i)])] = 1;
      }
      erased.add(1.0 - static_cast<double>(std::count(covered.begin(), covered.end(), 1)) /
                           static_cast<double>(covered.size()));
    }
    const std::string name = fmt::format("proportional n={} d=2 k=4n {}", n, label);
    // Under the deadline nearly every iteration stops at τ (E[T] = τ, s.e. 0): q is the claim.
    if (label != "deadline after=4") {
      rows.push_back(two_sided("E[T] " + name, p.mean, time.mean, time.se()));
    }
    if (label != "decodable") {
      rows.push_back(two_sided("q " + name, p.q, erased.mean, erased.se()));
    }
  }
}

/// The heterogeneity-aware cyclic code (`proportional_crc` s = 2, k = 4n, docs/model.md §5) on
/// proportional_rows' workers: E[T] under `decodable`, the (n − s)-th arrival of the per-worker
/// marginals at the code's loads (Poisson-binomial), against the event engine.
void proportional_cyclic_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 10000 : 100000;
  const int n = 24;
  const std::vector<double> factors = persistent_factors(n);
  const sim::HeterogeneousDelay::Options delay{.shift = 1.0, .rate = 1.0, .factors = factors};
  const auto cyclic =
      std::make_shared<codes::ProportionalCyclicCode>(codes::ProportionalCyclicCode::Options{
          .workers = n, .partitions = 4 * n, .s = 2, .factors = factors, .seed = 5});
  const auto decodable = std::make_shared<sim::DecodableStopping>(cyclic);
  std::string why;
  const auto description = sim::describe_scheme({cyclic, decodable}, &why);
  STRAGGLERSIM_ASSERT(description.has_value(), why);
  const auto p =
      sim::predict_iteration_time(*description, sim::HeterogeneousDelay(cyclic->loads(), delay));
  sim::SimulatedCluster cluster(std::make_unique<sim::HeterogeneousDelay>(cyclic->loads(), delay),
                                decodable,
                                sim::StragglerPolicy::kCancel,
                                15);
  Mean time;
  for (std::uint64_t t = 0; t < iterations; ++t) {
    time.add(cluster.next_iteration().iteration_time);
  }
  rows.push_back(two_sided(fmt::format("E[T] proportional_crc n={} s=2 k=4n decodable", n),
                           p.mean,
                           time.mean,
                           time.se()));
}

}  // namespace stragglersim::experiments::check

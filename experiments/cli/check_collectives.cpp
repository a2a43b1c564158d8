// The `check` rows of the collectives' iteration time (sim/theory/collective_theory.h,
// docs/theory.md "Collectives") against the event engine (sim/simulated_cluster.h) running the
// real schedules (sim/collectives/collective.h). For every all-reduce kind, rules all, first_r
// and deadline under shifted-exponential and heterogeneous delays, and DropCompute on two kinds,
// one configuration is drawn from a fixed seed (n, the links, r, the deadline, the factors), so
// the rows are not hand-picked. An exact form is held within 4 standard errors of the mean of
// 20 000 iterations (4000 with --quick); bounds each within 4 s.e. on their side.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codes/proportional_code.h"
#include "experiments/cli/check_claims.h"
#include "experiments/config/aggregation_registry.h"
#include "sim/collectives/collective.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/multi_message.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/collective_theory.h"

namespace stragglersim::experiments::check {
namespace {

using sim::collectives::CollectiveKind;

/// The reduced vector's bytes S (the bandwidth is drawn so that S/B is the drawn time).
constexpr double kCollectiveBytes = 1.0e6;

/// One drawn configuration.
struct CollectiveCase {
  CollectiveKind kind = CollectiveKind::kRing;
  sim::RuleKind rule = sim::RuleKind::kAll;
  bool heterogeneous = false;
  bool drop_compute = false;
  sim::SchemeDescription scheme;
  sim::collectives::CollectiveOptions options;
  /// Heterogeneous: one per worker, 1, 1.25 or 1.5 (three machine types: the stop's erasure
  /// integrals are computed once per class, docs/model.md §6).
  std::vector<double> factors;
};

/// n for the kind: an even n for hierarchical (nodes of 2 or n/2), 3 … 16 otherwise.
int draw_workers(CollectiveKind kind, Draws& draws) {
  if (kind == CollectiveKind::kHierarchical) {
    return 2 * draws.between(2, 8);
  }
  return draws.between(3, 16);
}

/// The links: α log-uniform in [0.005, 0.1] s, S/B uniform in [0.1, 1] s (hierarchical: the
/// intra-node links ten times faster).
sim::collectives::CollectiveOptions draw_links(CollectiveKind kind, int n, Draws& draws) {
  sim::collectives::CollectiveOptions o;
  o.kind = kind;
  o.link.latency = 0.005 * std::exp(draws.uniform() * std::log(20.0));
  o.link.bandwidth = kCollectiveBytes / (0.1 + 0.9 * draws.uniform());
  if (kind == CollectiveKind::kHierarchical) {
    o.node_size = draws.uniform() < 0.5 ? 2 : n / 2;
    o.intra.latency = o.link.latency / 10.0;
    o.intra.bandwidth = 10.0 * o.link.bandwidth;
  }
  if (kind == CollectiveKind::kStragglar) {
    o.straggler = draws.between(0, n - 1);
  }
  return o;
}

/// The scheme: uncoded, or ErasureHead (FRC d = 2) for half of the first_r draws with n even;
/// r uniform in [1, n − 1], τ uniform in [1.5, 4] s (delays are c_i·(1 + Exp(1)) s, c_i the
/// factor; draw_case scales τ by the largest, so that every worker may or may not be late).
sim::SchemeDescription draw_scheme(sim::RuleKind rule, int n, Draws& draws) {
  sim::SchemeDescription s;
  s.workers = n;
  s.rule = rule;
  if (rule == sim::RuleKind::kFirstR) {
    s.r = draws.between(1, n - 1);
    if (n % 2 == 0 && draws.uniform() < 0.5) {
      s.code = sim::CodeFamily::kFractionalRepetition;
      s.d = 2;
    }
  }
  if (rule == sim::RuleKind::kDeadline) {
    s.deadline = 1.5 + 2.5 * draws.uniform();
  }
  return s;
}

CollectiveCase draw_case(
    CollectiveKind kind, sim::RuleKind rule, bool heterogeneous, bool drop_compute, Draws& draws) {
  CollectiveCase c;
  c.kind = kind;
  c.rule = rule;
  c.heterogeneous = heterogeneous;
  c.drop_compute = drop_compute;
  const int n = draw_workers(kind, draws);
  c.options = draw_links(kind, n, draws);
  c.scheme = draw_scheme(rule, n, draws);
  if (heterogeneous) {
    for (int i = 0; i < n; ++i) {
      c.factors.push_back(1.0 + 0.25 * draws.between(0, 2));
    }
    c.scheme.deadline *= *std::max_element(c.factors.begin(), c.factors.end());
  }
  return c;
}

/// Delays of shift 1 and rate 1 per unit of load (Model A) at the scheme's loads, times each
/// worker's factor when heterogeneous.
std::unique_ptr<sim::DelayModel> case_delays(const CollectiveCase& c) {
  std::vector<double> loads = sim::scheme_loads(c.scheme);
  if (c.heterogeneous) {
    sim::HeterogeneousDelay::Options o;
    o.factors = c.factors;
    return std::make_unique<sim::HeterogeneousDelay>(std::move(loads), o);
  }
  return std::make_unique<sim::ShiftedExponentialDelay>(std::move(loads),
                                                        sim::ShiftedExponentialDelay::Options{});
}

/// DropCompute's micro-batches: four partitions per worker, each its own (proportional d = 1).
std::shared_ptr<const sim::MultiMessageStopping> drop_compute_rule(const CollectiveCase& c) {
  codes::ProportionalCode::Options o;
  o.workers = c.scheme.workers;
  o.partitions = 4 * c.scheme.workers;
  o.d = 1;
  o.factors = std::vector<double>(static_cast<std::size_t>(c.scheme.workers), 1.0);
  sim::MultiMessageStopping::Options rule;
  rule.code = std::make_shared<codes::ProportionalCode>(o);
  rule.after = c.scheme.deadline;
  return std::make_shared<sim::MultiMessageStopping>(rule);
}

std::shared_ptr<const sim::StoppingRule> case_rule(const CollectiveCase& c) {
  if (c.drop_compute) {
    return drop_compute_rule(c);
  }
  switch (c.rule) {
    case sim::RuleKind::kFirstR:
      return std::make_shared<sim::FirstRStopping>(c.scheme.r);
    case sim::RuleKind::kDeadline:
      return std::make_shared<sim::DeadlineStopping>(c.scheme.deadline, c.scheme.workers);
    default:
      return std::make_shared<sim::AllStopping>(c.scheme.workers);
  }
}

/// The case's label: kind, rule, n and delay.
std::string case_label(const CollectiveCase& c) {
  std::string rule;
  if (c.drop_compute) {
    rule = fmt::format("drop_compute tau={:.3g}", c.scheme.deadline);
  } else if (c.rule == sim::RuleKind::kFirstR) {
    rule = fmt::format("{}first_r r={}",
                       c.scheme.code == sim::CodeFamily::kFractionalRepetition ? "frc d=2 " : "",
                       c.scheme.r);
  } else if (c.rule == sim::RuleKind::kDeadline) {
    rule = fmt::format("deadline tau={:.3g}", c.scheme.deadline);
  } else {
    rule = "all";
  }
  return fmt::format("E[T] {} {} n={} {}",
                     sim::collectives::kind_name(c.kind),
                     rule,
                     c.scheme.workers,
                     c.heterogeneous ? "heterogeneous" : "shifted exp");
}

/// The case's rows: theory against the engine's mean over `iterations`.
void case_rows(const CollectiveCase& c,
               int iterations,
               std::uint64_t seed,
               std::vector<CheckRow>& rows) {
  const int n = c.scheme.workers;
  const std::int64_t elements = timing_elements(n);
  sim::CollectiveAggregation aggregation;
  aggregation.options = c.options;
  aggregation.schedule = std::make_shared<const sim::collectives::Schedule>(
      sim::collectives::build_schedule(c.options, n, elements));
  aggregation.bytes_per_element = kCollectiveBytes / static_cast<double>(elements);
  const std::vector<double> offsets = sim::collectives::completion_offsets(
      *aggregation.schedule, c.options, aggregation.bytes_per_element);
  const auto rule = case_rule(c);
  const auto delays = case_delays(c);
  sim::CollectiveTimePrediction p;
  if (c.drop_compute) {
    sim::MultiMessageTheoryOptions o;
    o.deadline = c.scheme.deadline;
    p = sim::predict_collective_multi_message_time(*rule->partition_orders(), *delays, offsets, o);
  } else {
    p = sim::predict_collective_time(c.scheme, *delays, offsets);
  }
  sim::SimulatedCluster cluster(
      case_delays(c), rule, sim::StragglerPolicy::kCancel, seed, {}, std::nullopt, aggregation);
  Mean m;
  for (int t = 0; t < iterations; ++t) {
    m.add(cluster.next_iteration().iteration_time);
  }
  const std::string label = case_label(c);
  if (p.exact()) {
    rows.push_back(two_sided(label + ": exact", p.mean, m.mean, m.se()));
    return;
  }
  const double tolerance = 4.0 * m.se();
  rows.push_back({label + ": mean >= E[t*] + min w",
                  p.lower,
                  m.mean,
                  tolerance,
                  m.mean >= p.lower - tolerance});
  rows.push_back({label + ": mean <= E[t*] + max w",
                  p.upper,
                  m.mean,
                  tolerance,
                  m.mean <= p.upper + tolerance});
}

}  // namespace

void collective_rows(bool quick, std::vector<CheckRow>& rows) {
  const int iterations = quick ? 4000 : 20000;
  Draws draws(20250528);
  std::uint64_t seed = 7100;
  const std::array<CollectiveKind, 6> kinds = {CollectiveKind::kRing,
                                               CollectiveKind::kTree,
                                               CollectiveKind::kHalvingDoubling,
                                               CollectiveKind::kDirect,
                                               CollectiveKind::kHierarchical,
                                               CollectiveKind::kStragglar};
  for (const CollectiveKind kind : kinds) {
    for (const bool heterogeneous : {false, true}) {
      for (const sim::RuleKind rule :
           {sim::RuleKind::kAll, sim::RuleKind::kFirstR, sim::RuleKind::kDeadline}) {
        case_rows(draw_case(kind, rule, heterogeneous, false, draws), iterations, ++seed, rows);
      }
    }
  }
  // DropCompute: the multi-message rule with a threshold, each worker's own micro-batches.
  for (const CollectiveKind kind : {CollectiveKind::kTree, CollectiveKind::kHierarchical}) {
    case_rows(
        draw_case(kind, sim::RuleKind::kDeadline, true, true, draws), iterations, ++seed, rows);
  }
}

}  // namespace stragglersim::experiments::check

// `stragglersim check [--quick] [--out DIR]`: the paper's claims held against simulation
// (docs/model.md §6). Each row is "claim · theory · simulation · tolerance · PASS/FAIL"; the exit
// status is 0 only if every row passes. Every tolerance is 4 standard errors of the simulated
// estimate (|z| < 4: a false alarm has probability ~6e-5 per row), except where a row says
// otherwise. All seeds are fixed, so a run is reproducible.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>

#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "codes/proportional_cyclic_code.h"
#include "codes/uncoded_code.h"
#include "experiments/cli/commands.h"
#include "experiments/config/run_plan.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/measured_convergence.h"
#include "experiments/predict/predictions.h"
#include "experiments/run_output.h"
#include "models/base/invariant.h"
#include "models/base/random_stream.h"
#include "models/optimum.h"
#include "models/synthetic_data.h"
#include "models/worker_pool.h"
#include "sim/asynchronous_cluster.h"
#include "sim/backends/simulated_backend.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/markov_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/fastpath/order_statistics.h"
#include "sim/multi_message.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/convergence_theory.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/multi_message_theory.h"
#include "sim/theory/update_time_theory.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {
namespace {

struct CheckRow {
  std::string claim;
  double theory = 0.0;
  double simulation = 0.0;
  double tolerance = 0.0;  ///< |simulation − theory| allowed (or the one-sided margin)
  bool pass = false;
};

/// Welford mean and standard error.
struct Mean {
  double n = 0.0;
  double mean = 0.0;
  double m2 = 0.0;
  void add(double x) {
    n += 1.0;
    const double d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  [[nodiscard]] double se() const { return n > 1.0 ? std::sqrt(m2 / (n - 1.0) / n) : 0.0; }
};

CheckRow two_sided(std::string claim, double theory, double sim, double se) {
  const double tol = 4.0 * se;
  return {std::move(claim), theory, sim, tol, std::abs(sim - theory) <= tol};
}

std::shared_ptr<const codes::GradientCode> frc_or_uncoded(int n, int d) {
  if (d == 1) {
    return std::make_shared<codes::UncodedCode>(n);
  }
  return std::make_shared<codes::FractionalRepetitionCode>(n, d);
}

/// Simulated mean iteration time (and its SE) of a scheme on the delay-only fast path.
Mean simulate_time(const std::shared_ptr<const codes::GradientCode>& code,
                   const std::shared_ptr<const sim::StoppingRule>& rule,
                   sim::TailScaling tail,
                   std::uint64_t iterations,
                   std::uint64_t seed) {
  sim::DelayOnlySimulator s(
      std::make_unique<sim::ShiftedExponentialDelay>(
          code->loads(),
          sim::ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = tail}),
      rule,
      code,
      sim::StragglerPolicy::kCancel,
      seed);
  Mean m;
  s.run(iterations, [&](const sim::DelayOnlyIteration& it) { m.add(it.iteration_time); });
  return m;
}

void iteration_time_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 4000 : 40000;
  struct Shape {
    int n, d, r;
  };
  for (const Shape sh : {Shape{64, 2, 32}, Shape{30, 3, 15}, Shape{24, 4, 12}}) {
    for (const auto tail : {sim::TailScaling::kLoad, sim::TailScaling::kNone}) {
      const char* model_name = tail == sim::TailScaling::kLoad ? "A" : "B";
      const int s = sh.d - 1;
      struct Scheme {
        std::string label;
        std::shared_ptr<const codes::GradientCode> code;
        std::shared_ptr<const sim::StoppingRule> rule;
        sim::SchemeDescription description;
      };
      const auto uncoded = frc_or_uncoded(sh.n, 1);
      const auto frc = frc_or_uncoded(sh.n, sh.d);
      const auto crc = std::make_shared<codes::CyclicRepetitionCode>(sh.n, s, 1);
      const std::vector<Scheme> schemes = {
          {"uncoded",
           uncoded,
           std::make_shared<sim::AllStopping>(sh.n),
           {sh.n, sim::CodeFamily::kUncoded, 1, sim::RuleKind::kAll, 1, 0.0}},
          {"ignore stragglers r",
           uncoded,
           std::make_shared<sim::FirstRStopping>(sh.r),
           {sh.n, sim::CodeFamily::kUncoded, 1, sim::RuleKind::kFirstR, sh.r, 0.0}},
          {"exact FRC",
           frc,
           std::make_shared<sim::DecodableStopping>(frc),
           {sh.n, sim::CodeFamily::kFractionalRepetition, sh.d, sim::RuleKind::kDecodable, 1, 0.0}},
          {"exact CRC first n-s",
           crc,
           std::make_shared<sim::FirstRStopping>(sh.n - s),
           {sh.n, sim::CodeFamily::kCyclic, sh.d, sim::RuleKind::kFirstR, sh.n - s, 0.0}},
          {"ErasureHead first_r",
           frc,
           std::make_shared<sim::FirstRStopping>(sh.r),
           {sh.n, sim::CodeFamily::kFractionalRepetition, sh.d, sim::RuleKind::kFirstR, sh.r, 0.0}},
      };
      for (const auto& sc : schemes) {
        const sim::ShiftedExponentialDelay model(sc.code->loads(),
                                                 {.shift = 1.0, .rate = 1.0, .tail = tail});
        const auto p = sim::predict_iteration_time(sc.description, model);
        const Mean m = simulate_time(sc.code, sc.rule, tail, iterations, 11);
        rows.push_back(two_sided(
            fmt::format("E[T] {} n={} d={} r={} model {}", sc.label, sh.n, sh.d, sh.r, model_name),
            p.mean,
            m.mean,
            m.se()));
      }
    }
  }
}

/// Anytime minibatch (docs/model.md §4): E[max_i min(T, X_i)] from the deadline rule's closed
/// form at τ = T against the event engine's anytime iterations.
void anytime_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 10000 : 100000;
  // Windows where both the window and the slowest worker end iterations (shift 1, rate 1).
  for (const int n : {8, 30}) {
    for (const double window :
         n == 8 ? std::vector<double>{1.5, 2.5} : std::vector<double>{3.0, 4.5}) {
      const auto code = frc_or_uncoded(n, 1);
      const auto rule = std::make_shared<sim::AnytimeStopping>(
          sim::AnytimeStopping::Options{.workers = n, .window = window});
      const sim::ShiftedExponentialDelay model(
          code->loads(), {.shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad});
      const auto p = sim::predict_iteration_time(
          {n, sim::CodeFamily::kUncoded, 1, sim::RuleKind::kDeadline, 1, window}, model);
      const Mean m = simulate_time(code, rule, sim::TailScaling::kLoad, iterations, 13);
      rows.push_back(
          two_sided(fmt::format("E[T] anytime n={} T={}", n, window), p.mean, m.mean, m.se()));
    }
  }
}

/// Multi-message (docs/theory.md "Multi-message completion time"): E[Z] from the exact sum over
/// progress vectors, integrated, against the event engine's per-partition events. FRC groups of
/// d = 2 and 3 (with and without a deadline, with a network latency), proportional loads under
/// heterogeneous factors (groups of unequal shares), and a cyclic repetition code (one component
/// of every worker).
void multi_message_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 10000 : 100000;
  const int n = 12;
  std::vector<double> factors(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    factors[static_cast<std::size_t>(i)] = i % 3 == 1 ? 1.6 : 1.0 + 0.05 * (i % 4);
  }
  struct Case {
    std::string label;
    std::shared_ptr<const codes::GradientCode> code;
    std::optional<double> after;
    double latency = 0.0;
    bool heterogeneous = false;
  };
  const std::vector<Case> cases = {
      {"frc d=2", frc_or_uncoded(n, 2), std::nullopt},
      {"frc d=3", frc_or_uncoded(n, 3), std::nullopt},
      {"frc d=3 after=4.5", frc_or_uncoded(n, 3), 4.5},
      {"frc d=2 latency=0.3", frc_or_uncoded(n, 2), std::nullopt, 0.3},
      {"proportional d=2 k=2n heterogeneous",
       std::make_shared<codes::ProportionalCode>(codes::ProportionalCode::Options{
           .workers = n, .partitions = 2 * n, .d = 2, .factors = factors}),
       std::nullopt,
       0.0,
       true},
      {"cyclic repetition n=6 s=1",
       std::make_shared<codes::CyclicRepetitionCode>(
           codes::CyclicRepetitionCode::Options{.workers = 6, .s = 1}),
       std::nullopt},
  };
  for (const Case& c : cases) {
    const auto rule = std::make_shared<sim::MultiMessageStopping>(
        sim::MultiMessageStopping::Options{.code = c.code, .after = c.after});
    const auto make_delays = [&]() -> std::unique_ptr<sim::DelayModel> {
      if (c.heterogeneous) {
        return std::make_unique<sim::HeterogeneousDelay>(
            c.code->loads(),
            sim::HeterogeneousDelay::Options{.shift = 1.0, .rate = 1.0, .factors = factors});
      }
      return std::make_unique<sim::ShiftedExponentialDelay>(
          c.code->loads(),
          sim::ShiftedExponentialDelay::Options{
              .shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad});
    };
    const auto model = make_delays();
    sim::MultiMessageTheoryOptions theory;
    theory.shift = c.latency;
    theory.deadline = c.after;
    const auto p = sim::predict_multi_message_time(*rule->partition_orders(), *model, theory);
    sim::NetworkOptions network;
    network.latency = c.latency;
    sim::SimulatedCluster cluster(make_delays(), rule, sim::StragglerPolicy::kCancel, 15, network);
    Mean time;
    for (std::uint64_t t = 0; t < iterations; ++t) {
      time.add(cluster.next_iteration().iteration_time);
    }
    rows.push_back(two_sided("E[T] multi_message " + c.label, p.mean, time.mean, time.se()));
  }
}

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

/// The slowdown factors of the heterogeneous-loads rows: 1.6 for every fourth worker (from the
/// second), 1.00–1.02 for the others, so that sorted groups are not runs of consecutive workers.
std::vector<double> persistent_factors(int n) {
  std::vector<double> factors(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    factors[static_cast<std::size_t>(i)] = i % 4 == 1 ? 1.6 : 1.0 + 0.01 * (i % 3);
  }
  return factors;
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

/// Least-squares slope of y on log2(n) and its standard error from the SEs of y (independent).
std::pair<double, double> slope_per_doubling(const std::vector<double>& n,
                                             const std::vector<double>& y,
                                             const std::vector<double>& se) {
  double mx = 0.0;
  for (const double v : n) {
    mx += std::log2(v);
  }
  mx /= static_cast<double>(n.size());
  double sxx = 0.0;
  for (const double v : n) {
    sxx += (std::log2(v) - mx) * (std::log2(v) - mx);
  }
  double slope = 0.0;
  double var = 0.0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double w = (std::log2(n[i]) - mx) / sxx;
    slope += w * y[i];
    var += w * w * se[i] * se[i];
  }
  return {slope, std::sqrt(var)};
}

/// Mean stopping time of n i.i.d. workers of load `load` (Model A: T = load + load·Exp(1)) under
/// `shape`, from the order-statistics sampler: the stop does not depend on how workers are grouped,
/// so no code (and no O(r) count of covered groups) is needed.
Mean simulate_order_statistics(std::int64_t n,
                               double load,
                               const sim::StoppingShape& shape,
                               std::uint64_t iterations,
                               std::uint64_t seed) {
  sim::OrderStatisticSampler sampler(
      load, load, shape, n, 1, /*has_groups=*/false, sim::StragglerPolicy::kCancel);
  RandomEngine rng = make_engine(seed, Stream::kDelays);
  Mean m;
  for (std::uint64_t t = 0; t < iterations; ++t) {
    m.add(sampler.draw(rng).stop);
  }
  return m;
}

/// The compact code of a config of n workers: uncoded (d = 1) or FRC with groups of d.
std::shared_ptr<const codes::GradientCode> compact_code(int n, int d) {
  if (d == 1) {
    return std::make_shared<codes::UncodedCode>(codes::UncodedCode::Options{n, 0},
                                                codes::CompactTag{});
  }
  return std::make_shared<codes::FractionalRepetitionCode>(
      codes::FractionalRepetitionCode::Options{n, 0, d}, codes::CompactTag{});
}

/// The stopping rule all, first_r (r) or decodable (by `code`) of n workers.
std::shared_ptr<const sim::StoppingRule> compact_rule(
    sim::RuleKind kind, int n, int r, const std::shared_ptr<const codes::GradientCode>& code) {
  if (kind == sim::RuleKind::kAll) {
    return std::make_shared<sim::AllStopping>(n);
  }
  if (kind == sim::RuleKind::kFirstR) {
    return std::make_shared<sim::FirstRStopping>(r);
  }
  return std::make_shared<sim::DecodableStopping>(code);
}

/// Group erasure under a deadline at n = 2^30, FRC d = 2, on the order-statistics sampler.
CheckRow deadline_erasure_row(std::uint64_t iterations,
                              const sim::ShiftedExponentialDelay::Options& a) {
  const int big = 1 << 30;
  // Group erasure under a deadline at n = 2^30, FRC d = 2: q = (1 − F(τ))² from the binomial
  // class counts.
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(
      codes::FractionalRepetitionCode::Options{big, 0, 2}, codes::CompactTag{});
  const double tau = 4.5;  // F(τ) = 1 − e^{−(4.5 − 2)/2} for load 2
  const double q = std::exp(-2.0 * (tau - 2.0) / 2.0);
  sim::DelayOnlySimulator s(std::make_unique<sim::ShiftedExponentialDelay>(big, 2.0, a),
                            std::make_shared<sim::DeadlineStopping>(tau, big),
                            code,
                            sim::StragglerPolicy::kCancel,
                            32,
                            sim::NetworkOptions{},
                            sim::Sampler::kOrderStatistics);
  Mean erased;
  const double groups = big / 2.0;
  s.run(iterations,
        [&](const sim::DelayOnlyIteration& it) { erased.add(1.0 - it.groups_covered / groups); });
  return two_sided(fmt::format("q deadline n={} d=2 after={} (order statistics)", big, tau),
                   q,
                   erased.mean,
                   erased.se());
}

/// Delay-only runs at n = 10^9 and 2^30 on the order-statistics sampler against the closed forms
/// (each row's delay model and code are the compact ones a config of that n builds).
void order_statistics_rows(bool quick, std::vector<CheckRow>& rows) {
  const std::uint64_t iterations = quick ? 2000 : 10000;
  const sim::ShiftedExponentialDelay::Options a{
      .shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad};
  struct Case {
    std::string label;
    int n, d;
    sim::RuleKind rule;
    int r;
    double deadline;
  };
  const int billion = 1'000'000'000;
  const int big = 1 << 30;
  const std::vector<Case> cases = {
      {"uncoded all", billion, 1, sim::RuleKind::kAll, 1, 0.0},
      {"uncoded first_r r=1000", billion, 1, sim::RuleKind::kFirstR, 1000, 0.0},
      {"uncoded first_r r=n/2", big, 1, sim::RuleKind::kFirstR, big / 2, 0.0},
      {"exact FRC d=2 decodable", big, 2, sim::RuleKind::kDecodable, 1, 0.0},
  };
  for (const auto& c : cases) {
    const sim::SchemeDescription description{
        c.n,
        c.d == 1 ? sim::CodeFamily::kUncoded : sim::CodeFamily::kFractionalRepetition,
        c.d,
        c.rule,
        c.r,
        c.deadline};
    const sim::ShiftedExponentialDelay model(c.n, static_cast<double>(c.d), a);
    const auto p = sim::predict_iteration_time(description, model);
    const auto code = compact_code(c.n, c.d);
    sim::DelayOnlySimulator s(
        std::make_unique<sim::ShiftedExponentialDelay>(c.n, static_cast<double>(c.d), a),
        compact_rule(c.rule, c.n, c.r, code),
        code,
        sim::StragglerPolicy::kCancel,
        31,
        sim::NetworkOptions{},
        sim::Sampler::kOrderStatistics);
    Mean m;
    s.run(iterations, [&](const sim::DelayOnlyIteration& it) { m.add(it.iteration_time); });
    rows.push_back(two_sided(fmt::format("E[T] {} n={} model A (order statistics)", c.label, c.n),
                             p.mean,
                             m.mean,
                             m.se()));
  }
  rows.push_back(deadline_erasure_row(iterations, a));
}

/// n = 8, 16, ... 2^30 (2^20 quick; the quick run skips 8192 to 2^19).
std::vector<int> speedup_worker_counts(bool quick) {
  std::vector<int> ns;
  // Worker by worker up to 65 536, then the order-statistics sampler up to 2^30 (2^20 quick).
  const std::int64_t last = quick ? std::int64_t{1} << 20 : std::int64_t{1} << 30;
  for (std::int64_t n = 8; n <= last; n *= 2) {
    if (quick && n > 4096 && n < (std::int64_t{1} << 20)) {
      continue;
    }
    ns.push_back(static_cast<int>(n));
  }
  return ns;
}

/// Measured mean iteration times of uncoded (wait for all) and ErasureHead (FRC d = 2, first
/// n/2) at n workers: worker by worker up to 65 536, on the order-statistics sampler above.
std::pair<Mean, Mean> uncoded_and_erasurehead_times(int n, std::uint64_t iterations) {
  if (n <= 65536) {
    const auto uncoded = frc_or_uncoded(n, 1);
    const auto frc = frc_or_uncoded(n, 2);
    return {simulate_time(uncoded,
                          std::make_shared<sim::AllStopping>(n),
                          sim::TailScaling::kLoad,
                          iterations,
                          21),
            simulate_time(frc,
                          std::make_shared<sim::FirstRStopping>(n / 2),
                          sim::TailScaling::kLoad,
                          iterations,
                          22)};
  }
  return {simulate_order_statistics(n, 1.0, {sim::RuleKind::kAll, 0, 0.0}, iterations, 21),
          simulate_order_statistics(n, 2.0, {sim::RuleKind::kFirstR, n / 2, 0.0}, iterations, 22)};
}

void speedup_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out) {
  const std::vector<int> ns = speedup_worker_counts(quick);
  const auto theory = sim::predicted_speedup(ns, {2, 0.5}, 1.0, 1.0, sim::TailScaling::kLoad);
  std::vector<double> nn;
  std::vector<double> th;
  std::vector<double> zero;
  std::vector<double> sim_ratio;
  std::vector<double> sim_se;
  std::string csv = "workers,predicted_speedup,measured_speedup,measured_se\n";
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const int n = ns[i];
    const std::uint64_t iterations =
        quick ? std::max<std::uint64_t>(400, 400000 / static_cast<std::uint64_t>(n))
              : std::max<std::uint64_t>(2000, 4000000 / static_cast<std::uint64_t>(n));
    const auto [u, e] = uncoded_and_erasurehead_times(n, iterations);
    const double ratio = u.mean / e.mean;
    // Delta method for a ratio of independent means.
    const double se = ratio * std::hypot(u.se() / u.mean, e.se() / e.mean);
    nn.push_back(n);
    th.push_back(theory[i].speedup_vs_uncoded);
    zero.push_back(0.0);
    sim_ratio.push_back(ratio);
    sim_se.push_back(se);
    csv += fmt::format("{},{},{},{}\n", n, theory[i].speedup_vs_uncoded, ratio, se);
    if (n == 64 || n == 65536 || n == ns.back()) {
      rows.push_back(two_sided(fmt::format("uncoded/ErasureHead speedup n={} d=2 r=n/2 A", n),
                               theory[i].speedup_vs_uncoded,
                               ratio,
                               se));
    }
  }
  const auto [theory_slope, unused] = slope_per_doubling(nn, th, zero);
  (void)unused;
  const auto [sim_slope, sim_slope_se] = slope_per_doubling(nn, sim_ratio, sim_se);
  rows.push_back(two_sided(fmt::format("speedup growth per doubling, n=8..{} (fit)", ns.back()),
                           theory_slope,
                           sim_slope,
                           sim_slope_se));
  // The last doubling alone, measured, against the predicted step (which tends to
  // ln 2 / (2(1 + ln 2)) = 0.2047 as n grows).
  const std::size_t k = ns.size() - 1;
  rows.push_back(two_sided(fmt::format("speedup growth over the last doubling to n={}", ns.back()),
                           th[k] - th[k - 1],
                           sim_ratio[k] - sim_ratio[k - 1],
                           std::hypot(sim_se[k], sim_se[k - 1])));
  if (!out.empty()) {
    write_file_atomically(out / "speedup.csv", csv);
  }
}

/// A small least-squares or logistic problem for the estimator and convergence checks.
struct Problem {
  std::shared_ptr<const models::Objective> objective;
  std::string label;
};

// The checks hold the estimators and bounds against simulation, not the conditioning: condition 1
// (unit feature covariance) keeps their problems, and benchmarks/check_full.txt, as
// they were before linear_regression's default became 100.
Problem least_squares(int rows, int features, double noise, double l2, int partitions) {
  auto data = std::make_shared<models::Dataset>(
      models::make_linear_regression({rows, features, noise, 5, 1.0}));
  std::shared_ptr<const models::LossModel> loss = models::make_least_squares_loss();
  return {std::make_shared<models::Objective>(data, loss, l2, partitions),
          fmt::format("least squares m={} p={}", rows, features)};
}

Problem logistic(int rows, int features, double l2, int partitions) {
  auto data =
      std::make_shared<models::Dataset>(models::make_gaussian_mixture({rows, features, 1.0, 6}));
  std::shared_ptr<const models::LossModel> loss = models::make_logistic_loss();
  return {std::make_shared<models::Objective>(data, loss, l2, partitions),
          fmt::format("logistic m={} p={} l2={}", rows, features, l2)};
}

/// Unbiasedness: the largest |z| over the p coordinates of the estimator's means against ∇f
/// (4 SE per coordinate).
CheckRow worst_coordinate_row(const std::vector<Mean>& coordinate, const Eigen::VectorXd& grad) {
  double worst = 0.0;
  std::size_t worst_j = 0;
  for (std::size_t j = 0; j < coordinate.size(); ++j) {
    const double z =
        std::abs(coordinate[j].mean - grad(static_cast<Eigen::Index>(j))) / coordinate[j].se();
    if (z > worst) {
      worst = z;
      worst_j = j;
    }
  }
  const auto jj = static_cast<Eigen::Index>(worst_j);
  return two_sided(
      fmt::format("expected-rescaled E[g_hat] = grad f (worst of {} coordinates)", grad.size()),
      grad(jj),
      coordinate[worst_j].mean,
      coordinate[worst_j].se());
}

void estimator_rows(bool quick, std::vector<CheckRow>& rows) {
  const int n = 12;
  const int d = 2;
  const int r = 6;
  const auto problem = least_squares(240, 5, 0.5, 0.0, n);
  const auto& f = *problem.objective;
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(f.dimension(), 0.3);
  Eigen::MatrixXd pg;
  f.evaluate(x, &pg);
  const Eigen::VectorXd grad = pg.rowwise().sum();
  double group_sq = 0.0;
  for (int g = 0; g < n; g += d) {
    group_sq += pg.middleCols(g, d).rowwise().sum().squaredNorm();
  }
  const double q = sim::erasure_probability_first_r(n, d, r);
  const double q2 = sim::erasure_probability_first_r(n, 2 * d, r);
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(n, d);
  const auto rule = std::make_shared<sim::FirstRStopping>(r);
  const std::uint64_t draws = quick ? 20000 : 200000;
  sim::SimulatedCluster cluster(
      std::make_unique<sim::ShiftedExponentialDelay>(
          code->loads(),
          sim::ShiftedExponentialDelay::Options{
              .shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad}),
      rule,
      sim::StragglerPolicy::kCancel,
      31);
  std::vector<Mean> coordinate(static_cast<std::size_t>(f.dimension()));
  Mean second;
  for (std::uint64_t t = 0; t < draws; ++t) {
    const auto& timing = cluster.next_iteration();
    codes::Decoding dec = code->decode_optimal(timing.heard);
    const Eigen::VectorXd unscaled = pg * dec.alpha;
    second.add(unscaled.squaredNorm());
    codes::rescale(dec, codes::Rescale::kExpected, q);
    const Eigen::VectorXd scaled = pg * dec.alpha;
    for (Eigen::Index j = 0; j < f.dimension(); ++j) {
      coordinate[static_cast<std::size_t>(j)].add(scaled(j));
    }
  }
  rows.push_back(worst_coordinate_row(coordinate, grad));
  // E‖ĝ‖² = (1 − 2q + q₂)‖∇f‖² + (q − q₂) Σ_g ‖∇F_g‖² for the unscaled estimator.
  const double formula = (1.0 - 2.0 * q + q2) * grad.squaredNorm() + (q - q2) * group_sq;
  rows.push_back(two_sided("unscaled E|g_hat|^2 = (1-2q+q2)|grad f|^2 + (q-q2) sum_g |G_g|^2",
                           formula,
                           second.mean,
                           second.se()));
}

struct BoundRun {
  std::vector<Mean> gap;  ///< f(x_t) − f* per t over repetitions
};

/// Repeated ErasureHead runs (FRC d, first_r r = n/2, unscaled, step 1/β) of one problem.
BoundRun repeated_runs(
    const Problem& problem, int n, int d, int iterations, int repetitions, double f_star) {
  BoundRun out;
  out.gap.resize(static_cast<std::size_t>(iterations + 1));
  const auto& f = *problem.objective;
  const double step = 1.0 / f.smoothness();
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(n, d);
  sim::Scheme scheme{
      code, std::make_shared<sim::FirstRStopping>(n / 2), sim::DecoderKind::kOptimal};
  for (int rep = 0; rep < repetitions; ++rep) {
    auto cluster = std::make_unique<sim::SimulatedCluster>(
        std::make_unique<sim::ShiftedExponentialDelay>(
            code->loads(),
            sim::ShiftedExponentialDelay::Options{
                .shift = 1.0, .rate = 1.0, .tail = sim::TailScaling::kLoad}),
        scheme.rule,
        sim::StragglerPolicy::kCancel,
        derive_seed(41, static_cast<std::uint64_t>(rep)));
    sim::SimulatedBackend backend(problem.objective, scheme, std::move(cluster));
    sim::GradientDescent gd(Eigen::VectorXd::Zero(f.dimension()), step);
    sim::train(f,
               nullptr,
               gd,
               backend,
               sim::TrainingOptions{static_cast<std::uint64_t>(iterations)},
               [&](const sim::TraceRow& row) { out.gap[row.iteration].add(row.loss - f_star); });
  }
  return out;
}

/// Σ_g ‖∇F_g(x)‖² at x.
double group_gradient_sq(const models::Objective& f, const Eigen::VectorXd& x, int d) {
  Eigen::MatrixXd pg;
  f.evaluate(x, &pg);
  double s = 0.0;
  for (Eigen::Index g = 0; g < pg.cols(); g += d) {
    s += pg.middleCols(g, d).rowwise().sum().squaredNorm();
  }
  return s;
}

void bound_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out) {
  const int n = 12;
  const int d = 2;
  const int iterations = quick ? 60 : 150;
  const int repetitions = 30;
  std::string csv = "problem,iteration,mean_gap,se,bound\n";
  for (const Problem& problem : {least_squares(60, 100, 0.5, 0.0, n), logistic(300, 10, 0.05, n)}) {
    const auto& f = *problem.objective;
    const auto opt = models::solve_optimum(f);
    const double f_star = opt.value;
    const BoundRun run = repeated_runs(problem, n, d, iterations, repetitions, f_star);
    // ζ²: Σ_g ‖∇F_g‖² is largest at x₀ for these problems and must bound every iterate; we take
    // the maximum of its values at x₀ and x* (a convex function of x on the segment between).
    const double zeta = std::max(group_gradient_sq(f, Eigen::VectorXd::Zero(f.dimension()), d),
                                 group_gradient_sq(f, opt.x, d));
    sim::PlBoundParameters b;
    b.smoothness = f.smoothness();
    b.pl_constant = std::min(*f.pl_constant(), b.smoothness);
    b.step = 1.0 / b.smoothness;
    b.zeta_squared = zeta;
    b.initial_gap = run.gap[0].mean;
    b.q = sim::erasure_probability_first_r(n, d, n / 2);
    b.q2 = sim::erasure_probability_first_r(n, 2 * d, n / 2);
    const auto bound = sim::pl_bound(b, iterations);
    double worst_excess = -1e300;
    int worst_t = 0;
    bool pass = true;
    for (int t = 0; t <= iterations; ++t) {
      const auto& g = run.gap[static_cast<std::size_t>(t)];
      const double excess = g.mean - bound[static_cast<std::size_t>(t)];
      if (excess > worst_excess) {
        worst_excess = excess;
        worst_t = t;
      }
      pass = pass && g.mean <= bound[static_cast<std::size_t>(t)] + 4.0 * g.se();
      csv += fmt::format(
          "{},{},{},{},{}\n", problem.label, t, g.mean, g.se(), bound[static_cast<std::size_t>(t)]);
    }
    const auto& g = run.gap[static_cast<std::size_t>(worst_t)];
    rows.push_back({fmt::format("mean f-f* <= PL bound at every t ({}, 30 reps; closest t={})",
                                problem.label,
                                worst_t),
                    bound[static_cast<std::size_t>(worst_t)],
                    g.mean,
                    4.0 * g.se(),
                    pass});
  }
  if (!out.empty()) {
    write_file_atomically(out / "bound.csv", csv);
  }
}

void floor_rows(bool quick, std::vector<CheckRow>& rows) {
  const int n = 12;
  const int iterations = quick ? 200 : 400;
  const int repetitions = quick ? 100 : 200;
  const auto problem = least_squares(600, 20, 1.0, 0.0, n);
  const auto& f = *problem.objective;
  const double f_star = models::solve_optimum(f).value;
  struct Floor {
    int d = 0;
    double measured = 0.0;  ///< mean of f − f* over the last quarter of the runs
    double se = 0.0;
    double predicted = 0.0;  ///< the PL bound's noise floor
  };
  std::vector<Floor> floors;
  for (const int d : {2, 3, 4}) {
    const BoundRun run = repeated_runs(problem, n, d, iterations, repetitions, f_star);
    Floor fl;
    fl.d = d;
    double count = 0.0;
    for (int t = 3 * iterations / 4; t <= iterations; ++t) {
      const auto& g = run.gap[static_cast<std::size_t>(t)];
      fl.measured += g.mean;
      // The plateau average over t of correlated per-t means has a variance at most the largest
      // per-t variance (Cauchy–Schwarz): that SE is the conservative one.
      fl.se = std::max(fl.se, g.se());
      count += 1.0;
    }
    fl.measured /= count;
    sim::PlBoundParameters b;
    b.smoothness = f.smoothness();
    b.pl_constant = std::min(*f.pl_constant(), b.smoothness);
    b.step = 1.0 / b.smoothness;
    b.zeta_squared = group_gradient_sq(f, Eigen::VectorXd::Zero(f.dimension()), d);
    b.q = sim::erasure_probability_first_r(n, d, n / 2);
    b.q2 = sim::erasure_probability_first_r(n, 2 * d, n / 2);
    fl.predicted = sim::pl_noise_floor(b);
    floors.push_back(fl);
  }
  for (std::size_t i = 0; i + 1 < floors.size(); ++i) {
    const Floor& a = floors[i];
    const Floor& c = floors[i + 1];
    const double drop = a.measured - c.measured;
    const double se = std::hypot(a.se, c.se);
    // One-sided: the measured drop must exceed 2 standard errors (z > 2) and the predicted
    // floor must fall too.
    rows.push_back(
        {fmt::format("noise floor falls from d={} to d={} (predicted drop, measured plateau drop)",
                     a.d,
                     c.d),
         a.predicted - c.predicted,
         drop,
         2.0 * se,
         a.predicted > c.predicted && drop > 2.0 * se});
  }
}

/// A least-squares config on Gaussian data with shifted-exponential delays (Model A).
nlohmann::json convergence_config(int rows, int features, double l2, int n, int iterations) {
  return {{"name", "check"},
          {"seed", 3},
          {"workers", n},
          {"data",
           {{"source", "synthetic"},
            {"generator", "linear_regression"},
            {"rows", rows},
            {"features", features},
            {"condition", 1.0},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "least_squares"}, {"l2", l2}}},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}}};
}

/// One-sided: the mean of `repetitions` runs under the coded bound + 4 s.e. at every t; the row
/// shows the t where the margin is smallest.
CheckRow coded_bound_row(const std::string& label,
                         const nlohmann::json& p,
                         const MeasuredGap& m,
                         int repetitions) {
  std::size_t worst = 0;
  double worst_margin = 1e300;
  bool pass = true;
  for (std::size_t t = 0; t < m.mean.size(); ++t) {
    const double bound = p["bound"][t].get<double>();
    const double margin = bound + 4.0 * m.se[t] - m.mean[t];
    pass = pass && margin >= 0.0;
    // t = 0 is exact (the bound starts at f(x₀) − f*): report the closest later t.
    if (t > 0 && margin < worst_margin) {
      worst_margin = margin;
      worst = t;
    }
  }
  return {fmt::format(
              "mean f-f* <= coded bound, every t: {} ({} runs; t={})", label, repetitions, worst),
          p["bound"][worst].get<double>(),
          m.mean[worst],
          4.0 * m.se[worst],
          pass};
}

CheckRow coded_bound_row(const std::string& label, const nlohmann::json& config, int repetitions) {
  const RunPlan plan = plan_run(config, "check", ".");
  const nlohmann::json p = predictions(plan);
  if (!p["bound"].is_array()) {
    return {label + ": no bound (" + p.value("bound_problem", std::string()) + ")", 0, 0, 0, false};
  }
  const MeasuredGap m = measure_gap(plan, repetitions, 17, p["f_star"].get<double>());
  return coded_bound_row(label, p, m, repetitions);
}

/// Logistic regression has no exact curve: the measured mean stays under the bound at every t,
/// and the fitted floor and rate (fit_rate_and_floor, 95% intervals) are no worse than the
/// theorem's noise floor and per-step factor ρ (one-sided: the interval's low end at or below).
void logistic_theorem_rows(const std::string& label,
                           const nlohmann::json& config,
                           int repetitions,
                           std::vector<CheckRow>& rows) {
  const RunPlan plan = plan_run(config, "check", ".");
  const nlohmann::json p = predictions(plan);
  STRAGGLERSIM_ASSERT(
      p["bound"].is_array() && !p["noise_floor"].is_null() && !p["contraction"].is_null(),
      "the check's logistic configs have a PL bound");
  const MeasuredGap m = measure_gap(plan, repetitions, 29, p["f_star"].get<double>());
  rows.push_back(coded_bound_row(label, p, m, repetitions));
  const auto fit = fit_rate_and_floor(m.runs);
  STRAGGLERSIM_ASSERT(fit && fit->rate, "the check's logistic runs have a rate and a floor");
  const double floor = p["noise_floor"].get<double>();
  const double rho = p["contraction"].get<double>();
  rows.push_back({fmt::format("measured floor CI reaches the theorem's or below, t >= {}: {} ({} "
                              "runs)",
                              fit->floor_first,
                              label,
                              repetitions),
                  floor,
                  fit->floor,
                  (fit->floor_interval.high - fit->floor_interval.low) / 2.0,
                  fit->floor_interval.low <= floor});
  rows.push_back({fmt::format("measured rate CI reaches the theorem's rho or below, t = 1..{}: {} "
                              "({} runs)",
                              fit->fit_last,
                              label,
                              repetitions),
                  rho,
                  *fit->rate,
                  (fit->rate_interval.high - fit->rate_interval.low) / 2.0,
                  fit->rate_interval.low <= rho});
}

/// A logistic config on the Gaussian mixture with shifted-exponential delays, FRC d = 2.
nlohmann::json logistic_config(int rows, int features, double l2, int n, int r, int iterations) {
  return {{"name", "check"},
          {"seed", 5},
          {"workers", n},
          {"data",
           {{"source", "synthetic"},
            {"generator", "gaussian_mixture"},
            {"rows", rows},
            {"features", features},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "logistic"}, {"l2", l2}}},
          {"code", {{"kind", "frc"}, {"d", 2}}},
          {"stopping", {{"rule", "first_r"}, {"r", r}}},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}}};
}

void logistic_rows(bool quick, std::vector<CheckRow>& rows) {
  const int repetitions = quick ? 100 : 200;
  for (const double l2 : {0.1, 0.01}) {
    logistic_theorem_rows(fmt::format("logistic m=600 p=10 l2={} FRC 6/12", l2),
                          logistic_config(600, 10, l2, 12, 6, 200),
                          repetitions,
                          rows);
  }
  // The default ErasureHead config's shape (experiments/examples/default_erasurehead.json),
  // 200 iterations: the PL routes' floor is vacuous there, the convex route is not.
  nlohmann::json config = logistic_config(6000, 200, 1e-4, 30, 15, 200);
  config["seed"] = 7;
  config["delay"] = {{"kind", "shifted_exponential"}, {"shift", 0.1}, {"rate", 1.0}};
  logistic_theorem_rows("default ErasureHead (logistic m=6000 p=200 l2=1e-4 FRC 15/30)",
                        config,
                        quick ? 20 : 40,
                        rows);
}

void coded_bound_rows(bool quick, std::vector<CheckRow>& rows) {
  const int repetitions = quick ? 20 : 40;
  nlohmann::json frc = convergence_config(600, 20, 1.0, 60, 60);
  frc["code"] = {{"kind", "frc"}, {"d", 2}};
  frc["stopping"] = {{"rule", "first_r"}, {"r", 30}};
  for (const char* rescale : {"none", "expected", "empirical"}) {
    frc["rescale"] = rescale;
    rows.push_back(
        coded_bound_row(fmt::format("LS l2=1 FRC first_r 30/60 {}", rescale), frc, repetitions));
  }
  // BGC loads differ between workers (so do their delays): its exact moments exist under a
  // deadline, where each worker is heard independently; optimal decoding walks the 2^12 sets.
  // (BGC's one-step decode is biased for a fixed B, E α_j = col_j/d: b² ≈ k/d, no bound.)
  nlohmann::json approx = convergence_config(400, 10, 1.0, 12, 40);
  approx["stopping"] = {{"rule", "deadline"}, {"after", 7.0}};
  approx["code"] = {{"kind", "bgc"}, {"d", 3}, {"decoder", "optimal"}};
  rows.push_back(coded_bound_row("LS l2=1 BGC optimal deadline 7 s, n=12", approx, repetitions));
  approx = convergence_config(400, 10, 1.0, 20, 40);
  approx["stopping"] = {{"rule", "first_r"}, {"r", 14}};
  approx["code"] = {{"kind", "sgc"}, {"d", 3}, {"decoder", "optimal"}};
  rows.push_back(coded_bound_row("LS l2=1 SGC optimal 14/20", approx, repetitions));
  approx["code"] = {{"kind", "sgc"}, {"d", 3}, {"decoder", "one_step"}};
  rows.push_back(coded_bound_row("LS l2=1 SGC one_step 14/20", approx, repetitions));
  // Load 3: T = 3 + 3·Exp(1), so a worker is heard by τ = 5 s with probability 1 − e^{−2/3}.
  approx["stopping"] = {{"rule", "deadline"}, {"after", 5.0}};
  rows.push_back(coded_bound_row("LS l2=1 SGC one_step deadline 5 s", approx, repetitions));
}

/// The exact standard deviation of f(x_t) against the runs' sample sd, within 4 s.e. of the
/// sample sd at every t it is computed for (t ≥ 1; t = 0 is deterministic).
void sd_row(const char* optimizer,
            int repetitions,
            const nlohmann::json& exact_sd,
            const MeasuredGap& m,
            std::vector<CheckRow>& rows) {
  if (!exact_sd.is_array() || exact_sd.size() < 2) {
    return;
  }
  std::size_t worst = 1;
  double worst_z = -1.0;
  bool pass = true;
  for (std::size_t t = 1; t < exact_sd.size(); ++t) {
    const double diff = std::abs(m.sd[t] - exact_sd[t].get<double>());
    pass = pass && diff <= 4.0 * m.sd_se[t];
    if (diff / m.sd_se[t] > worst_z) {
      worst_z = diff / m.sd_se[t];
      worst = t;
    }
  }
  rows.push_back({fmt::format("exact LS sd of f = sample sd, t<={}: {} ({} runs; t={})",
                              exact_sd.size() - 1,
                              optimizer,
                              repetitions,
                              worst),
                  exact_sd[worst].get<double>(),
                  m.sd[worst],
                  4.0 * m.sd_se[worst],
                  pass});
}

/// The measured floor and rate (fit_rate_and_floor over the runs) contain the exact curve's on
/// the same windows: the fit is checked against the truth, not against the theorem's bound.
void rate_and_floor_rows(const MeasuredGap& m,
                         const std::vector<double>& exact_curve,
                         int repetitions,
                         std::vector<CheckRow>& rows) {
  const auto fit = fit_rate_and_floor(m.runs);
  STRAGGLERSIM_ASSERT(fit && fit->rate, "the check's least-squares runs have a rate and a floor");
  const CurveRateFloor exact = curve_rate_and_floor(exact_curve, fit->floor_first, fit->fit_last);
  const auto inside = [](double x, const Interval& ci) { return ci.low <= x && x <= ci.high; };
  rows.push_back({fmt::format("measured floor CI holds the exact curve's, t >= {} ({} runs)",
                              fit->floor_first,
                              repetitions),
                  exact.floor,
                  fit->floor,
                  (fit->floor_interval.high - fit->floor_interval.low) / 2.0,
                  inside(exact.floor, fit->floor_interval)});
  rows.push_back({fmt::format("measured rate CI holds the exact curve's, t = 1..{} ({} runs)",
                              fit->fit_last,
                              repetitions),
                  exact.rate.value_or(0.0),
                  *fit->rate,
                  (fit->rate_interval.high - fit->rate_interval.low) / 2.0,
                  exact.rate && inside(*exact.rate, fit->rate_interval)});
}

/// The exact least-squares curve against the mean of repeated runs: the t of largest |z|.
void exact_curve_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out) {
  const int repetitions = quick ? 100 : 200;
  nlohmann::json config = convergence_config(400, 20, 0.1, 20, 40);
  config["code"] = {{"kind", "frc"}, {"d", 2}};
  config["stopping"] = {{"rule", "first_r"}, {"r", 10}};
  std::string csv = "optimizer,iteration,measured_mean,measured_se,exact,bound\n";
  for (const char* optimizer : {"gd", "nesterov"}) {
    config["optimizer"]["kind"] = optimizer;
    const RunPlan plan = plan_run(config, "check", ".");
    const nlohmann::json p = predictions(plan);
    const MeasuredGap m = measure_gap(plan, repetitions, 23, p["f_star"].get<double>());
    std::size_t worst = 1;
    double worst_z = -1.0;
    bool pass = true;
    for (std::size_t t = 0; t < m.mean.size(); ++t) {
      const double exact = p["exact_curve"][t].get<double>();
      const double diff = std::abs(m.mean[t] - exact);
      pass = pass && diff <= 4.0 * m.se[t] + 1e-12 * exact;
      if (t > 0 && diff / m.se[t] > worst_z) {
        worst_z = diff / m.se[t];
        worst = t;
      }
      csv += fmt::format(
          "{},{},{},{},{},{}\n",
          optimizer,
          t,
          m.mean[t],
          m.se[t],
          exact,
          p["bound"].is_array() ? fmt::format("{}", p["bound"][t].get<double>()) : std::string());
    }
    rows.push_back({fmt::format("exact LS curve = mean f-f*, every t: {} m=400 p=20 FRC 10/20 "
                                "l2=0.1 ({} runs; t={})",
                                optimizer,
                                repetitions,
                                worst),
                    p["exact_curve"][worst].get<double>(),
                    m.mean[worst],
                    4.0 * m.se[worst],
                    pass});
    if (std::string(optimizer) == "gd") {
      rate_and_floor_rows(m, p["exact_curve"].get<std::vector<double>>(), repetitions, rows);
    }
    // f(x_t) is a skewed quadratic form: the sample sd of 100 runs and the s.e. estimated from
    // the same runs' fourth moment are both low in most samples, so the row needs the full 200.
    if (!quick) {
      sd_row(optimizer, repetitions, p["exact_curve_sd"], m, rows);
    }
  }
  if (!out.empty()) {
    write_file_atomically(out / "exact_curve.csv", csv);
  }
}

/// `theory`'s simulated iteration time under stragglers "finish" (delay-only fast path) against
/// the event engine of a training run's cluster, different seeds.
void policy_rows(bool quick, std::vector<CheckRow>& rows) {
  nlohmann::json config = convergence_config(400, 10, 1.0, 20, 40);
  config["code"] = {{"kind", "frc"}, {"d", 2}};
  config["stopping"] = {{"rule", "first_r"}, {"r", 10}};
  config["stragglers"] = "finish";
  const RunPlan plan = plan_run(config, "check", ".");
  const nlohmann::json p = predictions(plan);
  sim::SimulatedCluster cluster(plan.make_delays(), plan.scheme.rule, plan.stragglers, 99);
  Mean measured;
  const std::uint64_t iterations = quick ? 5000 : 20000;
  for (std::uint64_t t = 0; t < iterations; ++t) {
    measured.add(cluster.next_iteration().iteration_time);
  }
  const double se_theory = p["iteration_time_se"].get<double>();
  const double se = std::hypot(se_theory, measured.se());
  rows.push_back(
      {"stragglers finish: theory's simulated E[iteration time] = event engine",
       p["expected_iteration_time"].get<double>(),
       measured.mean,
       4.0 * se,
       std::abs(measured.mean - p["expected_iteration_time"].get<double>()) <= 4.0 * se});
}

/// Persistent stragglers (MarkovDelay, p = 0.02, q = 0.2): the long-run mean iteration time of
/// ErasureHead (FRC d = 2, first_r r = n/2) against the i.i.d. numerical prediction from the
/// stationary marginal. Iterations are positively correlated (a slow worker stays slow for 1/q
/// iterations on average), so the standard error comes from batch means: batches of 100/q
/// iterations, far beyond the chains' correlation time (1 + ρ)/(1 − ρ) ≈ 8 with ρ = 1 − p − q,
/// so the batch means are nearly independent; the naive i.i.d. SE would be too small.
void persistent_rows(bool quick, std::vector<CheckRow>& rows) {
  const int n = 24;
  const int d = 2;
  const int r = n / 2;
  const sim::MarkovDelay::Options options{.shift = 1.0,
                                          .rate = 1.0,
                                          .slow_shift = 4.0,
                                          .slow_rate = 0.25,
                                          .to_slow = 0.02,
                                          .to_normal = 0.2,
                                          .tail = sim::TailScaling::kLoad};
  const auto code = frc_or_uncoded(n, d);
  const sim::MarkovDelay model(code->loads(), options);
  const auto p = sim::predict_iteration_time(
      {n, sim::CodeFamily::kFractionalRepetition, d, sim::RuleKind::kFirstR, r, 0.0}, model);
  const auto batch = static_cast<std::uint64_t>(std::lround(100.0 / options.to_normal));
  const std::uint64_t batches = quick ? 40 : 400;
  sim::DelayOnlySimulator s(std::make_unique<sim::MarkovDelay>(code->loads(), options),
                            std::make_shared<sim::FirstRStopping>(r),
                            code,
                            sim::StragglerPolicy::kCancel,
                            51);
  Mean batch_means;
  double sum = 0.0;
  std::uint64_t in_batch = 0;
  s.run(batch * batches, [&](const sim::DelayOnlyIteration& it) {
    sum += it.iteration_time;
    if (++in_batch == batch) {
      batch_means.add(sum / static_cast<double>(batch));
      sum = 0.0;
      in_batch = 0;
    }
  });
  rows.push_back(two_sided(fmt::format("Markov stragglers E[T] ErasureHead n={} d={} r={} "
                                       "p=0.02 q=0.2, batch-means SE",
                                       n,
                                       d,
                                       r),
                           p.mean,
                           batch_means.mean,
                           batch_means.se()));
}

/// Mean time per update of a discipline on n = 8 workers of Δ + Exp(1) delays over 10⁵ updates,
/// with its standard error from 100 batch means of 1000 updates (the asynchronous updates are
/// correlated through the workers still busy; K-sync's are independent).
Mean simulate_update_time(sim::UpdateDiscipline discipline, int n, int k, double shift) {
  constexpr int kBatches = 100;
  constexpr int kPerBatch = 1000;
  const sim::ShiftedExponentialDelay::Options delay{.shift = shift, .rate = 1.0};
  const std::uint64_t seed = 20180301;
  std::function<double()> next;
  std::unique_ptr<sim::SimulatedCluster> sync;
  std::unique_ptr<sim::AsynchronousCluster> async;
  if (discipline == sim::UpdateDiscipline::kKSync) {
    sync = std::make_unique<sim::SimulatedCluster>(
        std::make_unique<sim::ShiftedExponentialDelay>(n, 1.0, delay),
        std::make_shared<sim::FirstRStopping>(k),
        sim::StragglerPolicy::kCancel,
        seed);
    next = [&] { return sync->next_iteration().iteration_time; };
  } else {
    const sim::UpdateMode mode =
        discipline == sim::UpdateDiscipline::kKBatchSync ? sim::UpdateMode::kKBatchSync
        : discipline == sim::UpdateDiscipline::kKAsync   ? sim::UpdateMode::kKAsync
                                                         : sim::UpdateMode::kKBatchAsync;
    async = std::make_unique<sim::AsynchronousCluster>(
        std::make_unique<sim::ShiftedExponentialDelay>(n, 1.0, delay), mode, k, seed);
    next = [&] { return async->next_update().update_time; };
  }
  Mean batches;
  for (int b = 0; b < kBatches; ++b) {
    double sum = 0.0;
    for (int u = 0; u < kPerBatch; ++u) {
      sum += next();
    }
    batches.add(sum / kPerBatch);
  }
  return batches;
}

/// Dutta et al.'s time per update (sim/theory/update_time_theory.h) against the event engines:
/// two-sided where the formula is exact, one-sided (simulation ≤ bound + 4 s.e.) where it is a
/// bound.
void update_time_rows(std::vector<CheckRow>& rows) {
  struct Case {
    sim::UpdateDiscipline discipline;
    const char* label;
    int k;
    double shift;
  };
  const int n = 8;
  const std::vector<Case> cases = {
      {sim::UpdateDiscipline::kKSync, "K-sync", 3, 0.0},
      {sim::UpdateDiscipline::kKSync, "K-sync", 3, 0.5},
      {sim::UpdateDiscipline::kKBatchSync, "K-batch-sync", 3, 0.0},
      {sim::UpdateDiscipline::kKBatchSync, "K-batch-sync", 3, 0.5},
      {sim::UpdateDiscipline::kKAsync, "K-async", 3, 0.0},
      {sim::UpdateDiscipline::kKAsync, "K-async", 1, 0.0},
      {sim::UpdateDiscipline::kKAsync, "K-async", 3, 0.5},
      {sim::UpdateDiscipline::kKBatchAsync, "K-batch-async", 3, 0.0},
      {sim::UpdateDiscipline::kKBatchAsync, "K-batch-async", 3, 0.5},
  };
  for (const Case& c : cases) {
    const sim::UpdateTimePrediction p =
        sim::predict_update_time(c.discipline, n, c.k, c.shift, 1.0);
    const Mean m = simulate_update_time(c.discipline, n, c.k, c.shift);
    std::string claim = fmt::format("E[T/update] {} n={} K={} shift={}: {}{}",
                                    c.label,
                                    n,
                                    c.k,
                                    c.shift,
                                    p.formula,
                                    " (1e5 updates)");
    if (p.upper_bound) {
      rows.push_back({std::move(claim),
                      p.expected,
                      m.mean,
                      4.0 * m.se(),
                      m.mean <= p.expected + 4.0 * m.se()});
    } else {
      rows.push_back(two_sided(std::move(claim), p.expected, m.mean, m.se()));
    }
  }
}

/// One group of claims: appends its rows (and writes its own file under --out, if any).
using RowsOf = std::function<void(std::vector<CheckRow>&)>;

/// The groups in the order their rows are printed. Each has its own seeds and files, so they
/// run at once on the machine's cores and the output is the same bytes as one after another.
std::vector<RowsOf> row_groups(bool quick, const std::filesystem::path& out) {
  return {
      [quick](auto& rows) { iteration_time_rows(quick, rows); },
      [quick](auto& rows) { anytime_rows(quick, rows); },
      [quick](auto& rows) { multi_message_rows(quick, rows); },
      [quick](auto& rows) { erasure_rows(quick, rows); },
      [quick](auto& rows) { proportional_rows(quick, rows); },
      [quick](auto& rows) { proportional_cyclic_rows(quick, rows); },
      [quick](auto& rows) { order_statistics_rows(quick, rows); },
      [quick, out](auto& rows) { speedup_rows(quick, rows, out); },
      [quick](auto& rows) { estimator_rows(quick, rows); },
      [quick, out](auto& rows) { bound_rows(quick, rows, out); },
      [quick](auto& rows) { floor_rows(quick, rows); },
      [quick](auto& rows) { coded_bound_rows(quick, rows); },
      [quick, out](auto& rows) { exact_curve_rows(quick, rows, out); },
      [quick](auto& rows) { logistic_rows(quick, rows); },
      [quick](auto& rows) { policy_rows(quick, rows); },
      [quick](auto& rows) { persistent_rows(quick, rows); },
      [](auto& rows) { update_time_rows(rows); },
  };
}

/// Every group's rows, in group order; the groups run on a pool of the machine's cores.
std::vector<CheckRow> rows_of_every_group(const std::vector<RowsOf>& groups) {
  std::vector<std::vector<CheckRow>> per_group(groups.size());
  models::WorkerPool pool(std::min(hardware_cores(), static_cast<int>(groups.size())));
  pool.run(static_cast<int>(groups.size()), [&](int g) {
    groups[static_cast<std::size_t>(g)](per_group[static_cast<std::size_t>(g)]);
  });
  std::vector<CheckRow> rows;
  for (auto& group : per_group) {
    std::move(group.begin(), group.end(), std::back_inserter(rows));
  }
  return rows;
}

int command_check(bool quick, const std::string& out_dir) {
  std::filesystem::path out;
  if (!out_dir.empty()) {
    check_output_folder(out_dir, "--out");
    out = out_dir;
    std::filesystem::create_directories(out);
  }
  const std::vector<RowsOf> groups = row_groups(quick, out);
  const std::vector<CheckRow> rows = rows_of_every_group(groups);
  int failed = 0;
  std::string csv = "claim,theory,simulation,tolerance,result\n";
  std::cout << fmt::format(
      "{:<78} {:>12} {:>12} {:>10}  {}\n", "claim", "theory", "simulation", "tolerance", "result");
  for (const auto& r : rows) {
    failed += r.pass ? 0 : 1;
    std::cout << fmt::format("{:<78} {:>12.6g} {:>12.6g} {:>10.3g}  {}\n",
                             r.claim,
                             r.theory,
                             r.simulation,
                             r.tolerance,
                             r.pass ? "PASS" : "FAIL");
    csv += fmt::format("\"{}\",{},{},{},{}\n",
                       r.claim,
                       r.theory,
                       r.simulation,
                       r.tolerance,
                       r.pass ? "PASS" : "FAIL");
  }
  std::cout << fmt::format("check: {} of {} claims hold{}\n",
                           rows.size() - static_cast<std::size_t>(failed),
                           rows.size(),
                           quick ? " (quick)" : "");
  if (!out.empty()) {
    write_file_atomically(out / "check.csv", csv);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

Subcommand add_check_command(CLI::App& app) {
  auto quick = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check", "hold the simulator against the theory (PASS/FAIL rows)");
  cmd->add_flag("--quick",
                *quick,
                "fewer iterations, worker-by-worker n up to 4096 and order statistics at 2^20");
  add_output_option(
      *cmd, "-o,--out", *out, "also write check.csv, speedup.csv and bound.csv here", true);
  return {cmd, [quick, out] { return command_check(*quick, *out); }};
}

}  // namespace stragglersim::experiments

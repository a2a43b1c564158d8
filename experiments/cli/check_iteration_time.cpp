// The `check` rows of the iteration-time theory (sim/theory/iteration_time_theory.h,
// multi_message_theory.h, update_time_theory.h): E[T] of the codes and stopping rules, anytime
// minibatch, multi-message completion, the straggler policy "finish", persistent (Markov)
// stragglers and the asynchronous disciplines' time per update, each against the event engine or
// the delay-only fast path.

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "codes/cyclic_repetition_code.h"
#include "codes/proportional_code.h"
#include "experiments/cli/check_claims.h"
#include "experiments/config/run_plan.h"
#include "experiments/predict/predictions.h"
#include "sim/asynchronous_cluster.h"
#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/markov_delay.h"
#include "sim/fastpath/delay_only.h"
#include "sim/multi_message.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/multi_message_theory.h"
#include "sim/theory/update_time_theory.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments::check {

namespace {

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

}  // namespace

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

}  // namespace stragglersim::experiments::check

// The `check` rows at scale: delay-only runs of up to 2^30 workers on the order-statistics
// sampler against the closed forms, and the ErasureHead speedup over uncoded as n doubles.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "experiments/cli/check_claims.h"
#include "experiments/output_file.h"
#include "sim/fastpath/delay_only.h"
#include "sim/fastpath/order_statistics.h"
#include "sim/theory/convergence_theory.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments::check {

namespace {

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

}  // namespace

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

}  // namespace stragglersim::experiments::check

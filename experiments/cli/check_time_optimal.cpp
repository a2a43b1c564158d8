// The `check` rows of the time-optimal methods' time per update (sim/theory/time_optimal_theory.h,
// docs/theory.md "Time-optimal methods") against the asynchronous loop
// (sim/asynchronous_cluster.h). Under the fixed computation model the loop is deterministic: an
// exact prediction must match every simulated update to rounding (1e-9 relative) and a bound must
// hold for every update (or for the mean over a whole number of windows, where the bound is on
// windows). Under shifted-exponential delays the mean over 5·10⁴ updates (2·10⁴ with --quick) is
// held within 4 standard errors of batch means (an exact prediction two-sided, a bound one-sided).
// The configurations beyond the papers' example τ_i = √i are drawn from a fixed seed, so the rows
// are not hand-picked.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/cli/check_claims.h"
#include "sim/asynchronous_cluster.h"
#include "sim/delays/fixed_delay.h"
#include "sim/theory/time_optimal_theory.h"

namespace stragglersim::experiments::check {

namespace {

/// The relative tolerance of a deterministic (fixed-model) comparison: rounding only.
constexpr double kRounding = 1e-9;
/// Updates simulated under the fixed model (every one checked).
constexpr std::uint64_t kFixedUpdates = 2000;

/// What a run of the asynchronous loop gave.
struct Simulated {
  Mean batches;                                          ///< batch means of the update times
  double min = std::numeric_limits<double>::infinity();  ///< the shortest update
  double max = 0.0;                                      ///< the longest update
  double farthest = 0.0;  ///< the update farthest from `reference` (Simulate's argument)
  double mean = 0.0;      ///< the clock at the last update over the updates (from the start)
};

/// Runs `shape` on `delays` for warmup + batches·per_batch updates; the statistics skip the
/// warm-up (the mean from the start, Simulated::mean, does not).
Simulated simulate(std::unique_ptr<sim::DelayModel> delays,
                   const sim::UpdateShape& shape,
                   std::uint64_t seed,
                   int warmup,
                   int batches,
                   int per_batch,
                   double reference = 0.0) {
  sim::AsynchronousCluster cluster(std::move(delays), shape, seed);
  for (int u = 0; u < warmup; ++u) {
    (void)cluster.next_update();
  }
  Simulated out;
  double last = 0.0;
  for (int b = 0; b < batches; ++b) {
    double sum = 0.0;
    for (int u = 0; u < per_batch; ++u) {
      const sim::AsynchronousUpdate& update = cluster.next_update();
      const double t = update.update_time;
      sum += t;
      out.min = std::min(out.min, t);
      out.max = std::max(out.max, t);
      if ((b == 0 && u == 0) || std::abs(t - reference) > std::abs(out.farthest - reference)) {
        out.farthest = t;
      }
      last = update.time;
    }
    out.batches.add(sum / per_batch);
  }
  out.mean = last / static_cast<double>(warmup + batches * per_batch);
  return out;
}

/// A deterministic run of `updates` updates under the fixed model τ.
Simulated simulate_fixed(const std::vector<double>& tau,
                         const sim::UpdateShape& shape,
                         double reference = 0.0,
                         std::uint64_t updates = kFixedUpdates) {
  auto delays = std::make_unique<sim::FixedDelay>(
      std::vector<double>(tau.size(), 1.0),
      sim::FixedDelay::Options{.formula = sim::FixedDelay::Formula::kList, .times = tau});
  return simulate(std::move(delays), shape, 1, 0, 1, static_cast<int>(updates), reference);
}

sim::UpdateShape shape_of(sim::UpdateMode mode,
                          int k,
                          bool stop_stale,
                          std::optional<std::uint64_t> max_delay = std::nullopt,
                          std::vector<double> cutoffs = {}) {
  sim::UpdateShape shape;
  shape.mode = mode;
  shape.k = k;
  shape.stop_stale = stop_stale;
  shape.max_delay = max_delay;
  shape.cutoffs = std::move(cutoffs);
  return shape;
}

/// Every update equals the exact prediction to rounding; the row shows the update farthest from
/// it.
CheckRow every_update_equals(std::string claim, double theory, const Simulated& s) {
  const double tolerance = kRounding * theory;
  return {std::move(claim),
          theory,
          s.farthest,
          tolerance,
          s.min >= theory - tolerance && s.max <= theory + tolerance};
}

/// Every update at least (lower) or at most (upper) the bound, to rounding.
CheckRow every_update_bounded(std::string claim, double bound, const Simulated& s, bool lower) {
  const double tolerance = kRounding * bound;
  return {std::move(claim),
          bound,
          lower ? s.min : s.max,
          tolerance,
          lower ? s.min >= bound - tolerance : s.max <= bound + tolerance};
}

/// The mean of the batch means within 4 s.e. on the bound's side.
CheckRow mean_bounded(std::string claim, double bound, const Simulated& s, bool lower) {
  const double se = s.batches.se();
  const double mean = s.batches.mean;
  return {std::move(claim),
          bound,
          mean,
          4.0 * se,
          lower ? mean >= bound - 4.0 * se : mean <= bound + 4.0 * se};
}

sim::TimeOptimalParameters parameters(sim::TimeOptimalMethod method,
                                      std::int64_t batch,
                                      bool stop_stale,
                                      std::optional<int> max_delay = std::nullopt,
                                      std::vector<double> cutoffs = {}) {
  sim::TimeOptimalParameters p;
  p.method = method;
  p.batch = batch;
  p.stop_stale = stop_stale;
  p.max_delay = max_delay;
  p.cutoffs = std::move(cutoffs);
  return p;
}

/// Rennala (with and without stop_stale), the t(B) sandwich and Malenia under fixed times τ.
void fixed_rennala_malenia_rows(const std::string& label,
                                const std::vector<double>& tau,
                                const std::vector<int>& batches,
                                int malenia_s,
                                std::vector<CheckRow>& rows) {
  const int n = static_cast<int>(tau.size());
  for (const int b : batches) {
    const auto exact =
        sim::predict_time_optimal(parameters(sim::TimeOptimalMethod::kRennala, b, true), tau);
    const Simulated s =
        simulate_fixed(tau, shape_of(sim::UpdateMode::kRennala, b, true), exact->lower);
    rows.push_back(every_update_equals(
        fmt::format("T/update rennala stop_stale fixed {} n={} B={}: T*(B) exact", label, n, b),
        exact->lower,
        s));
    // The papers' equilibrium time sandwiches the exact collection time.
    const double t = sim::equilibrium_time(tau, b);
    rows.push_back(
        {fmt::format("T/update rennala fixed {} n={} B={}: t(B)/2 <= T*(B) <= t(B)", label, n, b),
         t,
         s.batches.mean,
         t / 2.0,
         s.min >= t / 2.0 * (1.0 - kRounding) && s.max <= t * (1.0 + kRounding)});
    const auto bounds =
        sim::predict_time_optimal(parameters(sim::TimeOptimalMethod::kRennala, b, false), tau);
    const Simulated stale = simulate_fixed(tau, shape_of(sim::UpdateMode::kRennala, b, false));
    rows.push_back(every_update_bounded(
        fmt::format("T/update rennala fixed {} n={} B={}: every update >= T*(B)", label, n, b),
        bounds->lower,
        stale,
        true));
    rows.push_back(every_update_bounded(
        fmt::format("T/update rennala fixed {} n={} B={}: every update <= T°(B)", label, n, b),
        bounds->upper,
        stale,
        false));
  }
  const auto malenia =
      sim::predict_time_optimal(parameters(sim::TimeOptimalMethod::kMalenia, malenia_s, true), tau);
  rows.push_back(every_update_equals(
      fmt::format("T/update malenia stop_stale fixed {} n={} S={}: exact", label, n, malenia_s),
      malenia->lower,
      simulate_fixed(tau, shape_of(sim::UpdateMode::kMalenia, malenia_s, true), malenia->lower)));
}

/// Ringmaster under fixed times: R = ∞ exactly 1/Σ 1/τ_i in the long run (the mean from the start
/// lies in [1/Σ, (1 + n/U)/Σ] after U updates: Σ_i ⌊t/τ_i⌋ > tΣ − n); finite R between 1/Σ and
/// T°(R)/R (every R consecutive updates within T°(R); U = 500 R updates).
void fixed_ringmaster_rows(const std::string& label,
                           const std::vector<double>& tau,
                           int r,
                           std::vector<CheckRow>& rows) {
  const int n = static_cast<int>(tau.size());
  const auto asgd =
      sim::predict_time_optimal(parameters(sim::TimeOptimalMethod::kRingmaster, 1, false), tau);
  const Simulated s = simulate_fixed(tau, shape_of(sim::UpdateMode::kRingmaster, 1, false));
  const double slack = static_cast<double>(n) / static_cast<double>(kFixedUpdates) * asgd->lower;
  rows.push_back({fmt::format("T/update ringmaster R=inf fixed {} n={}: 1/sum(1/tau_i) exact "
                              "(mean of {} updates)",
                              label,
                              n,
                              kFixedUpdates),
                  asgd->lower,
                  s.mean,
                  slack,
                  s.mean >= asgd->lower * (1.0 - kRounding) && s.mean <= asgd->lower + slack});
  for (const bool stop : {false, true}) {
    const auto p =
        sim::predict_time_optimal(parameters(sim::TimeOptimalMethod::kRingmaster, 1, stop, r), tau);
    const Simulated w = simulate_fixed(
        tau,
        shape_of(sim::UpdateMode::kRingmaster, 1, stop, static_cast<std::uint64_t>(r)),
        0.0,
        500 * static_cast<std::uint64_t>(r));
    const std::string name = fmt::format(
        "T/update ringmaster R={}{} fixed {} n={}", r, stop ? " stop_stale" : "", label, n);
    rows.push_back({name + ": mean >= 1/sum(1/tau_i)",
                    p->lower,
                    w.mean,
                    kRounding * p->lower,
                    w.mean >= p->lower * (1.0 - kRounding)});
    rows.push_back({name + ": mean <= T°(R)/R",
                    p->upper,
                    w.mean,
                    kRounding * p->upper,
                    w.mean <= p->upper * (1.0 + kRounding)});
  }
}

/// MindFlayer under fixed times: Rennala over the workers within their cut-offs, exactly.
void fixed_mindflayer_rows(const std::string& label,
                           const std::vector<double>& tau,
                           double cutoff,
                           int b,
                           std::vector<CheckRow>& rows) {
  const int n = static_cast<int>(tau.size());
  const std::vector<double> cutoffs(tau.size(), cutoff);
  const auto p = sim::predict_time_optimal(
      parameters(sim::TimeOptimalMethod::kMindFlayer, b, true, std::nullopt, cutoffs), tau);
  rows.push_back(every_update_equals(
      fmt::format(
          "T/update mindflayer stop_stale fixed {} n={} B={} t_i={}: T*(B) of tau_i <= t_i exact",
          label,
          n,
          b,
          cutoff),
      p->lower,
      simulate_fixed(
          tau, shape_of(sim::UpdateMode::kMindFlayer, b, true, std::nullopt, cutoffs), p->lower)));
}

/// Random delays Δ_i + scale_i·Exp(1) through a shifted-exponential model of loads ℓ_i
/// (Δ_i = ℓ_i·shift, scale_i = ℓ_i).
struct RandomCase {
  std::vector<double> loads;
  double shift = 0.0;
  [[nodiscard]] std::unique_ptr<sim::DelayModel> model() const {
    return std::make_unique<sim::ShiftedExponentialDelay>(
        loads,
        sim::ShiftedExponentialDelay::Options{
            .shift = shift, .rate = 1.0, .tail = sim::TailScaling::kLoad});
  }
  [[nodiscard]] sim::ShiftedExponentialWorkers workers() const {
    sim::ShiftedExponentialWorkers w;
    for (const double l : loads) {
      w.shift.push_back(l * shift);
      w.scale.push_back(l);
    }
    return w;
  }
  [[nodiscard]] std::string label() const {
    return fmt::format("n={} shift={} seeded loads", loads.size(), shift);
  }
};

/// One prediction under random delays against the loop's batch means: exact two-sided, a bound
/// one-sided (a lower and, if any, an upper row).
void random_rows(const std::string& name,
                 const sim::TimeOptimalPrediction& p,
                 const Simulated& s,
                 std::vector<CheckRow>& rows) {
  if (p.exact()) {
    rows.push_back(
        two_sided(name + ": " + p.formula + " exact", p.lower, s.batches.mean, s.batches.se()));
    return;
  }
  rows.push_back(mean_bounded(name + ": mean >= lower bound", p.lower, s, true));
  if (p.upper != sim::kNoBound) {
    rows.push_back(mean_bounded(name + ": mean <= upper bound", p.upper, s, false));
  }
}

/// The prediction of `p` for the workers of `rc` against the loop running `shape` on its model
/// (100 batch means of `per_batch` updates after `warmup`).
void random_case_rows(const std::string& name,
                      const sim::TimeOptimalParameters& p,
                      const sim::UpdateShape& shape,
                      const RandomCase& rc,
                      std::uint64_t seed,
                      int warmup,
                      int per_batch,
                      std::vector<CheckRow>& rows) {
  const auto prediction = sim::predict_time_optimal(p, rc.workers());
  random_rows(name + " " + rc.label(),
              *prediction,
              simulate(rc.model(), shape, seed, warmup, 100, per_batch),
              rows);
}

/// τ_i = √i, n = 8 (the papers' heterogeneous example), then two seeded random configurations:
/// n in 3 … 12, τ_i log-uniform in [0.5, 4], B and S in 1 … 3n, R in 1 … n.
void fixed_rows(Draws& draws, std::vector<CheckRow>& rows) {
  std::vector<double> sqrt_tau(8);
  for (std::size_t i = 0; i < sqrt_tau.size(); ++i) {
    sqrt_tau[i] = std::sqrt(static_cast<double>(i + 1));
  }
  fixed_rennala_malenia_rows("sqrt", sqrt_tau, {4, 8, 20}, 20, rows);
  fixed_ringmaster_rows("sqrt", sqrt_tau, 4, rows);
  fixed_mindflayer_rows("sqrt", sqrt_tau, 2.5, 8, rows);
  for (int c = 0; c < 2; ++c) {
    std::vector<double> tau(static_cast<std::size_t>(draws.between(3, 12)));
    for (double& t : tau) {
      t = 0.5 * std::exp(draws.uniform() * std::log(8.0));
    }
    const int n = static_cast<int>(tau.size());
    const int b = draws.between(1, 3 * n);
    const int s = draws.between(1, 3 * n);
    const int r = draws.between(1, n);
    const std::string label = "random#" + std::to_string(c + 1);
    fixed_rennala_malenia_rows(label, tau, {b}, s, rows);
    fixed_ringmaster_rows(label, tau, r, rows);
  }
}

/// n = 8 workers of seeded loads ℓ_i uniform in [0.5, 2.5], Δ_i = 0.5ℓ_i (or 0), scale_i = ℓ_i.
void random_delay_rows(bool quick, Draws& draws, std::vector<CheckRow>& rows) {
  const int per_batch = quick ? 200 : 500;
  std::vector<double> loads(8);
  for (double& l : loads) {
    l = 0.5 + 2.0 * draws.uniform();
  }
  const RandomCase shifted{loads, 0.5};
  const RandomCase exponential{loads, 0.0};
  std::uint64_t seed = 550;
  // Rennala: the renewal integral exact with stop_stale, bounds without; B ≤ n and B > n.
  for (const int b : {4, 12}) {
    for (const bool stop : {true, false}) {
      random_case_rows(fmt::format("T/update rennala{} B={}", stop ? " stop_stale" : "", b),
                       parameters(sim::TimeOptimalMethod::kRennala, b, stop),
                       shape_of(sim::UpdateMode::kRennala, b, stop),
                       shifted,
                       ++seed,
                       100,
                       per_batch,
                       rows);
    }
  }
  // Ringmaster: asynchronous SGD (R = ∞) exact for shifted exponentials; with stopping and
  // finite R exact for exponentials (1/Σλ_i); finite R without stopping a lower bound.
  random_case_rows("T/update ringmaster R=inf",
                   parameters(sim::TimeOptimalMethod::kRingmaster, 1, false),
                   shape_of(sim::UpdateMode::kRingmaster, 1, false),
                   shifted,
                   ++seed,
                   1000,
                   per_batch,
                   rows);
  for (const bool stop : {true, false}) {
    random_case_rows(fmt::format("T/update ringmaster R=3{}", stop ? " stop_stale" : ""),
                     parameters(sim::TimeOptimalMethod::kRingmaster, 1, stop, 3),
                     shape_of(sim::UpdateMode::kRingmaster, 1, stop, 3),
                     stop ? exponential : shifted,
                     ++seed,
                     1000,
                     per_batch,
                     rows);
  }
  // MindFlayer with Δ = 0 (the theory's case): Rennala's B/Σλ_i with stop_stale, whatever the
  // cut-offs t_i = ℓ_i (an attempt is cut with probability 1/e), bounds without.
  for (const bool stop : {true, false}) {
    random_case_rows(fmt::format("T/update mindflayer{} B=8 t_i=l_i", stop ? " stop_stale" : ""),
                     parameters(sim::TimeOptimalMethod::kMindFlayer, 8, stop, std::nullopt, loads),
                     shape_of(sim::UpdateMode::kMindFlayer, 8, stop, std::nullopt, loads),
                     exponential,
                     ++seed,
                     100,
                     per_batch,
                     rows);
  }
}

}  // namespace

void time_optimal_rows(bool quick, std::vector<CheckRow>& rows) {
  Draws draws(20230512);
  fixed_rows(draws, rows);
  random_delay_rows(quick, draws, rows);
}

}  // namespace stragglersim::experiments::check

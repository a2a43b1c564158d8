#include "experiments/predict/predictions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/plan_optimum.h"
#include "models/base/stop_request.h"
#include "models/optimum.h"
#include "sim/collectives/collective.h"
#include "sim/delays/fixed_delay.h"
#include "sim/stopping_rule.h"
#include "sim/theory/collective_theory.h"
#include "sim/theory/convergence_theory.h"
#include "sim/theory/multi_message_theory.h"
#include "sim/theory/time_optimal_theory.h"

namespace stragglersim::experiments {
namespace {
/// Workers above which the O(n)-per-point numerical iteration-time prediction is skipped.
constexpr int kNumericalPredictionWorkers = 10'000'000;
/// The speedup-against-n table runs over n = 8, 16, …, 2^30 (closed forms: microseconds each).
constexpr int kSpeedupMaxWorkers = 1 << 30;
}  // namespace

int group_size(const RunPlan& plan) {
  const codes::CodeStructure structure = plan.scheme.code->structure();
  return structure.layout == codes::CodeLayout::kGroups ? structure.group_size : 1;
}

std::optional<ConvergenceInputs> convergence_inputs(const RunPlan& plan, std::string* why) {
  const auto& f = *plan.objective;
  if (auto problem = convergence_cost_problem(plan)) {
    *why = *problem;
    return std::nullopt;
  }
  const std::optional<double> mu = f.pl_constant();
  if (!mu || *mu <= 0.0) {
    *why = "no PL constant: logistic regression needs l2 > 0";
    return std::nullopt;
  }
  ConvergenceInputs in;
  in.smoothness = plan.smoothness;
  in.pl_constant = *mu;
  const models::Optimum opt = plan_optimum(plan).optimum;
  if (!opt.converged) {
    *why = "f* not computed: " + opt.failure;
    return std::nullopt;
  }
  in.f_star = opt.value;
  in.optimum_method = opt.method;
  // ζ² "along the run": the largest Σ_g ‖∇F_g‖² on the exact-gradient GD path of the configured
  // step and length (the estimator's iterates stay near it; check reports the noisy runs' own).
  const int d = group_size(plan);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
  Eigen::MatrixXd pg;
  const double f0 = f.evaluate(x, &pg);
  in.initial_gap = f0 - in.f_star;
  // The path's first kMaxTheoryIterations steps: theory's cost must not grow with iterations.
  for (std::uint64_t t = 0; t <= std::min(plan.iterations, kMaxTheoryIterations); ++t) {
    models::throw_if_stop_requested();
    if (t > 0) {
      f.evaluate(x, &pg);
    }
    double zeta = 0.0;
    for (Eigen::Index g = 0; g < pg.cols(); g += d) {
      zeta +=
          pg.middleCols(g, std::min<Eigen::Index>(d, pg.cols() - g)).rowwise().sum().squaredNorm();
    }
    in.zeta_squared = std::max(in.zeta_squared, zeta);
    x -= plan.step * (pg.rowwise().sum() + f.l2() * x);
  }
  return in;
}

namespace {

/// Iterations of the delay-only simulation behind finish/drain predictions.
constexpr std::uint64_t kPolicyDraws = 20000;

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

/// The closed forms assume every worker starts each iteration afresh (cancel) and that messages
/// do not queue: under finish and drain, or with a serial link, the iteration time is simulated
/// (`theory`) or left out (summary.json).
void add_policy_prediction(const RunPlan& plan, bool convergence, nlohmann::json& out) {
  const bool serial = plan.network.serial && !plan.network.is_free();
  if (plan.stragglers == sim::StragglerPolicy::kCancel && !serial) {
    return;
  }
  if (plan.stragglers != sim::StragglerPolicy::kCancel) {
    out["policy_note"] =
        "stragglers finish/drain: the closed forms assume cancel; the iteration time is simulated";
  }
  if (serial) {
    out["network_note"] =
        "serial link: the closed forms do not cover messages queueing at the master; the "
        "iteration time is simulated";
  }
  if (convergence) {
    out.update(simulated_iteration_time(plan, kPolicyDraws));
  } else {
    out["expected_iteration_time"] = nullptr;
    out["iteration_time_sd"] = nullptr;
    out["method"] = "none (run `theory` for a simulated prediction)";
  }
}

/// The iteration time with the network's parallel links: every arrival moves by the constant
/// c = L + S/B, so the stop of `all`, `first_r` and `decodable` rules moves by c, and a deadline τ
/// on arrivals is the deadline τ − c on compute ends plus c (exact; nobody is heard when τ ≤ c).
/// A serial link is left to add_policy_prediction (simulated).
/// Anytime minibatch (docs/model.md §4): every worker sends at min(T, X_i) and the master waits
/// for every message, so the iteration time max_i min(T, X_i) = min(T, max_i X_i) is the deadline
/// rule's at τ = T on compute ends, for the uncoded code. Nullopt for every other rule.
std::optional<sim::SchemeDescription> anytime_description(const RunPlan& plan) {
  const auto window = plan.scheme.rule->compute_window();
  if (!window) {
    return std::nullopt;
  }
  return sim::SchemeDescription{
      plan.workers, sim::CodeFamily::kUncoded, 1, sim::RuleKind::kDeadline, 1, *window};
}

/// The prediction's fields of the `theory` block (docs/model.md §7 `summary.json`).
void add_iteration_time(const sim::IterationTimePrediction& p, nlohmann::json& out) {
  out["expected_iteration_time"] = number_or_null(p.mean);
  out["iteration_time_sd"] = number_or_null(p.sd);
  out["group_erasure_probability"] = number_or_null(p.q);
  out["q2"] = number_or_null(p.q2);
  out["method"] = p.method;
  out["estimated_operations"] = p.estimated_operations;
  if (p.method == "simulation") {
    out["iteration_time_se"] = p.standard_error;
    out["draws"] = p.draws;
    out["fallback_reason"] = p.fallback_reason;
  }
}

/// Anytime: no worker's message is erased (q is not defined), and the bounds assume erasures.
void add_anytime_note(const RunPlan& plan, bool convergence, nlohmann::json& out) {
  out["group_erasure_probability"] = nullptr;
  out["q2"] = nullptr;
  out["anytime_note"] =
      "anytime: max_i min(T, X_i), the deadline rule's time at T; no erasure probability and no "
      "convergence bound";
  if (convergence && !plan.delay_only()) {
    out.update(convergence_predictions(plan, nullptr, nullptr));
  }
}

sim::IterationTimePrediction predict_with_network(const RunPlan& plan,
                                                  sim::SchemeDescription scheme,
                                                  const sim::DelayModel& delays) {
  const sim::NetworkOptions& net = plan.network;
  // The fallback simulates the plan itself, network included.
  const sim::PredictionOptions options = prediction_options(plan, kPolicyDraws);
  if (net.is_free()) {
    return sim::predict_iteration_time(scheme, delays, options);
  }
  const double c = net.latency + net.transfer_time();
  // Anytime: each message leaves at min(T, X_i) and arrives c later, so the whole time shifts.
  const bool deadline =
      scheme.rule == sim::RuleKind::kDeadline && !plan.scheme.rule->compute_window();
  sim::IterationTimePrediction p;
  if (deadline && scheme.deadline <= c) {
    p.mean = scheme.deadline;
    p.sd = 0.0;
    p.q = scheme.code == sim::CodeFamily::kCyclic ? std::nan("") : 1.0;
    p.q2 = p.q;
    p.method = "exact (the deadline is at most the communication time: nobody is heard)";
    return p;
  }
  if (deadline) {
    scheme.deadline -= c;
  }
  p = sim::predict_iteration_time(scheme, delays, options);
  if (p.method == "simulation") {
    return p;
  }
  p.mean += c;
  p.method += fmt::format(" + communication latency + size/bandwidth = {} s (exact shift)", c);
  return p;
}

/// iterations_to_target / time_to_target: the first t within the horizon whose bound reaches
/// the target.
void add_target(const RunPlan& plan, nlohmann::json& out) {
  if (!plan.target_loss || !out["bound"].is_array()) {
    return;
  }
  const double epsilon = *plan.target_loss - out["f_star"].get<double>();
  nlohmann::json its;
  for (std::size_t t = 0; t < out["bound"].size() && epsilon > 0.0; ++t) {
    if (out["bound"][t].get<double>() <= epsilon) {
      its = t;
      break;
    }
  }
  out["iterations_to_target"] = its;
  out["time_to_target"] =
      its.is_null() || out["expected_iteration_time"].is_null()
          ? nlohmann::json()
          : nlohmann::json(its.get<double>() * out["expected_iteration_time"].get<double>());
}

/// The n of the speedup table: powers of two from 8 that d divides, and the config's own n.
std::vector<int> speedup_workers(const sim::SchemeDescription& scheme) {
  std::vector<int> ns;
  for (std::int64_t n = 8; n <= kSpeedupMaxWorkers; n *= 2) {
    if (n % scheme.d == 0 && n != scheme.workers) {
      ns.push_back(static_cast<int>(n));
    }
  }
  ns.insert(std::upper_bound(ns.begin(), ns.end(), scheme.workers), scheme.workers);
  return ns;
}

/// Whether the speedup table applies: ErasureHead (FRC under first_r, not `proportional`: its
/// shares depend on the factors at each n) under an i.i.d. shifted exponential.
bool erasurehead_table_applies(const sim::SchemeDescription& scheme,
                               const sim::DelayModel& delays) {
  return scheme.code == sim::CodeFamily::kFractionalRepetition && scheme.loads.empty() &&
         scheme.rule == sim::RuleKind::kFirstR && delays.shifted_exponential().has_value();
}

/// The predicted speedup against n for ErasureHead at the plan's fraction r/n; nullopt for
/// other schemes and delay models.
std::optional<nlohmann::json> speedup_rows(const sim::SchemeDescription& scheme,
                                           const sim::DelayModel& delays) {
  if (!erasurehead_table_applies(scheme, delays)) {
    return std::nullopt;
  }
  const auto base = delays.shifted_exponential();
  const double fraction = static_cast<double>(scheme.r) / scheme.workers;
  const auto points = sim::predicted_speedup(
      speedup_workers(scheme), {scheme.d, fraction}, base->shift, base->rate, base->tail);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& pt : points) {
    rows.push_back({{"workers", pt.workers},
                    {"r", pt.r},
                    {"uncoded", pt.uncoded},
                    {"frc", pt.frc},
                    {"erasurehead", pt.erasurehead},
                    {"speedup_vs_uncoded", pt.speedup_vs_uncoded},
                    {"speedup_vs_frc", pt.speedup_vs_frc}});
  }
  return rows;
}

/// ErasureHead's speedup over uncoded when both reduce by the plan's ring (docs/theory.md
/// "Collectives"): (E[max] + C)/(E[T_(r:n)] + C), C = 2(n − 1)(α + S/(nB)) with the plan's α
/// and S/B at every n; nullopt for other collectives, schemes and delay models.
std::optional<nlohmann::json> ring_speedup_rows(const RunPlan& plan,
                                                const sim::SchemeDescription& scheme,
                                                const sim::DelayModel& delays) {
  const sim::CollectiveAggregation& c = *plan.collective;
  if (c.options.kind != sim::collectives::CollectiveKind::kRing ||
      !erasurehead_table_applies(scheme, delays)) {
    return std::nullopt;
  }
  const auto base = delays.shifted_exponential();
  const double bytes = c.bytes_per_element * static_cast<double>(c.schedule->elements);
  const double fraction = static_cast<double>(scheme.r) / scheme.workers;
  const auto points = sim::ring_speedup(speedup_workers(scheme),
                                        {scheme.d, fraction},
                                        base->shift,
                                        base->rate,
                                        base->tail,
                                        c.options.link.latency,
                                        bytes / c.options.link.bandwidth);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& pt : points) {
    rows.push_back({{"workers", pt.workers},
                    {"r", pt.r},
                    {"ring_cost", pt.ring_cost},
                    {"uncoded", pt.uncoded},
                    {"erasurehead", pt.erasurehead},
                    {"speedup_parameter_server", pt.speedup_parameter_server},
                    {"speedup_ring", pt.speedup_ring}});
  }
  return rows;
}

/// The max-plus offsets w_j of the plan's collective (collectives::completion_offsets).
std::vector<double> collective_offsets(const RunPlan& plan) {
  const sim::CollectiveAggregation& c = *plan.collective;
  return sim::collectives::completion_offsets(*c.schedule, c.options, c.bytes_per_element);
}

/// A collective's iteration time (docs/theory.md "Collectives"): E[T] and its sd when the form is
/// exact (or simulated), null with bounds; q and q₂ are the stop's (the heard set is the
/// parameter server's); `collective` holds the form, the bounds on E[T], the stop t* and the
/// offsets.
void add_collective_time(const RunPlan& plan,
                         const sim::CollectiveTimePrediction& p,
                         nlohmann::json& out) {
  const bool bounds = p.form == "bounds";
  out["expected_iteration_time"] = bounds ? nlohmann::json() : number_or_null(p.mean);
  out["iteration_time_sd"] = bounds ? nlohmann::json() : number_or_null(p.sd);
  out["group_erasure_probability"] = number_or_null(p.stop.q);
  out["q2"] = number_or_null(p.stop.q2);
  out["method"] = p.form == "simulation"
                      ? std::string("simulation")
                      : fmt::format("collective theory ({}): {}", p.form, p.method);
  out["estimated_operations"] = p.stop.estimated_operations;
  if (p.form == "simulation") {
    out["iteration_time_se"] = p.standard_error;
    out["draws"] = p.stop.draws;
    out["fallback_reason"] = p.stop.fallback_reason;
  }
  out["collective"] = {{"aggregation", plan.aggregation},
                       {"form", p.form},
                       {"lower", number_or_null(p.lower)},
                       {"upper", number_or_null(p.upper)},
                       {"stop_time", number_or_null(p.stop.mean)},
                       {"stop_method", p.stop.method},
                       {"offset_min", p.min_offset},
                       {"offset_max", p.max_offset}};
}

/// A collective run's predictions: its iteration time, the ring's speedup table (ErasureHead
/// over a ring) and the convergence keys with the stop's q, q₂; anytime's note.
nlohmann::json collective_predictions(const RunPlan& plan,
                                      const sim::SchemeDescription& scheme,
                                      const sim::DelayModel& delays,
                                      bool convergence,
                                      bool anytime) {
  nlohmann::json out;
  sim::CollectiveTimePrediction p;
  try {
    p = sim::predict_collective_time(
        scheme, delays, collective_offsets(plan), prediction_options(plan, kPolicyDraws));
  } catch (const sim::NumericalError& e) {
    out["iteration_time_problem"] = e.what();
    return out;
  }
  add_collective_time(plan, p, out);
  if (anytime) {
    add_anytime_note(plan, convergence, out);
    return out;
  }
  if (!convergence) {
    return out;
  }
  if (auto rows = ring_speedup_rows(plan, scheme, delays)) {
    for (const auto& row : *rows) {
      if (row["workers"] == scheme.workers) {
        out["ring_speedup_at_config_n"] = row;
      }
    }
    out["ring_speedup_vs_n"] = std::move(*rows);
  }
  if (plan.delay_only()) {
    return out;
  }
  out.update(convergence_predictions(plan, &scheme, &p.stop));
  add_target(plan, out);
  return out;
}

/// Multi-message (docs/theory.md "Multi-message completion time"): its own completion-time
/// theory, the network's parallel links as the exact shift c, no erasure probability (the master
/// erases partitions, not groups); the policy note and the convergence keys as for any scheme.
nlohmann::json multi_message_predictions(const RunPlan& plan,
                                         const std::vector<std::vector<int>>& orders,
                                         bool convergence) {
  nlohmann::json out;
  const auto delays = plan.make_delays();
  sim::MultiMessageTheoryOptions o;
  o.shift = plan.network.is_free() ? 0.0 : plan.network.latency + plan.network.transfer_time();
  o.deadline = plan.scheme.rule->deadline();
  o.simulate = prediction_options(plan, kPolicyDraws).simulate;
  try {
    if (plan.collective) {
      add_collective_time(
          plan,
          sim::predict_collective_multi_message_time(orders, *delays, collective_offsets(plan), o),
          out);
    } else {
      add_iteration_time(sim::predict_multi_message_time(orders, *delays, o), out);
    }
  } catch (const sim::NumericalError& e) {
    out["iteration_time_problem"] = e.what();
    return out;
  }
  out["multi_message_note"] =
      "multi_message: Z = min(after, max_j min over the messages carrying j of their arrival); "
      "no group-erasure probability";
  add_policy_prediction(plan, convergence, out);
  if (convergence && !plan.delay_only()) {
    out.update(convergence_predictions(plan, nullptr, nullptr));
  }
  return out;
}

/// The time-optimal theory's parameters for an update rule's shape; nullopt for the disciplines
/// of Dutta et al. (k_batch_sync, k_async, k_batch_async), which have no formula here. Rescaled
/// ASGD runs the clock of asynchronous SGD (an update per arrival, no worker idle), Ringmaster's
/// with R = ∞.
std::optional<sim::TimeOptimalParameters> time_optimal_parameters(const sim::UpdateShape& shape) {
  sim::TimeOptimalParameters p;
  p.batch = shape.k;
  p.stop_stale = shape.stop_stale;
  switch (shape.mode) {
    case sim::UpdateMode::kRennala:
      p.method = sim::TimeOptimalMethod::kRennala;
      return p;
    case sim::UpdateMode::kMalenia:
      p.method = sim::TimeOptimalMethod::kMalenia;
      return p;
    case sim::UpdateMode::kMindFlayer:
      p.method = sim::TimeOptimalMethod::kMindFlayer;
      p.cutoffs = shape.cutoffs;
      return p;
    case sim::UpdateMode::kRingmaster:
      p.method = sim::TimeOptimalMethod::kRingmaster;
      if (shape.max_delay) {
        p.max_delay = static_cast<int>(
            std::min<std::uint64_t>(*shape.max_delay, std::numeric_limits<int>::max()));
      }
      return p;
    case sim::UpdateMode::kRescaledAsync:
      p.method = sim::TimeOptimalMethod::kRingmaster;
      p.batch = 1;
      p.stop_stale = false;
      return p;
    case sim::UpdateMode::kKBatchSync:
    case sim::UpdateMode::kKAsync:
    case sim::UpdateMode::kKBatchAsync:
      return std::nullopt;
  }
  return std::nullopt;
}

/// Operations the renewal integral of Rennala and MindFlayer may take (about a second).
constexpr double kRenewalIntegralBudget = 1e9;

/// The renewal integral's cost (sim::renewal_collection_mean): a convolution of n workers' counts
/// truncated at B, O(n B²), at 61 points of each of its ~2n + 1 pieces, a few subdivisions each;
/// 0 when the prediction needs no integral (the other methods, exponential delays with
/// stop_stale).
double renewal_integral_cost(const sim::TimeOptimalParameters& p,
                             const sim::ShiftedExponentialWorkers& workers) {
  const bool batch_method = p.method == sim::TimeOptimalMethod::kRennala ||
                            p.method == sim::TimeOptimalMethod::kMindFlayer;
  const bool exponential =
      std::all_of(workers.shift.begin(), workers.shift.end(), [](double d) { return d == 0.0; });
  if (!batch_method || (exponential && p.stop_stale)) {
    return 0.0;
  }
  const auto n = static_cast<double>(workers.shift.size());
  const auto b = static_cast<double>(p.batch) + 1.0;
  return n * b * b * (2.0 * n + 1.0) * 61.0 * 4.0;
}

/// The time-optimal prediction under the plan's delay model: the fixed model (its times τ_iℓ_i)
/// or a shifted exponential; otherwise nullopt, or a problem (a renewal integral beyond the
/// budget) in `problem`.
std::optional<sim::TimeOptimalPrediction> predict_time_optimal_under(
    const sim::TimeOptimalParameters& parameters,
    const sim::DelayModel& delays,
    const std::string& rule,
    std::string* problem) {
  if (dynamic_cast<const sim::FixedDelay*>(&delays) != nullptr) {
    std::vector<double> tau(static_cast<std::size_t>(delays.workers()));
    for (int i = 0; i < delays.workers(); ++i) {
      tau[static_cast<std::size_t>(i)] = delays.mean(i);
    }
    return sim::predict_time_optimal(parameters, tau);
  }
  const auto workers =
      delays.time_varying() ? std::nullopt : sim::shifted_exponential_workers(delays);
  if (!workers) {
    return std::nullopt;
  }
  if (const double cost = renewal_integral_cost(parameters, *workers);
      cost > kRenewalIntegralBudget) {
    *problem = fmt::format(
        "rule '{}': the renewal integral over {} workers and B = {} would cost about {:.2g} "
        "operations: skipped above {:.2g}",
        rule,
        workers->shift.size(),
        parameters.batch,
        cost,
        kRenewalIntegralBudget);
    return std::nullopt;
  }
  return sim::predict_time_optimal(parameters, *workers);
}

/// The time-optimal methods (docs/theory.md "Time-optimal methods"): seconds per update under the
/// fixed model or a shifted exponential, as `time_per_update` (exact when lower = upper), and
/// `expected_iteration_time` when exact (an iteration is an update). nullopt for an update rule
/// the theory does not cover, which keeps its "no timing model" problem.
std::optional<nlohmann::json> time_optimal_predictions(const RunPlan& plan) {
  const auto shape = plan.scheme.rule->update_shape();
  const auto parameters = shape ? time_optimal_parameters(*shape) : std::nullopt;
  if (!parameters) {
    return std::nullopt;
  }
  nlohmann::json out;
  const std::string rule = plan.scheme.rule->name();
  if (!plan.network.is_free()) {
    out["iteration_time_problem"] = fmt::format(
        "no timing model for rule '{}' with a network (the time-optimal formulas assume free "
        "communication)",
        rule);
    return out;
  }
  const auto delays = plan.make_delays();
  std::string problem;
  const auto p = predict_time_optimal_under(*parameters, *delays, rule, &problem);
  if (!p) {
    out["iteration_time_problem"] =
        !problem.empty() ? problem
                         : fmt::format(
                               "no timing model for rule '{}' under the '{}' delay model "
                               "(docs/theory.md \"Time-optimal methods\" covers fixed "
                               "times and shifted exponentials)",
                               rule,
                               delays->name());
    return out;
  }
  if (!std::isfinite(p->lower)) {
    out["iteration_time_problem"] = fmt::format(
        "rule '{}': no worker's computation time is within its cut-off, so no update ever happens",
        rule);
    return out;
  }
  out["time_per_update"] = {
      {"lower", p->lower},
      {"upper", number_or_null(p->upper)},
      {"exact", p->exact()},
      {"paper_bound", p->paper_bound ? nlohmann::json(*p->paper_bound) : nlohmann::json()},
      {"formula", p->formula}};
  out["expected_iteration_time"] = p->exact() ? nlohmann::json(p->lower) : nlohmann::json();
  out["method"] = p->exact() ? "time-optimal theory (exact)" : "time-optimal theory (bounds)";
  out["time_optimal_note"] =
      "an iteration is an update: seconds per update in the long run (docs/theory.md "
      "\"Time-optimal methods\")";
  return out;
}

/// A plan whose scheme the iteration-time theory cannot describe (`why`): the time-optimal
/// prediction if the rule is one, else the problem; with the convergence keys where they apply.
nlohmann::json predictions_without_scheme(const RunPlan& plan,
                                          const std::string& why,
                                          bool convergence) {
  nlohmann::json out;
  if (auto timed = time_optimal_predictions(plan)) {
    out = std::move(*timed);
  } else {
    out["iteration_time_problem"] = why;
  }
  if (convergence && !plan.delay_only()) {
    out.update(convergence_predictions(plan, nullptr, nullptr));
  }
  return out;
}

}  // namespace

models::OptimumOptions optimum_options(const RunPlan& plan) {
  const auto& f = *plan.objective;
  models::OptimumOptions options;
  if (models::exact_solver_fits(f)) {
    return options;
  }
  // An iteration of the iterative solve: two data passes (conjugate gradient; L-BFGS mostly one)
  // and about 50 vector operations of length p (L-BFGS's two-loop recursion over 10 pairs).
  const double p = static_cast<double>(f.dimension());
  const double pass = std::visit([](const auto& a) { return static_cast<double>(a.nonZeros()); },
                                 f.data().features);
  const double run_cost = static_cast<double>(plan.iterations) * (pass + p * f.partitions());
  const double allowed = std::max(10.0 * run_cost, kTheoryWorkBudget);
  const double affordable = allowed / (2.0 * pass + 50.0 * p);
  options.max_iterations =
      static_cast<int>(std::min(affordable, static_cast<double>(options.max_iterations)));
  return options;
}

std::optional<std::string> optimum_cost_problem(const RunPlan& plan) {
  if (!plan.objective->loss().traits().convex) {
    return fmt::format(
        "no convergence bound applies: the {} objective is not convex (f*, the PL constant and "
        "the smoothness beta are undefined)",
        plan.objective->loss().name());
  }
  const int budget = optimum_options(plan).max_iterations;
  if (budget < kMinOptimumIterations) {
    return fmt::format(
        "f* not computed: {} iterations of the iterative solve over {} features would cost far "
        "more than the run",
        kMinOptimumIterations,
        plan.objective->dimension());
  }
  return std::nullopt;
}

std::optional<std::string> convergence_cost_problem(const RunPlan& plan) {
  try {
    (void)plan.objective->pl_constant();
  } catch (const std::invalid_argument& e) {  // the Gram matrix is too large to decompose
    return std::string(e.what());
  }
  return optimum_cost_problem(plan);
}

nlohmann::json predictions(const RunPlan& plan, bool convergence) {
  if (const auto* orders = plan.scheme.rule->partition_orders()) {
    return multi_message_predictions(plan, *orders, convergence);
  }
  nlohmann::json out;
  std::string why;
  const auto anytime = anytime_description(plan);
  const auto scheme = anytime ? anytime : sim::describe_scheme(plan.scheme, &why);
  if (!scheme) {
    return predictions_without_scheme(plan, why, convergence);
  }
  const auto delays = plan.make_delays();
  if (scheme->workers > kNumericalPredictionWorkers && !sim::has_closed_form(*scheme, *delays)) {
    // The numerical path evaluates an O(n) distribution at thousands of points.
    out["iteration_time_problem"] = fmt::format(
        "no closed form for this delay model and rule, and the numerical prediction costs O(n) "
        "per point: skipped above {} workers",
        kNumericalPredictionWorkers);
    return out;
  }
  if (plan.collective) {
    return collective_predictions(plan, *scheme, *delays, convergence, anytime.has_value());
  }
  sim::IterationTimePrediction p;
  try {
    p = predict_with_network(plan, *scheme, *delays);
  } catch (const sim::NumericalError& e) {  // delays too extreme for the quadrature
    out["iteration_time_problem"] = e.what();
    return out;
  }
  add_iteration_time(p, out);
  add_policy_prediction(plan, convergence, out);
  if (anytime) {
    add_anytime_note(plan, convergence, out);
    return out;
  }

  if (!convergence) {
    return out;
  }
  // The speedup table is the closed forms' without communication.
  if (auto rows = plan.network.is_free() ? speedup_rows(*scheme, *delays) : std::nullopt) {
    for (const auto& row : *rows) {
      if (row["workers"] == scheme->workers) {
        out["speedup_at_config_n"] = row;
      }
    }
    out["speedup_vs_n"] = std::move(*rows);
  }

  if (plan.delay_only()) {
    return out;
  }
  out.update(convergence_predictions(plan, &*scheme, &p));
  add_target(plan, out);
  return out;
}

}  // namespace stragglersim::experiments

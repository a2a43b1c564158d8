#include "experiments/scheme_advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "experiments/advice_tuning.h"
#include "experiments/config/config_error.h"
#include "experiments/config/json_reader.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/predictions.h"
#include "experiments/predict/simulation_budget.h"
#include "models/optimum.h"
#include "models/worker_pool.h"
#include "sim/asynchronous_cluster.h"
#include "sim/collectives/collective.h"
#include "sim/scheme.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/collective_theory.h"
#include "sim/theory/multi_message_theory.h"

namespace stragglersim::experiments {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Delay-only draws behind a simulated iteration time.
constexpr std::uint64_t kIterationDraws = 20000;
constexpr std::uint64_t kMeasureStream = 0x3ea5;
constexpr std::uint64_t kCoverageStream = 0xc0fe;

/// First t with gap[t] ≤ ε.
std::optional<double> first_below(const std::vector<double>& gap, double epsilon) {
  for (std::size_t t = 0; t < gap.size(); ++t) {
    if (gap[t] <= epsilon) {
      return static_cast<double>(t);
    }
  }
  return std::nullopt;
}

/// Whether the theory's iteration time is exact for the plan's delay: independent workers (the
/// integrals), or a table of replayed rows (a trace in cycle, bootstrap or block mode: the exact
/// average over its rows, which keeps the dependence within a row). A dependent model without
/// rows (a pool replayed in cycle over unequal counts) is simulated.
bool theory_applies_to(const RunPlan& plan) {
  const auto delays = plan.make_delays();
  return delays->independent_workers() || !delays->rows().empty();
}

/// The collective theory of a collective candidate (multi-message or described scheme); nullopt
/// where the scheme is not described.
std::optional<sim::CollectiveTimePrediction> collective_time(const RunPlan& plan) {
  const sim::CollectiveAggregation& collective = *plan.collective;
  const std::vector<double> offsets = sim::collectives::completion_offsets(
      *collective.schedule, collective.options, collective.bytes_per_element);
  const auto delays = plan.make_delays();
  if (const auto* orders = plan.scheme.rule->partition_orders()) {
    sim::MultiMessageTheoryOptions options;
    options.deadline = plan.scheme.rule->deadline();
    options.simulate = prediction_options(plan, kIterationDraws).simulate;
    return sim::predict_collective_multi_message_time(*orders, *delays, offsets, options);
  }
  std::string why;
  if (const auto scheme = sim::describe_scheme(plan.scheme, &why)) {
    return sim::predict_collective_time(
        *scheme, *delays, offsets, prediction_options(plan, kIterationDraws));
  }
  return std::nullopt;
}

/// A collective candidate's iteration time: the collective theory's E[T] where its form is exact
/// (or its fallback simulated), else a delay-only simulation of the run (the theory's bounds in
/// the method).
void predict_collective_iteration_time(const RunPlan& plan,
                                       bool theory_applies,
                                       SchemeCandidate& c) {
  const auto p = theory_applies ? collective_time(plan) : std::nullopt;
  if (p) {
    c.stop_time = p->stop.mean;
  }
  if (p && p->form != "bounds" && std::isfinite(p->mean)) {
    c.iteration_time = p->mean;
    c.iteration_time_method =
        p->form == "simulation"
            ? fmt::format("simulation ({} draws, s.e. {:.2g}; {})",
                          p->stop.draws,
                          p->standard_error,
                          p->stop.fallback_reason)
            : fmt::format("theory (collective {}; t*: {})", p->form, p->stop.method);
    return;
  }
  const nlohmann::json s = simulated_iteration_time(plan, kIterationDraws);
  c.iteration_time = s["expected_iteration_time"].get<double>();
  c.iteration_time_method = fmt::format(
      "simulation ({} draws, s.e. {:.2g}{})",
      s["draws"].get<std::uint64_t>(),
      s["iteration_time_se"].get<double>(),
      p ? fmt::format("; theory bounds [{:.4g}, {:.4g}]", p->lower, p->upper) : std::string());
}

/// Iteration time: theory where it models the scheme, else a delay-only simulation.
void predict_iteration_time(const RunPlan& plan, bool theory_applies, SchemeCandidate& c) {
  if (plan.collective) {
    predict_collective_iteration_time(plan, theory_applies, c);
    return;
  }
  std::string why;
  const auto* orders = plan.scheme.rule->partition_orders();
  const bool serial = plan.network.serial && !plan.network.is_free();
  if (theory_applies && orders != nullptr && !serial &&
      plan.stragglers == sim::StragglerPolicy::kCancel) {
    sim::MultiMessageTheoryOptions options;
    options.shift =
        plan.network.is_free() ? 0.0 : plan.network.latency + plan.network.transfer_time();
    options.deadline = plan.scheme.rule->deadline();
    options.simulate = prediction_options(plan, kIterationDraws).simulate;
    const auto delays = plan.make_delays();
    const sim::IterationTimePrediction p =
        sim::predict_multi_message_time(*orders, *delays, options);
    c.iteration_time = p.mean;
    c.iteration_time_method = p.method == "simulation"
                                  ? fmt::format("simulation ({} draws, s.e. {:.2g}; {})",
                                                p.draws,
                                                p.standard_error,
                                                p.fallback_reason)
                                  : "theory (" + p.method + ")";
    return;
  }
  if (theory_applies && !plan.network.is_free()) {
    // Parallel links shift every arrival by L + S/B (and a deadline with them): the theory
    // block's exact shift; a serial link leaves it null, simulated below.
    const nlohmann::json p = predictions(plan, false);
    if (p.contains("expected_iteration_time") && p["expected_iteration_time"].is_number()) {
      c.iteration_time = p["expected_iteration_time"].get<double>();
      c.iteration_time_method = "theory (" + p["method"].get<std::string>() + ")";
      return;
    }
  }
  if (theory_applies) {
    if (const auto scheme = sim::describe_scheme(plan.scheme, &why)) {
      const auto delays = plan.make_delays();
      const sim::IterationTimePrediction p =
          sim::predict_iteration_time(*scheme, *delays, prediction_options(plan, kIterationDraws));
      if (p.method == "simulation") {
        c.iteration_time = p.mean;
        c.iteration_time_method = fmt::format(
            "simulation ({} draws, s.e. {:.2g}; {})", p.draws, p.standard_error, p.fallback_reason);
        return;
      }
      if (std::isfinite(p.mean)) {
        c.iteration_time = p.mean;
        c.iteration_time_method = "theory (" + p.method + ")";
        return;
      }
    }
  }
  const nlohmann::json s = simulated_iteration_time(plan, kIterationDraws);
  c.iteration_time = s["expected_iteration_time"].get<double>();
  c.iteration_time_method = fmt::format("simulation ({} draws, s.e. {:.2g})",
                                        s["draws"].get<std::uint64_t>(),
                                        s["iteration_time_se"].get<double>());
}

/// The first row within ε of `repetitions` seeded training runs (delay seeds from the advice
/// stream): the runs that reached it, and the sums of their iteration and time there.
struct RunsToTarget {
  int reached = 0;
  double iterations = 0.0;  ///< Σ first iteration within ε
  double time = 0.0;        ///< Σ simulated time there
  double time_sq = 0.0;     ///< Σ its square
  /// The standard error of the mean time over the reached runs.
  [[nodiscard]] double time_se() const {
    const auto n = static_cast<double>(reached);
    const double mean = n > 0.0 ? time / n : 0.0;
    return n > 1.0 ? std::sqrt(std::max(0.0, (time_sq - n * mean * mean) / (n - 1.0) / n)) : 0.0;
  }
};

/// How the simulated runs of one estimate are drawn: the delay-seed stream, and whether a run
/// that stops on a non-finite loss counts as not reaching the target (tuning) or is an error.
struct RunStream {
  std::uint64_t stream = kAdviceStream;
  bool divergence_not_reached = false;
  /// The tuning's best time so far: the runs stop once their mean time to target is sure to be
  /// above it (+∞: never).
  double prune_above = kInf;
  /// An estimate T · E[Z] (its lower bound counts iterations), not a time simulated directly.
  bool per_iteration = false;
  double iteration_time = 0.0;  ///< E[Z] of an estimate T · E[Z]
};

/// Thrown from a run's row callback when the estimate is sure to exceed RunStream::prune_above.
struct RunsPruned {};

/// A lower bound of the estimate (the mean over `repetitions` runs of the time to target) when
/// the runs so far sum to `sums` and the current run is at `row` without having reached the
/// target: its hit comes at that row or later, and the runs to come add no less than 0.
double estimate_lower_bound(const RunStream& runs,
                            const RunsToTarget& sums,
                            const sim::TraceRow& row,
                            int repetitions) {
  const auto n = static_cast<double>(repetitions);
  // The same operations, in the same order, as the estimate's own (sums only grow).
  return runs.per_iteration
             ? (sums.iterations + static_cast<double>(row.iteration)) / n * runs.iteration_time
             : (sums.time + row.time) / n;
}

/// A pruned estimate's method suffix (a tuning point that cannot be chosen; never reported).
const std::string kPrunedMethod = ": pruned, above the best point so far";

/// The runs of one estimate; `pruned` is set when they stopped early (RunStream::prune_above).
RunsToTarget runs_to_target(const RunPlan& plan,
                            double f_star,
                            double epsilon,
                            int repetitions,
                            const RunStream& runs,
                            bool* pruned = nullptr) {
  const std::uint64_t seed = derive_seed(plan.seed, runs.stream);
  const bool pruning = std::isfinite(runs.prune_above);
  RunsToTarget out;
  for (int rep = 0; rep < repetitions; ++rep) {
    std::optional<sim::TraceRow> hit;
    try {
      simulate_training(
          plan, derive_seed(seed, static_cast<std::uint64_t>(rep)), [&](const sim::TraceRow& row) {
            if (!hit && row.loss - f_star <= epsilon) {
              hit = row;
            }
            if (pruning && !hit &&
                estimate_lower_bound(runs, out, row, repetitions) > runs.prune_above) {
              throw RunsPruned{};
            }
          });
    } catch (const sim::NumericalError&) {
      if (!runs.divergence_not_reached) {
        throw;
      }
      hit.reset();  // a diverging run does not reach the target
    } catch (const RunsPruned&) {
      hit.reset();
      *pruned = true;
      return out;
    }
    if (hit) {
      ++out.reached;
      out.iterations += static_cast<double>(hit->iteration);
      out.time += hit->time;
      out.time_sq += hit->time * hit->time;
    } else if (pruning) {
      *pruned = true;  // one run short of the target: the estimate is not reached
      return out;
    }
  }
  return out;
}

/// Iterations to ε: the exact least-squares curve where it applies, else simulated runs.
void predict_iterations(const RunPlan& plan,
                        bool theory_applies,
                        double f_star,
                        double epsilon,
                        int repetitions,
                        const RunStream& stream,
                        SchemeCandidate& c) {
  std::string why;
  if (theory_applies && plan.objective->loss().name() == "least_squares") {
    if (const auto scheme = sim::describe_scheme(plan.scheme, &why)) {
      const auto delays = plan.make_delays();
      const sim::IterationTimePrediction timing =
          sim::predict_iteration_time(*scheme, *delays, prediction_options(plan, kIterationDraws));
      const nlohmann::json p = convergence_predictions(plan, &*scheme, &timing);
      // Only for exact schemes (α = 1): their gap is deterministic, so the curve's crossing is
      // every run's first iteration at the target. For approximate schemes the curve is E[gap],
      // whose crossing is not the mean time to reach ε (18 s predicted against 27 s measured
      // for ignore-stragglers r=12 in the README example): those are simulated.
      const bool exact_scheme = p.contains("coefficient_moments") &&
                                p["coefficient_moments"]["method"] == "exact scheme (alpha = 1)";
      if (exact_scheme && p.contains("exact_curve") && p["exact_curve"].is_array()) {
        c.iterations = first_below(p["exact_curve"].get<std::vector<double>>(), epsilon);
        c.iterations_method = "theory (exact least-squares curve)";
        return;
      }
    }
  }
  // The mean of each run's first iteration at the target, not the first crossing of the mean
  // gap: near a noise floor a few excursions hold the mean gap above ε long after most runs
  // got there, and the time to target is a sum of iteration times up to each run's own hit.
  bool pruned = false;
  const RunsToTarget runs = runs_to_target(plan, f_star, epsilon, repetitions, stream, &pruned);
  c.iterations_method =
      fmt::format("simulation (mean first iteration at target of {} runs)", repetitions);
  if (pruned) {
    c.iterations_method += kPrunedMethod;
  } else if (runs.reached == repetitions) {
    c.iterations = runs.iterations / repetitions;
  } else {
    c.iterations_method += fmt::format(": {} reached", runs.reached);
  }
}

/// A time to ε simulated directly from `repetitions` runs that all reached it: the means of their
/// iterations and times there, the time's standard error, the iteration time their ratio.
void set_time_at_target(const RunsToTarget& runs, int repetitions, SchemeCandidate& c) {
  const auto n = static_cast<double>(repetitions);
  c.iterations = runs.iterations / n;
  c.total = runs.time / n;
  c.total_se = runs.time_se();
  c.total_method += fmt::format(", s.e. {:.2g})", c.total_se);
  c.iteration_time = *c.iterations > 0.0 ? c.total / *c.iterations : 0.0;
  c.iteration_time_method = "simulation (mean time at target / mean iterations at target)";
}

/// A baseline's time to ε simulated directly: over `repetitions` training runs, the mean of each
/// run's simulated time (and iteration) at its first row within ε; its iteration time is the
/// mean time over the mean iterations.
void simulate_time_to_target(const RunPlan& plan,
                             double f_star,
                             double epsilon,
                             int repetitions,
                             const RunStream& stream,
                             SchemeCandidate& c) {
  bool pruned = false;
  const RunsToTarget runs = runs_to_target(plan, f_star, epsilon, repetitions, stream, &pruned);
  c.iterations_method =
      fmt::format("simulation (mean first iteration at target of {} runs)", repetitions);
  c.total_method = fmt::format("simulation (mean time at target of {} runs", repetitions);
  if (pruned) {
    c.iterations_method += kPrunedMethod;
    c.total_method += kPrunedMethod + ")";
    c.iteration_time_method = "not measured (pruned)";
    c.total = kInf;
    return;
  }
  if (runs.reached < repetitions) {
    c.iterations_method += fmt::format(": {} reached", runs.reached);
    c.total_method += fmt::format(": {} reached)", runs.reached);
    c.iteration_time_method = "not measured (the target was not reached in every run)";
    c.total = kInf;
    return;
  }
  set_time_at_target(runs, repetitions, c);
}

/// Whether `plan` is Malenia's update rule, whose updates under gradient descent are uncoded's
/// (`full`, evaluated at the same step, every run at the same integral iteration): each update
/// waits until every worker has b_i ≥ 1 gradients at the current x and weighs each by 1/b_i; on
/// its own partition, at one x, a worker's gradients are one gradient, so the update is the
/// full gradient, as uncoded's is, and the iterates agree to rounding. The conditions of
/// shares_full_gradient_iterations (gradient descent, not least squares) hold too.
bool shares_full_gradient_updates(const RunPlan& plan, const SchemeCandidate* full) {
  if (full == nullptr || !full->problem.empty() || !plan.update ||
      plan.update->mode != sim::UpdateMode::kMalenia || plan.optimizer != OptimizerKind::kGd ||
      plan.objective->loss().name() == "least_squares") {
    return false;
  }
  return !full->iterations || *full->iterations == std::round(*full->iterations);
}

/// Malenia's time to ε from its clock alone (shares_full_gradient_updates): in each of the
/// `repetitions` runs (the seeds of runs_to_target) the time of its T-th update, T uncoded's
/// iterations to ε; the iterates, hence T, do not depend on the delays.
void clock_time_to_target(const RunPlan& plan,
                          const SchemeCandidate& full,
                          int repetitions,
                          const RunStream& stream,
                          SchemeCandidate& c) {
  c.iterations_method = "as uncoded (every update is the full gradient at the current x)";
  c.total_method = fmt::format(
      "simulation of its clock (mean time of update T, T uncoded's iterations, of {} runs",
      repetitions);
  if (!full.iterations) {
    c.total_method += ": not reached)";
    c.iteration_time_method = "not measured (the target was not reached in every run)";
    c.total = kInf;
    return;
  }
  const auto updates = static_cast<std::uint64_t>(*full.iterations);
  const std::uint64_t seed = derive_seed(plan.seed, stream.stream);
  RunsToTarget runs;
  for (int rep = 0; rep < repetitions; ++rep) {
    sim::AsynchronousCluster cluster(plan.make_delays(),
                                     *plan.update,
                                     derive_seed(seed, static_cast<std::uint64_t>(rep)),
                                     plan.network);
    double time = 0.0;
    for (std::uint64_t t = 1; t <= updates; ++t) {
      time = cluster.next_update().time;
    }
    ++runs.reached;
    runs.iterations += static_cast<double>(updates);
    runs.time += time;
    runs.time_sq += time * time;
  }
  set_time_at_target(runs, repetitions, c);
}

void measure(const RunPlan& plan, int runs, double target_loss, SchemeCandidate& c) {
  const std::vector<double> times =
      measure_time_to_target(plan, runs, derive_seed(plan.seed, kMeasureStream), target_loss);
  c.measured_runs = runs;
  double sum = 0.0;
  double sum_sq = 0.0;
  for (const double t : times) {
    if (std::isfinite(t)) {
      ++c.measured_reached;
      sum += t;
      sum_sq += t * t;
    }
  }
  if (c.measured_reached < runs) {
    c.measured_mean = kInf;
    c.measured_se = 0.0;
    return;
  }
  const double n = runs;
  c.measured_mean = sum / n;
  c.measured_se = n > 1
                      ? std::sqrt(std::max(
                            0.0, (sum_sq - n * c.measured_mean * c.measured_mean) / (n - 1.0) / n))
                      : 0.0;
}

/// Whether `plan`'s iterations to ε are uncoded's (`full`, evaluated): under gradient descent a
/// `decodable` rule updates with the exact full gradient every iteration, as uncoded does, so the
/// iterates agree to rounding (and neither reaches the target when uncoded does not). Taken for
/// linear-algebra codes only, whose simulated training pays a factorisation per iteration
/// (simulation_budget.h), and not for least squares (its exact curve); the other exact schemes are
/// simulated.
bool shares_full_gradient_iterations(const RunPlan& plan, const SchemeCandidate* full) {
  const auto shape = plan.scheme.rule->shape();
  // Least squares has the exact curve of predict_iterations (theory, no runs) instead.
  return full != nullptr && full->problem.empty() && plan.optimizer == OptimizerKind::kGd &&
         plan.objective->loss().name() != "least_squares" && shape &&
         shape->kind == sim::RuleKind::kDecodable &&
         simulation_cost(plan, 1).operations_per_decode > 0.0;
}

/// Plans, predicts and (optionally) measures one candidate, with the predicted delay; `full` is
/// the evaluated uncoded candidate at the same step (null before it is evaluated; when tuned,
/// uncoded's tuning estimate at the candidate's chosen step).
void evaluate(const std::string& file,
              const std::filesystem::path& base_dir,
              const Advice& advice,
              const AdviceOptions& options,
              SchemeCandidate& c,
              const SchemeCandidate* full = nullptr) {
  const auto plan = estimate_candidate(
      advice, file, base_dir, options.repetitions, kAdviceStream, advice.tuned, c, nullptr, full);
  if (!plan) {
    return;
  }
  if (plan->update && plan->update->mode == sim::UpdateMode::kMalenia) {
    // Every update waits for a gradient of every worker: each partition is in every update, as
    // check_coverage would count (at the cost of every gradient of 2 000 updates).
    c.least_covered_partition = 0;
    c.least_covered_fraction = 1.0;
  } else {
    check_coverage(*plan, c);
  }
  if (options.measure > 0) {
    measure(*plan, options.measure, advice.target_loss, c);
  }
}

/// f*, f(x₀) − f*, the target loss and ε of the base config.
void set_target(const RunPlan& base,
                const nlohmann::json& config,
                const AdviceOptions& options,
                const std::string& file,
                Advice& advice) {
  if (base.delay_only()) {
    throw ConfigError(
        fmt::format("{}:/data: advise needs data; got null; expected a data block", file));
  }
  const auto& f = *base.objective;
  const models::Optimum opt = models::solve_optimum(f, optimum_options(base));
  if (!opt.converged) {
    throw sim::NumericalError("advise: f* not computed: " + opt.failure);
  }
  advice.f_star = opt.value;
  advice.initial_gap = f.value(Eigen::VectorXd::Zero(f.dimension())) - advice.f_star;
  if (options.suboptimality) {
    advice.target_gap = *options.suboptimality * advice.initial_gap;
    advice.target_loss = advice.f_star + advice.target_gap;
  } else if (base.target_loss) {
    advice.target_loss = *base.target_loss;
    advice.target_gap = advice.target_loss - advice.f_star;
    if (advice.target_gap <= 0.0) {
      throw ConfigError(fmt::format(
          "{}:/target_loss: below the optimum, no run reaches it; got {}; expected more than f* "
          "= {}",
          file,
          config["target_loss"].dump(),
          advice.f_star));
    }
  } else {
    throw ConfigError(fmt::format(
        "{}:/target_loss: advise needs a target; got no target_loss; expected a target_loss in "
        "the config or --suboptimality",
        file));
  }
}

/// The workers whose messages each iteration (or update, for an update rule) of the plan's clock
/// uses, one call per iteration.
std::function<std::vector<int>()> heard_sets(const RunPlan& plan, std::uint64_t seed) {
  if (plan.update) {
    auto cluster = std::make_shared<sim::AsynchronousCluster>(
        plan.make_delays(), *plan.update, seed, plan.network);
    return [cluster] {
      std::vector<int> used;
      for (const auto& g : cluster->next_update().used) {
        used.push_back(g.worker);
      }
      return used;
    };
  }
  std::shared_ptr<sim::SimulatedCluster> cluster = plan.make_cluster(seed);
  return [cluster] { return cluster->next_iteration().heard; };
}

}  // namespace

void check_coverage(const RunPlan& plan, SchemeCandidate& c) {
  const codes::GradientCode& code = *plan.scheme.code;
  const auto next_heard = heard_sets(plan, derive_seed(plan.seed, kCoverageStream));
  const auto k = static_cast<std::size_t>(code.partitions());
  std::vector<std::uint64_t> covered(k, 0);
  std::vector<std::uint64_t> last(k, 0);  // the last iteration counted for each partition
  for (std::uint64_t t = 1; t <= kCoverageDraws; ++t) {
    for (const int w : next_heard()) {
      for (const int j : code.support(w)) {
        const auto u = static_cast<std::size_t>(j);
        if (last[u] != t) {
          last[u] = t;
          ++covered[u];
        }
      }
    }
  }
  const auto least = std::min_element(covered.begin(), covered.end());
  c.least_covered_partition = static_cast<int>(least - covered.begin());
  c.least_covered_fraction = static_cast<double>(*least) / static_cast<double>(kCoverageDraws);
  // An update rule applies a few gradients per update: even unbiased, each partition is in
  // about K/n of the updates (1/n for one gradient per update). Its partitions are held to a
  // tenth of their mean share; a synchronous rule's to a tenth of every iteration.
  double mean_share = 0.0;
  for (const std::uint64_t count : covered) {
    mean_share += static_cast<double>(count);
  }
  mean_share /= static_cast<double>(k) * static_cast<double>(kCoverageDraws);
  const bool per_update = plan.update.has_value();
  if (c.least_covered_fraction < (per_update ? kBiasedCoverage * mean_share : kBiasedCoverage)) {
    std::string holders;
    for (int w = 0; w < code.workers(); ++w) {
      const auto s = code.support(w);
      if (std::find(s.begin(), s.end(), c.least_covered_partition) != s.end()) {
        holders += (holders.empty() ? "" : ", ") + std::to_string(w);
      }
    }
    const std::string who = holders.empty() ? "held by no worker" : "workers " + holders;
    c.caveat =
        per_update
            ? fmt::format(
                  "partition {} ({}) is in {:.1f}% of updates under the predicted delay, under a "
                  "tenth of the {:.1f}% a partition is in on average: the updates all but never "
                  "contain its data",
                  c.least_covered_partition,
                  who,
                  100.0 * c.least_covered_fraction,
                  100.0 * mean_share)
            : fmt::format(
                  "partition {} ({}) is covered in {:.1f}% of iterations under the predicted "
                  "delay: the gradient all but never contains its data",
                  c.least_covered_partition,
                  who,
                  100.0 * c.least_covered_fraction);
  }
}

namespace {

/// The start of a ranking: the config, the predicted delay and the horizon in `advice`; returns
/// the config planned with the predicted delay.
RunPlan start_advice(const nlohmann::json& config,
                     const std::string& file,
                     const std::filesystem::path& base_dir,
                     const AdviceOptions& options,
                     Advice& advice) {
  (void)JsonReader(config, file, "");  // a config that is not an object: "<file>:/: wrong type"
  advice.config = config;
  advice.predicted_delay =
      options.predicted_delay ? *options.predicted_delay : config.value("delay", nlohmann::json());
  nlohmann::json predicted = config;
  predicted["delay"] = advice.predicted_delay;
  advice.setup = std::make_shared<SetupCache>();
  PlanOptions plan_options;
  plan_options.setup = advice.setup.get();
  RunPlan base = plan_run(predicted, file, base_dir, plan_options);
  advice.horizon = base.iterations;
  return base;
}

/// Runs `estimate` on every candidate of `candidates` on `pool`, with the outcome of a loop over
/// them in their order: each task writes only its own candidate, a task whose candidate comes
/// after one that failed is skipped (the loop would not have reached it), and the earliest
/// failure is rethrown once every task has returned.
void estimate_each(models::WorkerPool& pool,
                   std::span<SchemeCandidate> candidates,
                   const std::function<void(SchemeCandidate&)>& estimate) {
  const std::size_t count = candidates.size();
  std::vector<std::exception_ptr> failures(count);  // each task writes its own
  std::mutex mutex;
  std::size_t first_failure = count;
  models::run_tasks(&pool, static_cast<int>(count), [&](int task) {
    const auto i = static_cast<std::size_t>(task);
    if (const std::lock_guard lock(mutex); first_failure < i) {
      return;
    }
    try {
      estimate(candidates[i]);
    } catch (...) {
      failures[i] = std::current_exception();
      const std::lock_guard lock(mutex);
      first_failure = std::min(first_failure, i);
    }
  });
  for (const auto& failure : failures) {
    if (failure) {
      std::rethrow_exception(failure);
    }
  }
}

/// One candidate's work in advise: tuned (unless --fixed-step), then evaluated.
struct Estimate {
  const std::string& file;
  const std::filesystem::path& base_dir;
  const Advice& advice;
  const AdviceOptions& options;
  AdviceTuner& tuner;
  /// `full`: uncoded under --fixed-step (tuned: its tuning estimate at c's chosen step).
  void operator()(SchemeCandidate& c, const SchemeCandidate* full) const {
    if (advice.tuned) {
      tuner.tune(c);
    }
    evaluate(file, base_dir, advice, options, c, advice.tuned ? tuner.full_gradient_at(c) : full);
  }
};

/// The listed candidates, estimated as a loop in their order would: those before uncoded, then
/// uncoded alone, then the rest, which take its iterations (the exact decodes and Malenia at the
/// same step: its tuning estimates, or under --fixed-step its estimate). Within each group the
/// candidates are independent, and run on the pool.
void estimate_listed(const Estimate& estimate,
                     models::WorkerPool& pool,
                     std::vector<SchemeCandidate>& candidates) {
  const auto uncoded = std::find_if(
      candidates.begin(), candidates.end(), [](const auto& c) { return c.label == "uncoded"; });
  const auto before = static_cast<std::size_t>(uncoded - candidates.begin());
  const std::span<SchemeCandidate> all(candidates);
  estimate_each(pool, all.first(before), [&](SchemeCandidate& c) { estimate(c, nullptr); });
  if (uncoded == candidates.end()) {
    return;
  }
  estimate(*uncoded, nullptr);
  const SchemeCandidate* full = uncoded->problem.empty() ? &*uncoded : nullptr;
  estimate_each(pool, all.subspan(before + 1), [&](SchemeCandidate& c) { estimate(c, full); });
}

}  // namespace

Advice advise(const nlohmann::json& config,
              const std::string& file,
              const std::filesystem::path& base_dir,
              const AdviceOptions& options) {
  Advice advice;
  const RunPlan base = start_advice(config, file, base_dir, options, advice);
  if (options.predicted_delay) {
    (void)plan_run(config, file, base_dir);  // the config's own delay must plan too
  }
  set_target(base, config, options, file, advice);
  // A collective config: the parameter-server candidates on its links, beside the candidates
  // over its collective.
  const nlohmann::json aggregation = base.collective ? config["aggregation"] : nlohmann::json();
  std::vector<SchemeCandidate> candidates = scheme_candidates(base.workers, 0.0);
  for (auto& c : proportional_candidates(base.workers, advice.predicted_delay)) {
    candidates.push_back(std::move(c));
  }
  if (base.collective) {
    for (auto& c : candidates) {
      on_parameter_server(c, aggregation);
    }
    for (auto& c : collective_candidates(aggregation, base.workers, 0.0, advice.predicted_delay)) {
      candidates.push_back(std::move(c));
    }
  }
  advice.tuned = !options.fixed_step;
  advice.base_step = advice.tuned ? base.step : 0.0;
  AdviceTuner tuner(advice, file, base_dir, options, base.workers);
  if (advice.tuned) {
    tuner.prepare(candidates, aggregation);
  }
  models::WorkerPool pool(std::max(1, options.threads));
  const Estimate estimate{file, base_dir, advice, options, tuner};
  estimate_listed(estimate, pool, candidates);
  std::vector<SchemeCandidate> extras =
      deadline_candidates(candidates, base.workers, aggregation, advice.predicted_delay);
  // Tuned, at uncoded's tuning estimates; --fixed-step, without uncoded's iterations.
  estimate_each(pool, extras, [&](SchemeCandidate& c) { estimate(c, nullptr); });
  for (auto& c : extras) {
    candidates.push_back(std::move(c));
  }
  for (auto& c : candidates) {
    relabel_tuned(c);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.total < b.total;
  });
  advice.ranked = std::move(candidates);
  return advice;
}

Advice advise_candidates(const nlohmann::json& config,
                         const std::string& file,
                         const std::filesystem::path& base_dir,
                         const AdviceOptions& options,
                         std::vector<SchemeCandidate> candidates) {
  Advice advice;
  const RunPlan base = start_advice(config, file, base_dir, options, advice);
  set_target(base, config, options, file, advice);
  // Each block as given (a tuned step in its optimizer block included); a run that diverges
  // does not reach the target. Each candidate's estimate is one task with its own seeds, so the
  // thread count changes no number.
  models::WorkerPool pool(std::max(1, options.threads));
  estimate_each(pool, candidates, [&](SchemeCandidate& c) {
    (void)estimate_candidate(
        advice, file, base_dir, options.repetitions, kAdviceStream, true, c, nullptr);
  });
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.total < b.total;
  });
  advice.ranked = std::move(candidates);
  return advice;
}

std::optional<RunPlan> estimate_candidate(const Advice& advice,
                                          const std::string& file,
                                          const std::filesystem::path& base_dir,
                                          int repetitions,
                                          std::uint64_t stream,
                                          bool divergence_not_reached,
                                          SchemeCandidate& c,
                                          IterationTimeCache* cache,
                                          const SchemeCandidate* full,
                                          double prune_above) {
  nlohmann::json predicted = advice.config;
  predicted["delay"] = advice.predicted_delay;
  const SchemeCandidate fresh;  // a candidate estimated again starts from no estimate
  c.problem.clear();
  c.iterations.reset();
  c.total = fresh.total;
  c.total_se = fresh.total_se;
  c.total_method = fresh.total_method;
  RunPlan plan;
  try {
    PlanOptions plan_options;
    plan_options.setup = advice.setup.get();
    plan = plan_run(apply_candidate(predicted, c), file, base_dir, plan_options);
  } catch (const ConfigError& e) {
    c.problem = e.what();
    c.total = kInf;
    return std::nullopt;
  }
  RunStream runs{stream, divergence_not_reached, prune_above, false, 0.0};
  if (c.simulated_directly() && shares_full_gradient_updates(plan, full)) {
    clock_time_to_target(plan, *full, repetitions, runs, c);
  } else if (c.simulated_directly()) {
    simulate_time_to_target(plan, advice.f_star, advice.target_gap, repetitions, runs, c);
  } else {
    const bool theory_applies = theory_applies_to(plan);
    nlohmann::json unstepped = c.block;
    unstepped.erase("optimizer");
    const std::string key = cache != nullptr ? unstepped.dump() : std::string();
    if (const auto hit = cache != nullptr ? cache->find(key) : IterationTimeCache::iterator();
        cache != nullptr && hit != cache->end()) {
      c.iteration_time = hit->second.iteration_time;
      c.iteration_time_method = hit->second.method;
      c.stop_time = hit->second.stop_time;
    } else {
      predict_iteration_time(plan, theory_applies, c);
      if (cache != nullptr) {
        (*cache)[key] = {c.iteration_time, c.iteration_time_method, c.stop_time};
      }
    }
    if (shares_full_gradient_iterations(plan, full)) {
      c.iterations = full->iterations;
      c.iterations_method = "as uncoded (an exact decode updates with the full gradient)";
    } else {
      runs.per_iteration = true;
      runs.iteration_time = c.iteration_time;
      predict_iterations(
          plan, theory_applies, advice.f_star, advice.target_gap, repetitions, runs, c);
    }
    c.total = c.iterations ? *c.iterations * c.iteration_time : kInf;
  }
  return plan;
}

std::vector<double> measure_time_to_target(const RunPlan& plan,
                                           int runs,
                                           std::uint64_t seed,
                                           double target_loss) {
  std::vector<double> out;
  for (int rep = 0; rep < runs; ++rep) {
    double reached = kInf;
    simulate_training(
        plan, derive_seed(seed, static_cast<std::uint64_t>(rep)), [&](const sim::TraceRow& row) {
          if (row.loss <= target_loss && !std::isfinite(reached)) {
            reached = row.time;
          }
        });
    out.push_back(reached);
  }
  return out;
}

nlohmann::json advice_json(const Advice& advice) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : advice.ranked) {
    nlohmann::json row = {{"scheme", c.label}, {"block", c.block}};
    if (!c.aggregation.empty()) {
      row["aggregation"] = c.aggregation;
    }
    if (!c.problem.empty()) {
      row["problem"] = c.problem;
      rows.push_back(row);
      continue;
    }
    row["iteration_time"] =
        c.has_iteration_time() ? nlohmann::json(c.iteration_time) : nlohmann::json();
    row["iteration_time_method"] = c.iteration_time_method;
    row["iterations_to_target"] = c.iterations ? nlohmann::json(*c.iterations) : nlohmann::json();
    row["iterations_method"] = c.iterations_method;
    row["time_to_target"] = std::isfinite(c.total) ? nlohmann::json(c.total) : nlohmann::json();
    row["time_to_target_method"] = c.total_method;
    if (c.simulated_directly()) {
      row["time_to_target_se"] = c.total_se;
    }
    row["least_covered_partition"] = c.least_covered_partition;
    row["least_covered_fraction"] = c.least_covered_fraction;
    row["caveat"] = c.caveat.empty() ? nlohmann::json() : nlohmann::json(c.caveat);
    if (c.tuning) {
      row["tuning"] = tuning_json(*c.tuning);
    }
    if (c.measured_runs > 0) {
      row["measured_runs"] = c.measured_runs;
      row["measured_reached"] = c.measured_reached;
      row["measured_time_to_target"] =
          std::isfinite(c.measured_mean) ? nlohmann::json(c.measured_mean) : nlohmann::json();
      row["measured_se"] = c.measured_se;
    }
    rows.push_back(row);
  }
  nlohmann::json out = {{"predicted_delay", advice.predicted_delay},
                        {"f_star", advice.f_star},
                        {"initial_gap", advice.initial_gap},
                        {"target_loss", advice.target_loss},
                        {"target_gap", advice.target_gap},
                        {"horizon", advice.horizon},
                        {"schemes", rows}};
  if (advice.tuned) {
    out["tuning"] = {{"base_step", advice.base_step},
                     {"step_multipliers", kStepMultipliers},
                     {"count_fractions", kCountFractions},
                     {"window_multipliers", kWindowMultipliers}};
  }
  if (!advice.ranked.empty() && std::isfinite(advice.ranked.front().total)) {
    out["recommended"] = advice.ranked.front().label;
    out["recommended_config"] = apply_candidate(advice.config, advice.ranked.front());
    // The target the ranking was for (the config's, or the one --suboptimality set).
    out["recommended_config"]["target_loss"] = advice.target_loss;
  } else {
    out["recommended"] = nullptr;
    out["recommended_config"] = nullptr;
  }
  return out;
}

}  // namespace stragglersim::experiments

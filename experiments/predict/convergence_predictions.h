#pragma once
// The convergence side of `theory` (docs/convergence.md): the coded PL bound for every scheme the
// runner accepts (or null with the reason), the exact expected-gap curve for least squares, and
// a simulated iteration time for the finish and drain straggler policies.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "experiments/config/run_plan.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {

/// Keys: bound (array or null), bound_problem, noise_floor, contraction, bound_vacuous,
/// mean_coefficient, minimiser_shift, coefficient_moments {method, mean, variance, bias},
/// exact_curve (array or null), exact_curve_problem, exact_curve_sd (sd of f(x_t) across runs,
/// possibly fewer entries), exact_curve_sd_problem; and smoothness, pl_constant, f_star,
/// f_star_method, zeta_star_squared, group_smoothness_squared, initial_gap, step.
/// `scheme` and `timing` are the plan's scheme description and prediction, when it has one.
nlohmann::json convergence_predictions(const RunPlan& plan,
                                       const sim::SchemeDescription* scheme,
                                       const sim::IterationTimePrediction* timing);

/// Monte Carlo iteration time of the plan's delay model, rule and straggler policy on the
/// delay-only path: {method: "simulation", expected_iteration_time, iteration_time_se,
/// iteration_time_sd, expected_wall_time, group_erasure_probability (erased fraction; null
/// without groups), q2 (null), draws, draws_asked}: `draws` is the draws run, fewer than `asked`
/// when the decodes would pass the budget of simulation_budget.h.
nlohmann::json simulated_iteration_time(const RunPlan& plan, std::uint64_t asked);

/// simulated_iteration_time(plan, draws) as the fallback of sim::predict_iteration_time (`plan`
/// must outlive the returned function).
sim::IterationTimeSimulation iteration_time_simulation(const RunPlan& plan, std::uint64_t draws);

/// Prediction options whose fallback is iteration_time_simulation(plan, draws).
sim::PredictionOptions prediction_options(const RunPlan& plan, std::uint64_t draws);

/// One simulated training run of the plan (fixed data and code) with the delay seed `delay_seed`
/// (an update rule's plan on the asynchronous loop, a row per update); `on_row` sees every trace
/// row. Throws sim::NumericalError as sim::train does.
void simulate_training(const RunPlan& plan,
                       std::uint64_t delay_seed,
                       const std::function<void(const sim::TraceRow&)>& on_row);

/// Mean and standard error of f(x_t) − f* at each t over repeated simulated runs of the plan
/// (fixed data and code; run i uses the delay seed derive_seed(seed, i)), and the runs' sample
/// standard deviation with its standard error: the larger of the delta method √((μ̂₄ − s⁴)/n)/(2s)
/// and a bootstrap over the runs (400 resamples from a stream derived from `seed` and t).
struct MeasuredGap {
  std::vector<double> mean;
  std::vector<double> se;
  std::vector<double> sd;
  std::vector<double> sd_se;
  std::vector<std::vector<double>> runs;  ///< runs[t][run]: f(x_t) − f* of every run
};
MeasuredGap measure_gap(const RunPlan& plan, int repetitions, std::uint64_t seed, double f_star);

}  // namespace stragglersim::experiments

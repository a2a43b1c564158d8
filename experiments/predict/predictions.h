#pragma once
// What theory predicts for a planned run (docs/model.md §6): the iteration time of its scheme, the
// group-erasure probabilities, and, for runs with data, the PL convergence bound and the time to
// a target loss. Used by `stragglersim theory` and recorded in summary.json.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "experiments/config/run_plan.h"
#include "models/optimum.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::experiments {

/// Group sizes for the ζ² of the bound: FRC groups of d partitions, one partition per group
/// otherwise.
int group_size(const RunPlan& plan);

/// Iterations of the exact-gradient path (ζ²) and of the per-iteration bound that `theory`
/// computes at most: beyond, its cost would grow with a run's length.
inline constexpr std::uint64_t kMaxTheoryIterations = 10'000;
/// Work (data passes × entries) the f* solve may always take, whatever the run's own cost.
inline constexpr double kTheoryWorkBudget = 1e11;

struct ConvergenceInputs {
  double smoothness = 0.0;    ///< β
  double pl_constant = 0.0;   ///< μ
  double f_star = 0.0;        ///< f* from models::solve_optimum
  double initial_gap = 0.0;   ///< f(x₀) − f*
  double zeta_squared = 0.0;  ///< max over the exact-gradient GD path of Σ_g ‖∇F_g‖²
  std::string optimum_method;
};

/// β, μ, f* and ζ² of a plan with data; nullopt (with `why`) when μ is unknown (logistic without
/// λ₂). ζ² here is the largest value along the exact-gradient path, a surrogate that the
/// printed bound no longer uses (convergence_predictions.h derives its own constants).
std::optional<ConvergenceInputs> convergence_inputs(const RunPlan& plan, std::string* why);

/// The predictions as JSON: expected_iteration_time, iteration_time_sd,
/// group_erasure_probability, q2, method (for stragglers finish/drain: simulated on the
/// delay-only path, with iteration_time_se and policy_note); with data the keys of
/// convergence_predictions (the coded bound or null with bound_problem, the exact least-squares
/// curve, docs/convergence.md), iterations_to_target, time_to_target; and for FRC first_r schemes
/// speedup_vs_n (powers of two and the config's own n) and speedup_at_config_n. A collective run
/// (docs/theory.md "Collectives"): expected_iteration_time from sim/theory/collective_theory.h
/// (null with bounds), method "collective theory (exact|bounds): …", the `collective` block
/// (form, lower, upper, stop_time, offsets) and, over a ring, ring_speedup_vs_n and
/// ring_speedup_at_config_n.
/// `convergence` false skips the convergence part (which solves for f*), the speedup table and
/// the finish/drain simulation: what every summary.json records under "theory".
nlohmann::json predictions(const RunPlan& plan, bool convergence = true);

/// Fewest iterations the iterative f* solve must be allowed before it is attempted.
inline constexpr int kMinOptimumIterations = 100;

/// The f* solve of a plan (models::solve_optimum): exact when the Gram matrix is small, else
/// iterative with as many iterations (at most 10 000, each costed as two data passes and 50
/// vector operations of length p) as fit in max(10 × the run's work, kTheoryWorkBudget).
models::OptimumOptions optimum_options(const RunPlan& plan);

/// Why f* would not be computed (fewer than kMinOptimumIterations iterations affordable), or
/// nullopt.
std::optional<std::string> optimum_cost_problem(const RunPlan& plan);

/// Why the convergence part would not be computed (μ needs a Gram matrix too large to decompose,
/// or optimum_cost_problem), or nullopt. `theory` reports it as a `convergence:` note.
std::optional<std::string> convergence_cost_problem(const RunPlan& plan);

}  // namespace stragglersim::experiments

#pragma once
// f* of a plan, solved once per data set and objective: once per process (every caller of a run
// — the summary, theory's convergence bound — and every run of a sweep over the same objective
// shares one solve), and once per output tree when the plan names an f* cache folder
// (docs/model.md "f* cache").

#include <filesystem>
#include <string>

#include "experiments/config/run_plan.h"
#include "models/optimum.h"
#include "models/worker_pool.h"

namespace stragglersim::experiments {

/// A solve of models::solve_optimum with where it came from and what it cost.
struct PlanOptimum {
  models::Optimum optimum;
  /// "solved" (this process solved it) or "cache" (read from the plan's f* cache folder).
  std::string source = "solved";
  /// Real seconds this caller spent: the solve, or reading the cache entry (an entry holds no
  /// time, so that it is the same bytes whoever solved it).
  double seconds = 0.0;
};

/// f* of `plan` (which must have data and pass optimum_cost_problem) by solve_optimum with
/// optimum_options(plan) on `pool` (null: a pool of plan.threads threads is made). The first
/// caller per live objective solves (or reads the cache); concurrent callers wait for it.
/// When plan.f_star_cache is set, a valid entry there is used instead of a solve, and a new
/// solve is stored there (a unique temporary renamed into place). An unreadable or
/// inconsistent entry is reported on stderr and re-solved, never trusted.
PlanOptimum plan_optimum(const RunPlan& plan, models::WorkerPool* pool = nullptr);

/// The cache key of a plan's f*: a 64-bit FNV-1a hash of the training features and labels
/// (their bytes) and of the objective (loss, l2, rows, features, solver options), as 16 hex
/// digits. Entries are `<cache>/<key>.json`.
std::string f_star_cache_key(const RunPlan& plan);

}  // namespace stragglersim::experiments

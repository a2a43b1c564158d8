#pragma once
// f* = min_x f(x) to high accuracy, for the convergence predictions (docs/model.md §6).

#include <Eigen/Core>
#include <optional>
#include <string>

#include "models/objective.h"
#include "models/worker_pool.h"

namespace stragglersim::models {

/// How solve_optimum picks its method and when an iterative solve gives up.
struct OptimumOptions {
  enum class Solver {
    kAuto,       ///< exact when the p × p Gram matrix is small (exact_solver_fits), else iterative
    kExact,      ///< normal equations (COD) or Newton; illegal when the Gram matrix does not fit
    kIterative,  ///< conjugate gradient (least squares) or L-BFGS (logistic), matrix-free
  };
  Solver solver = Solver::kAuto;
  /// Certificate of the iterative solvers: ‖∇f(x)‖ ≤ relative_tolerance · max(1, ‖∇f(0)‖).
  double relative_tolerance = 1e-10;
  /// Iterations (each about one data pass for L-BFGS, two for conjugate gradient) before an
  /// iterative solve is declared failed. Illegal: < 1.
  int max_iterations = 10'000;
};

struct Optimum {
  Eigen::VectorXd x;
  double value = 0.0;          ///< f(x*); meaningless unless converged
  double gradient_norm = 0.0;  ///< ‖∇f(x*)‖ recomputed by Objective::gradient, the certificate
  /// "normal equations (COD)", "newton", "conjugate gradient" or "l-bfgs".
  std::string method;
  int iterations = 0;       ///< Newton, conjugate-gradient or L-BFGS iterations taken
  int iteration_limit = 1;  ///< the iterations allowed in advance (the solve's cost bound)
  /// Passes over the training data (or its dense copy) the solve made, the final recomputation of
  /// f and ‖∇f‖ included: data_bytes_read() grows by data_passes · Dataset::stored_bytes() for
  /// dense data (models/base/data_traffic.h).
  int data_passes = 0;
  /// Newton's λ² = ∇fᵀH⁻¹∇f at the returned point, from the last Hessian (Newton only).
  std::optional<double> newton_decrement;
  /// Why the solve stopped: "newton decrement", "no decrease" (the line search could not
  /// decrease f, λ²/2 ≤ 1e-10·max(1, |f|)), "gradient norm", "exact" or "failed".
  std::string stop = "exact";
  bool converged = true;  ///< false: an iterative solve missed its certificate within budget
  std::string failure;    ///< why it failed (empty when converged)
};

/// Whether the exact solvers apply: p ≤ 4000 and m·p² ≤ 10¹⁰ (forming the Gram matrix or a
/// Newton Hessian costs m·p² flops, and p² doubles of memory).
bool exact_solver_fits(const Objective& f);

/// Exact solvers — least squares: the minimum-norm solution of (AᵀA/m + λ₂I)x = Aᵀb/m by a
/// complete orthogonal decomposition (exact also when m < p and λ₂ = 0); logistic: Newton's method
/// with Armijo backtracking from x = 0, stopping when the Newton decrement λ²/2 ≤
/// 1e-16·max(1, |f|), or when the line search cannot decrease f beyond its rounding with
/// λ²/2 ≤ 1e-10·max(1, |f|); at most 50 iterations (each one Hessian, m·p² flops).
/// Iterative solvers, which never form a p × p matrix — least squares: conjugate gradient on the
/// normal equations from x = 0 (its iterates stay in the row space of A, so it also reaches the
/// minimum-norm solution); logistic (any other smooth loss): L-BFGS with 20 pairs and Armijo
/// backtracking from x = 0, which needs λ₂ > 0 for its curvature pairs. Both stop when
/// ‖∇f‖ ≤ relative_tolerance·max(1, ‖∇f(0)‖), checked on the gradient recomputed from the data;
/// when max_iterations pass first, converged is false and failure says why.
/// The data passes of Newton and L-BFGS (and Newton's Hessian) run on `pool` when given, in
/// fixed row chunks and column blocks summed in order: the same bytes for every thread count.
/// Every iteration calls throw_if_stop_requested (models/base/stop_request.h).
Optimum solve_optimum(const Objective& f,
                      const OptimumOptions& options = {},
                      WorkerPool* pool = nullptr);

}  // namespace stragglersim::models

#pragma once
// f* = min_x f(x) to high accuracy, for the convergence predictions (docs/model.md §6).

#include <Eigen/Core>
#include <string>

#include "models/objective.h"

namespace stragglersim::models {

struct Optimum {
  Eigen::VectorXd x;
  double value = 0.0;          ///< f(x*)
  double gradient_norm = 0.0;  ///< ‖∇f(x*)‖, the certificate of the solve
  std::string method;          ///< "normal equations (COD)", "newton" or "nesterov"
};

/// Least squares: the minimum-norm solution of (AᵀA/m + λ₂I)x = Aᵀb/m by a complete orthogonal
/// decomposition (exact also when m < p and λ₂ = 0). Logistic: Newton's method with backtracking
/// from x = 0 until ‖∇f‖ ≤ 1e-10·max(1, ‖∇f(0)‖). Both need the p × p Gram matrix: above
/// p = 4000 features, 20 000 accelerated-gradient steps of size 1/β are used instead.
Optimum solve_optimum(const Objective& f);

}  // namespace stragglersim::models

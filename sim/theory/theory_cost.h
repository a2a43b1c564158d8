#pragma once
// The cost estimate of the exact computation (sim/theory/iteration_time_theory.h,
// PredictionOptions): the operations the numerical or discrete path is expected to take, against
// which predict_iteration_time decides to simulate instead. Used by the theory of sim/theory/
// only.

#include "sim/delays/delay_model.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/stop_distribution.h"
#include "sim/theory/time_integrals.h"

namespace stragglersim::sim {

/// Integrand evaluations assumed per quadrature piece by the cost estimate (61-point
/// Gauss–Kronrod refined a few times) and per quantile search.
inline constexpr double kEvaluationsPerPiece = 61.0 * 7.0;
inline constexpr double kEvaluationsPerQuantile = 260.0;

/// The operations (WorkBudget units) the exact computation is expected to take: integrand
/// evaluations × (CDF reads × kCdfOperations + DP operations), with kEvaluationsPerPiece
/// evaluations per quadrature piece (pieces split at the classes' distinct lower bounds, plus
/// the median and the tail), four integrals for the moments, one per distinct erasure set of
/// classes, and kEvaluationsPerQuantile per quantile search; discrete marginals evaluate once
/// per distinct atom instead.
[[nodiscard]] double estimated_operations(const SchemeDescription& scheme,
                                          const DelayModel& delay,
                                          PredictionMethod method,
                                          const Jumps& jumps,
                                          const WorkerClasses& classes);

}  // namespace stragglersim::sim

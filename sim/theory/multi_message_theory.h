#pragma once
// The iteration time of multi-message communication (sim/multi_message.h, docs/model.md §4
// "Multi-message"; docs/theory.md "Multi-message completion time"). Worker i computes the s_i
// partitions of its support in its order o_i at a uniform pace and sends each at once, so its
// ℓ-th message arrives at A_iℓ = c + T_i·ℓ/s_i (parallel links: c = L + S/B; a free network:
// c = 0). The master stops at
//   Z = min(τ, max_j min_{(i, ℓ): o_iℓ = j} A_iℓ)
// (τ = +∞ without a deadline). With N_i(t) = #{ℓ : A_iℓ ≤ t} the messages of worker i in by t,
// P(N_i(t) ≥ ℓ) = F_i((t − c)·s_i/ℓ), and partition j is in by t iff some holder i has
// N_i(t) > its position of j. Workers that share no partition, directly or through others, are
// independent (the connected components of the "holds a common partition" graph: the groups of
// FRC, one per worker uncoded), so for independent workers
//   P(Z ≤ t) = Π_components P(every partition of the component in by t),
// each factor an exact sum over the component's progress vectors (N_i) ∈ Π_i {0 … s_i}
// (Π_i (s_i + 1) terms: (d + 1)^d for an FRC group), components with equal marginals and equal
// relative orders computed once. E[Z] and sd(Z) then come from the numerical path of
// iteration_time_theory.h (stopping_time_moments), split at every c + lower_bound(i)·ℓ/s_i.
// A replayed table (DelayModel::rows()) is averaged row by row (method "trace rows"): each row's
// Z computed from its delays as above, nothing assumed about independence. Components of more
// than 63 partitions, or an estimated cost over the operation limit (a cyclic code's single
// component of n workers: (s + 1)^n terms), use the simulation fallback when one is given.

#include <optional>
#include <span>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {

struct MultiMessageTheoryOptions {
  double shift = 0.0;              ///< c = L + S/B of parallel links; 0 on a free network
  std::optional<double> deadline;  ///< the rule's `after` τ; none: wait for every partition
  double operation_limit = kExactOperationLimit;
  /// The fallback (see above); when empty the exact computation always runs, and a component
  /// of more than 63 partitions is an internal error.
  IterationTimeSimulation simulate;
};

/// Z for one iteration's delays (one per worker), from the formula above.
[[nodiscard]] double multi_message_row_stop(const std::vector<std::vector<int>>& orders,
                                            std::span<const double> delays,
                                            double shift,
                                            std::optional<double> deadline);

/// P(Z ≤ t) and P(Z > t) without the deadline, for independent workers with `delay`'s marginals.
[[nodiscard]] StopProbability multi_message_stop_probability(
    const std::vector<std::vector<int>>& orders, const DelayModel& delay, double shift, double t);

/// E[Z] and sd(Z) (method "numerical", "trace rows" or "simulation"); q and q₂ are NaN (the
/// master erases partitions, not groups). Illegal: orders not one per worker of `delay`.
[[nodiscard]] IterationTimePrediction predict_multi_message_time(
    const std::vector<std::vector<int>>& orders,
    const DelayModel& delay,
    const MultiMessageTheoryOptions& options);

/// The p-quantile of Z, p ∈ (0, 1): the ⌈p·T⌉-th smallest row stop of a replayed table,
/// otherwise bisection on multi_message_stop_probability (capped at the deadline) to ~1e-13
/// relative; +∞ when P(Z ≤ t) never reaches p; NaN when a component's exact sum has over 10⁶
/// terms or 63 partitions (it is evaluated at every bisection step).
[[nodiscard]] double multi_message_time_quantile(const std::vector<std::vector<int>>& orders,
                                                 const DelayModel& delay,
                                                 const MultiMessageTheoryOptions& options,
                                                 double p);

}  // namespace stragglersim::sim

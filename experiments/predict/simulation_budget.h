#pragma once
// How many delay-only draws a simulated iteration time can afford (docs/validate.md "Cost").
// A linear-algebra code under a decodability rule pays, for each stopping set it meets, a
// rank-revealing factorisation of the k × m matrix B_Kᵀ (m workers heard) and the condition of
// its m × m triangle (a triangular inverse, and an SVD only past the inverse's bound): counted
// as k·m² + m³ operations, 3·10⁷ at n = 256, milliseconds. Decodes are
// memoised by heard set (codes/decode_memo.h), so a code that decodes from any n − s workers
// meets at most Σ_{j≤s} C(n, j) distinct sets; any other linear-algebra code is charged one
// decode per arrival after the rule's minimum. Past kSimulationOperationLimit the draws are cut
// to what the limit affords (never below kMinimumSimulationDraws): a smaller simulation, whose
// standard error the prediction carries.

#include <cstdint>

#include "experiments/config/run_plan.h"

namespace stragglersim::experiments {

/// Operations (k·m² + m³ per decode) a simulated iteration time may spend on decodes: a few
/// seconds on one core.
inline constexpr double kSimulationOperationLimit = 5e9;
/// Draws kept whatever the decodes cost.
inline constexpr std::uint64_t kMinimumSimulationDraws = 100;

struct SimulationCost {
  double operations_per_decode = 0.0;  ///< k·m² + m³ (0: the simulation decodes nothing)
  double distinct_sets = 0.0;          ///< stopping sets the memo can meet (+∞: unbounded)
  double decodes_per_draw = 0.0;       ///< decodes a draw pays when its set is new
  std::uint64_t asked = 0;             ///< draws asked for
  std::uint64_t draws = 0;             ///< draws affordable (asked, or cut)
  /// Expected operations of `d` draws: min(d·decodes_per_draw, distinct_sets) decodes.
  [[nodiscard]] double operations(std::uint64_t d) const;
  [[nodiscard]] bool cut() const { return draws < asked; }
};

/// The decode cost of `draws` delay-only draws of the plan, and the draws affordable.
[[nodiscard]] SimulationCost simulation_cost(const RunPlan& plan, std::uint64_t draws);

}  // namespace stragglersim::experiments

#pragma once
// Convergence of gradient descent with erased groups (docs/model.md §6) and the predicted speedup
// of ErasureHead (Wang, Charles, Papailiopoulos, arXiv 1901.09671).
//
// For f β-smooth and μ-PL, Σ_g ‖∇F_g‖² ≤ ζ², step γ ≤ 1/β and the unscaled estimator with
// E[ĝ] = (1 − q)∇f (q the group-erasure probability, q₂ that of two given groups):
//   E[f(x_t) − f*] ≤ ρ^t (f(x₀) − f*) + βγ(q − q₂)ζ² / (2μ(1 − q)),   ρ = 1 − μγ(1 − q).
// Exact schemes have q = q₂ = 0 and recover the usual linear rate (1 − μγ)^t without a floor.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Inputs of the PL bound. Illegal: β ≤ 0, μ ≤ 0, μ > β, γ ≤ 0, γ > 1/β, ζ² < 0, gap < 0,
/// q outside [0, 1), q₂ outside [0, q].
struct PlBoundParameters {
  double smoothness = 1.0;    ///< β
  double pl_constant = 1.0;   ///< μ
  double step = 1.0;          ///< γ
  double zeta_squared = 0.0;  ///< ζ² ≥ Σ_g ‖∇F_g‖²
  double initial_gap = 1.0;   ///< f(x₀) − f*
  double q = 0.0;
  double q2 = 0.0;
};

/// ρ = 1 − μγ(1 − q).
[[nodiscard]] double pl_contraction(const PlBoundParameters& p);
/// βγ(q − q₂)ζ² / (2μ(1 − q)), the suboptimality the bound tends to.
[[nodiscard]] double pl_noise_floor(const PlBoundParameters& p);
/// ρ^t·(f(x₀) − f*) + floor at t = 0, 1, …, iterations (size iterations + 1), as in docs/model.md
/// §6.
[[nodiscard]] std::vector<double> pl_bound(const PlBoundParameters& p, int iterations);
/// Smallest t with bound(t) ≤ ε; nullopt when the noise floor is ≥ ε (never reached).
[[nodiscard]] std::optional<long> iterations_to_suboptimality(const PlBoundParameters& p,
                                                              double epsilon);
/// iterations_to_suboptimality × expected iteration time (simulated seconds); nullopt if never.
[[nodiscard]] std::optional<double> time_to_suboptimality(const PlBoundParameters& p,
                                                          double epsilon,
                                                          double mean_iteration_time);

/// Builds the delay model of n workers with the given per-worker loads.
/// Builds the delay model of n workers of one load (uniform WorkerLoads: O(1) memory at any n).
using DelayFactory = std::function<std::unique_ptr<DelayModel>(const WorkerLoads& loads)>;

/// ErasureHead (FRC, rule first_r) against uncoded (rule all) and exact FRC (rule decodable).
/// Illegal: d < 1, r_fraction outside (0, 1], a worker count not a multiple of d.
struct SpeedupOptions {
  int d = 2;
  double r_fraction = 0.5;  ///< r = round(r_fraction · n), at least 1
};

struct SpeedupPoint {
  int workers = 0;
  int r = 0;
  double uncoded = 0.0;      ///< E[iteration time], seconds
  double frc = 0.0;          ///< exact FRC
  double erasurehead = 0.0;  ///< FRC + first_r
  double q = 0.0;            ///< ErasureHead's group-erasure probability
  double q2 = 0.0;
  double speedup_vs_uncoded = 0.0;  ///< uncoded / erasurehead
  double speedup_vs_frc = 0.0;      ///< frc / erasurehead
};

/// Predicted per-iteration speedup of ErasureHead for each n in `workers`.
[[nodiscard]] std::vector<SpeedupPoint> predicted_speedup(std::span<const int> workers,
                                                          const SpeedupOptions& options,
                                                          const DelayFactory& delay);
/// The same under a shifted exponential (Model A when tail = kLoad).
[[nodiscard]] std::vector<SpeedupPoint> predicted_speedup(std::span<const int> workers,
                                                          const SpeedupOptions& options,
                                                          double shift,
                                                          double rate,
                                                          TailScaling tail);
/// Growth of speedup_vs_uncoded per doubling of n: for consecutive points,
/// (s_{k+1} − s_k) / log₂(n_{k+1} / n_k). Θ(log n) growth shows as a constant.
[[nodiscard]] std::vector<double> speedup_growth_per_doubling(std::span<const SpeedupPoint> points);

}  // namespace stragglersim::sim

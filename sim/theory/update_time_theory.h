#pragma once
// Expected time per update of the four disciplines of Dutta, Joshi, Ghosh, Dube and Nagpurkar
// ("Slow and stale gradients can win the race", AISTATS 2018; docs/theory.md "Time per update of
// K-sync, K-batch-sync, K-async and K-batch-async"), for n identical workers whose computations
// take X = Δ + Exp(μ) (exponential when Δ = 0), i.i.d. over workers and computations. With
// H_m = Σ_{i≤m} 1/i and X_{K:n} the K-th of n such delays, E[X_{K:n}] = Δ + (H_n − H_{n−K})/μ:
//   K-sync        E[X_{K:n}]                                   exact (every update starts fresh)
//   K-batch-sync  Δ = 0: K/(nμ) (n Poisson streams of rate μ)   exact
//                 Δ > 0: ∫₀^∞ P(N(t) < K) dt, N(t) the sum of n independent renewal counts with
//                 P(N_i(t) ≥ c) = P(Poisson(μ(t − cΔ)) ≥ c) for t ≥ cΔ      exact (numerical)
//   K-async       Δ = 0: E[X_{K:n}] (memoryless: the busy workers are as good as fresh)  exact
//                 Δ > 0: E[X_{K:n}] is an upper bound (Dutta et al.'s bound for "new longer
//                 than used" delays: a busy worker's residual time is shorter than a fresh one)
//   K-batch-async K·E[X]/n = K(Δ + 1/μ)/n in the long run (renewal reward: the n workers never
//                 idle, each pushes once per E[X])                       exact as updates → ∞
// The model's tail scaling plays no part: every worker has load 1.

#include <optional>
#include <string>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

enum class UpdateDiscipline { kKSync, kKBatchSync, kKAsync, kKBatchAsync };

struct UpdateTimePrediction {
  double expected = 0.0;     ///< E[T] per update (seconds), or its upper bound
  bool upper_bound = false;  ///< the formula only bounds E[T] from above
  std::string formula;       ///< which of the formulas above
};

/// E[T] per update for K of n workers with delays Δ + Exp(μ). Illegal: n < 1, K outside 1 … n,
/// Δ < 0, μ ≤ 0.
[[nodiscard]] UpdateTimePrediction predict_update_time(
    UpdateDiscipline discipline, int workers, int k, double shift, double rate);

/// The same for a delay model whose workers are identical shifted exponentials of load 1
/// (DelayModel::shifted_exponential()); nullopt for any other model.
[[nodiscard]] std::optional<UpdateTimePrediction> predict_update_time(UpdateDiscipline discipline,
                                                                      int k,
                                                                      const DelayModel& delays);

}  // namespace stragglersim::sim

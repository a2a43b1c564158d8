#pragma once
// Convergence of gradient descent with a randomly weighted gradient estimate and an exact
// regulariser (docs/convergence.md). The master steps with
//   x⁺ = x − γ(ĝ + λ₂x),   ĝ = Σ_g α_g ∇F_g(x),
// the α_g the group coefficients of one decode (a group is the d partitions of an FRC group, or
// one partition), drawn afresh each iteration independently of x.
//
// Coefficient moments. For FRC or uncoded codes under first_r, deadline or first_r_or_decodable
// with identical workers the groups are exchangeable, so the number N of groups covered carries
// everything: P(g covered) = E[N]/K, P(g, h covered) = E[N(N − 1)]/(K(K − 1)); the rescale modes
// multiply α by 1 (none), 1/(1 − q) (expected) or K/N (empirical).
//
// The bound (GD only). With f = F + (λ₂/2)‖x‖² β-smooth and μ-strongly convex on the iterates'
// subspace, F_c = cF + (λ₂/2)‖x‖² for c = mean_g E[α_g], β_c = c(β − λ₂) + λ₂,
// μ_c = c(μ − λ₂) + λ₂, and γβ_c ≤ 1:
//   D_{t+1} ≤ ρ D_t + 2γκ ζ_c²,  ρ = 1 − γμ_c + 4γκL²/μ_c,  κ = (b² + β_cγv)/2,
// D_t = E[F_c(x_t)] − min F_c, v = λ_max(Cov α), b² = Σ_g (E α_g − c)², L² = Σ_g β_g² (β_g the
// smoothness of F_g), ζ_c² = (‖G(x*)‖_F + Lδ)² with G = [∇F_g], δ = |1 − c|λ₂‖x*‖/μ_c ≥ ‖x_c − x*‖.
// Then E[f(x_t)] − f* ≤ D_t/c + (λ₂/2)(1/c − 1)‖x*‖² when c ≤ 1, ≤ D_t/c when λ₂ = 0, and
// ≤ (β/2)(√(2D_t/μ_c) + δ)² always; D₀ ≤ c(f(x₀) − f*) when c ≤ 1 and x₀ = 0 (or λ₂ = 0).
// Where ζ² has a global supremum ζ_sup² (logistic: |ℓ'| ≤ 1) a second recursion
//   D_{t+1} ≤ (1 − γμ_c) D_t + γκ ζ_sup²
// also holds. A third route needs no PL constant (convex F_g, b² = 0, c ≤ 1, x₀ = 0): with
// Φ_t = t·D_t + E‖x_t − x_c‖²/(2γ), Var(x) ≤ σ² + ℓD(x) and ε, a, s, b as in
// docs/convergence.md ("Convex route"),
//   Φ₁ ≤ ‖x*‖²/(2γ) + b(σ² + ℓD₀),  Φ_{t+1} ≤ (1 + ω_t)Φ_t + t·s + bσ²,
//   ω_t = max(bℓ/t, tε²γ/(2a)),  D_t ≤ Φ_t/t,
// minimised over a grid of the Young parameter θ. The bound is the smallest route at each t.

#include <Eigen/Core>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::sim {

/// Moments of the group coefficients α_g of one decode, equal for every group (exchangeable).
struct CoefficientMoments {
  int groups = 1;       ///< K
  double mean = 1.0;    ///< E[α_g]
  double second = 1.0;  ///< E[α_g²]
  double cross = 1.0;   ///< E[α_g α_h], g ≠ h (unused when K = 1)
};

/// P(N = j), j = 0..K, for the number N of FRC groups (K groups of d workers) hit by a uniformly
/// random r-subset of the n = Kd workers. Illegal: K < 1, d < 1, r outside [0, Kd].
[[nodiscard]] std::vector<double> covered_groups_first_r(int groups, int d, int r);
/// P(N = j) for independent groups each covered with probability 1 − q (deadline rules).
[[nodiscard]] std::vector<double> covered_groups_independent(int groups, double q);

/// Coefficient moments from the distribution of N (size K + 1, summing to 1). `expected_q` is the
/// q the expected rescale divides by. Illegal: expected rescale with expected_q ≥ 1.
[[nodiscard]] CoefficientMoments coefficient_moments(const std::vector<double>& covered,
                                                     codes::Rescale rescale,
                                                     double expected_q);

/// λ_max of the K × K covariance of exchangeable coefficients: max(a − b, a + (K − 1)b) with
/// a = Var α_g, b = Cov(α_g, α_h).
[[nodiscard]] double covariance_top_eigenvalue(const CoefficientMoments& m);

/// How the set K of workers heard in one iteration is distributed, for identical independent
/// workers: a uniformly random r-subset (first_r), each worker independently with probability p
/// (a deadline τ, p = F(τ)), or every worker (all).
struct HeardSetLaw {
  enum class Kind { kUniformSubset, kIndependent, kEveryone };
  Kind kind = Kind::kEveryone;
  int workers = 1;  ///< n
  int r = 0;        ///< kUniformSubset: |K|, 0 ≤ r ≤ n
  double p = 1.0;   ///< kIndependent: P(i ∈ K), in [0, 1]
  /// kIndependent with non-identical workers: P(i ∈ K) per worker (n entries; then `p` unused).
  std::vector<double> heard_probability;
  [[nodiscard]] static HeardSetLaw everyone(int n) { return make(Kind::kEveryone, n, 0, 1.0); }
  [[nodiscard]] static HeardSetLaw uniform_subset(int n, int r) {
    return make(Kind::kUniformSubset, n, r, 1.0);
  }
  [[nodiscard]] static HeardSetLaw independent(int n, double p) {
    return make(Kind::kIndependent, n, 0, p);
  }
  /// P(i ∈ K) for worker i under kIndependent.
  [[nodiscard]] double probability(int worker) const;
  /// P(|K| = s), s = 0..n (Poisson-binomial for non-identical workers); for identical workers K
  /// is, given |K| = s, a uniformly random s-subset under every kind.
  [[nodiscard]] std::vector<double> size_distribution() const;
  /// Heard sets of positive probability: C(n, r), 2^n (1 when p is 0 or 1) or 1.
  [[nodiscard]] double support_size() const;

 private:
  static HeardSetLaw make(Kind kind, int n, int r, double p) {
    HeardSetLaw law;
    law.kind = kind;
    law.workers = n;
    law.r = r;
    law.p = p;
    return law;
  }
};

/// Partition-level moments of the decoding coefficients α (k partitions).
struct PartitionMoments {
  Eigen::VectorXd mean;    ///< E[α]
  Eigen::MatrixXd second;  ///< E[ααᵀ]
};

/// Exact moments of the one-step decode α = scale·w(|K|)·Bᵀ1_K (w = code.one_step_weight, w = 0
/// when K is empty). Given |K| = s, P(i ∈ K) = π₁ = s/n and P(i, j ∈ K) = π₂ = s(s − 1)/(n(n − 1)),
/// so with u = Bᵀ1:  E[α] = Σ_s P(s)·scale·w(s)·π₁·u  and
///   E[ααᵀ] = c₂·uuᵀ + c₁·BᵀB,  c₂ = Σ_s P(s)(scale·w(s))²π₂,  c₁ = Σ_s P(s)(scale·w(s))²(π₁ − π₂).
/// Non-identical independent workers (heard_probability set): with P₋ᵢ, P₋ᵢⱼ the laws of |K| over
/// the other workers (Poisson-binomial), E[α] = Bᵀa and E[ααᵀ] = BᵀMB, where
/// a_i = p_i Σ_s P₋ᵢ(s)σw(s+1), M_ii = p_i Σ_s P₋ᵢ(s)(σw(s+1))², M_ij = p_ip_j Σ_s
/// P₋ᵢⱼ(s)(σw(s+2))² (O(n⁴); illegal above n = 200). Illegal: a code without one-step weights,
/// law.workers ≠ code.workers().
[[nodiscard]] PartitionMoments one_step_moments(const codes::GradientCode& code,
                                                const HeardSetLaw& law,
                                                double scale);

/// Exact moments by enumerating every heard set of positive probability (law.support_size() of
/// them) with its probability; `decode` maps a heard set (ascending workers) to α (k entries).
[[nodiscard]] PartitionMoments enumerated_moments(
    const HeardSetLaw& law,
    int partitions,
    const std::function<Eigen::VectorXd(std::span<const int>)>& decode);

/// What the bound needs of partition moments: c = mean_j E[α_j], b² = Σ_j (E[α_j] − c)²,
/// v = λ_max(E[ααᵀ] − E[α]E[α]ᵀ) (clamped at 0).
struct MomentSummary {
  double mean = 1.0;
  double bias = 0.0;
  double variance = 0.0;
};
[[nodiscard]] MomentSummary summarize_moments(const PartitionMoments& m);

struct CodedBoundInputs {
  double smoothness = 1.0;              ///< β of f
  double pl_constant = 1.0;             ///< μ of f (strong convexity on the iterates' subspace)
  double l2 = 0.0;                      ///< λ₂
  double step = 1.0;                    ///< γ
  double mean = 1.0;                    ///< c, the average E[α_g]
  double bias = 0.0;                    ///< b² = Σ_g (E[α_g] − c)²
  double variance = 0.0;                ///< v ≥ λ_max(Cov α)
  double zeta_star_squared = 0;         ///< ‖G(x*)‖_F² = Σ_g ‖∇F_g(x*)‖²
  double group_smoothness_squared = 0;  ///< L² = Σ_g β_g²
  /// max_g β_g; 0 when unknown (the convex route below is then not taken).
  double group_smoothness_max = 0;
  double x_star_norm = 0.0;                  ///< ‖x*‖
  double initial_gap = 0.0;                  ///< f(x₀) − f*
  double initial_data_gradient_squared = 0;  ///< ‖∇F(x₀)‖² (x₀ = 0)
  double value_scale = 0.0;                  ///< |f*| + |f(x₀)|: the size of the rounding margin
  bool start_at_zero = true;  ///< x₀ = 0 (what D₀ ≤ c(f(x₀) − f*) needs when c < 1)
  /// sup_x Σ_g ‖∇F_g(x)‖² when one exists (losses with bounded ℓ'), else +∞; or a bound on
  /// Σ_g ‖∇F_g(x)‖² over a region certified to hold every iterate.
  double zeta_sup_squared = std::numeric_limits<double>::infinity();
};

struct CodedBound {
  std::vector<double> bound;     ///< on E[f(x_t)] − f*, t = 0..iterations
  std::vector<double> pl_bound;  ///< the same from routes A and B only (+∞ where neither applies)
  double contraction = 0.0;      ///< ρ; NaN when only the convex route applies
  double floor = 0.0;            ///< limit of the bound as t → ∞ (+∞: convex route only)
  double mean = 1.0;             ///< c
  double minimiser_shift = 0.0;  ///< δ
  /// No t ≥ 1 with bound[t] < f(x₀) − f*: the bound says nothing f(x₀) − f* does not.
  bool vacuous = false;
  int smallest_at = 0;           ///< argmin of bound[t] over t ≥ 1 (0 when iterations = 0)
  bool convex_route = false;     ///< the convex route was available
  int convex_iterations = 0;     ///< t ≥ 1 at which the convex route gave the bound
  double rounding_margin = 0.0;  ///< added to every entry (1e-11·value_scale)
};

/// The bound above; nullopt with `why` when it does not apply (c ≤ 0, γβ_c > 1, or ρ ≥ 1 on
/// both PL routes without the convex route).
[[nodiscard]] std::optional<CodedBound> coded_pl_bound(const CodedBoundInputs& in,
                                                       int iterations,
                                                       std::string* why);

}  // namespace stragglersim::sim

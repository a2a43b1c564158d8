#include "experiments/predict/convergence_predictions.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <variant>

#include "experiments/predict/measured_convergence.h"
#include "experiments/predict/plan_optimum.h"
#include "experiments/predict/predictions.h"
#include "experiments/predict/simulation_budget.h"
#include "models/base/random_stream.h"
#include "models/optimum.h"
#include "sim/backends/simulated_backend.h"
#include "sim/fastpath/delay_only.h"
#include "sim/simulated_cluster.h"
#include "sim/theory/coded_convergence.h"
#include "sim/theory/least_squares_curve.h"
#include "sim/training_loop.h"

namespace stragglersim::experiments {
namespace {

/// Largest partition count whose k × k coefficient moments are computed.
constexpr int kMaxMomentPartitions = 1000;
/// Largest number of heard sets decoded, and sets·k², for decoders not linear in the heard set.
constexpr double kMaxEnumeratedSets = 200000;
constexpr double kMaxEnumerationWork = 2e9;
/// Largest feature count, and K·p², of the exact least-squares curve.
constexpr Eigen::Index kMaxCurveFeatures = 200;
constexpr double kMaxCurveWork = 4e6;
/// Flops spent on the fourth moments behind the standard deviation of the exact curve (a few
/// seconds: Nesterov at p = 20, K = 10 needs 9.2e8 per iteration, 40 iterations 3.7e10).
constexpr double kMaxSpreadWork = 5e10;
/// Largest n for moments under a deadline with non-identical workers (O(n⁴) pair laws).
constexpr int kMaxHeterogeneousWorkers = 200;
/// Fewer affordable iterations than this (or than the run has) and the sd is not computed.
constexpr int kMinSpreadIterations = 10;

/// What the bound needs of the coefficients, at the level of `group` partitions per group.
struct Coefficients {
  int group = 1;
  double mean = 1.0;
  double bias = 0.0;
  double variance = 0.0;
  std::optional<sim::CoefficientMoments> exchangeable;  ///< exact moments (FRC, uncoded, exact)
  std::vector<double> covered;  ///< P(N = j) behind `exchangeable`; empty for α = 1
  std::string method;
  /// Range of one decode (exchangeable groups only): every α_g ∈ [0, alpha_max] and
  /// |α_g − 1| ≤ alpha_deviation in every iteration; nullopt when not known.
  std::optional<double> alpha_max;
  double alpha_deviation = 0.0;
};

/// The range of α_g = w(N)·1{g covered} over the N of positive probability: w = 1 (none),
/// 1/(1 − q) (expected) or K/N (empirical); α_g = 0 whenever some group can be missed.
void set_coefficient_range(Coefficients& c, codes::Rescale rescale, double expected_q) {
  const auto groups = static_cast<int>(c.covered.size()) - 1;
  double top = 0.0;
  double deviation = c.covered.back() < 1.0 ? 1.0 : 0.0;
  for (int j = 1; j <= groups; ++j) {
    if (c.covered[static_cast<std::size_t>(j)] <= 0.0) {
      continue;
    }
    const double w = rescale == codes::Rescale::kEmpirical  ? static_cast<double>(groups) / j
                     : rescale == codes::Rescale::kExpected ? 1.0 / (1.0 - expected_q)
                                                            : 1.0;
    top = std::max(top, w);
    deviation = std::max(deviation, std::abs(w - 1.0));
  }
  c.alpha_max = top;
  c.alpha_deviation = deviation;
}

bool identical_delays(const sim::DelayModel& delay) {
  for (int i = 1; i < delay.workers(); ++i) {
    if (delay.mean(i) != delay.mean(0) || delay.variance(i) != delay.variance(0) ||
        delay.lower_bound(i) != delay.lower_bound(0)) {
      return false;
    }
  }
  return true;
}

/// Exact moments: FRC or uncoded with identical workers (exchangeable groups), or any exact
/// scheme (α = 1). nullopt when neither applies.
std::optional<Coefficients> exact_coefficients(const RunPlan& plan,
                                               const sim::SchemeDescription& s,
                                               const sim::IterationTimePrediction& timing) {
  const bool grouped =
      s.code == sim::CodeFamily::kUncoded || s.code == sim::CodeFamily::kFractionalRepetition;
  const bool exact_rule = s.rule == sim::RuleKind::kAll || s.rule == sim::RuleKind::kDecodable ||
                          (s.code == sim::CodeFamily::kCyclic && s.rule == sim::RuleKind::kFirstR &&
                           s.r >= s.workers - s.d + 1);
  Coefficients c;
  if (exact_rule && plan.scheme.rescale != codes::Rescale::kExpected) {
    c.exchangeable = sim::CoefficientMoments{1, 1.0, 1.0, 1.0};
    c.method = "exact scheme (alpha = 1)";
    c.alpha_max = 1.0;
    return c;
  }
  // Groups of unequal shares (`proportional`) are not exchangeable, whatever the delays.
  if (!grouped || !s.loads.empty() || !identical_delays(*plan.make_delays())) {
    return std::nullopt;
  }
  const int groups = s.workers / s.d;
  std::vector<double> covered;
  if (exact_rule) {
    covered.assign(static_cast<std::size_t>(groups) + 1, 0.0);
    covered.back() = 1.0;
  } else if (s.rule == sim::RuleKind::kDeadline) {
    covered = sim::covered_groups_independent(groups, timing.q);
  } else {
    // first_r_or_decodable covers exactly what the first r arrivals cover (see
    // iteration_time_theory.h), so both rules share the distribution.
    covered = sim::covered_groups_first_r(groups, s.d, s.r);
  }
  c.group = s.d;
  c.covered = covered;
  c.exchangeable =
      sim::coefficient_moments(covered, plan.scheme.rescale, plan.scheme.erasure_probability);
  c.mean = c.exchangeable->mean;
  c.variance = sim::covariance_top_eigenvalue(*c.exchangeable);
  c.method = "exact (exchangeable groups)";
  set_coefficient_range(c, plan.scheme.rescale, plan.scheme.erasure_probability);
  return c;
}

/// Why first_r's heard set is not a uniform subset when the workers' delays differ: the code's
/// loads, or (every load equal) the delay model's own workers (a trace's columns, heterogeneous
/// factors).
std::string first_r_unequal_reason(const RunPlan& plan, const sim::DelayModel& delays) {
  const std::vector<double> loads = plan.scheme.code->loads();
  const bool equal_loads =
      std::all_of(loads.begin(), loads.end(), [&loads](double l) { return l == loads.front(); });
  const std::string cause =
      equal_loads ? fmt::format(
                        "the delay model '{}' makes the workers differ; code '{}' gives every "
                        "worker the same load",
                        delays.name(),
                        plan.scheme.code->name())
                  : fmt::format("code '{}' gives them different loads", plan.scheme.code->name());
  return fmt::format(
      "rule first_r with workers of different delay distributions ({}): the first r arrivals "
      "are not a uniform subset; no exact coefficient moments, no bound derived (a deadline "
      "rule has them)",
      cause);
}

/// The law of the heard set for a code without exchangeable groups: nullopt (with `why`) where
/// the heard set is not a uniform subset or independent across workers.
std::optional<sim::HeardSetLaw> heard_set_law(const RunPlan& plan, std::string* why) {
  const std::optional<sim::StoppingShape> shape = plan.scheme.rule->shape();
  const int n = plan.scheme.code->workers();
  if (!shape) {
    *why = "the stopping rule has no shape the theory knows; no coefficient moments";
    return std::nullopt;
  }
  if (shape->kind == sim::RuleKind::kAll) {
    return sim::HeardSetLaw::everyone(n);
  }
  if (shape->kind == sim::RuleKind::kDecodable ||
      shape->kind == sim::RuleKind::kFirstROrDecodable) {
    *why = fmt::format(
        "rule '{}' on code '{}': the heard set depends on the arrival order through "
        "decodability, so its law has no closed form; no coefficient moments, no bound derived",
        plan.scheme.rule->name(),
        plan.scheme.code->name());
    return std::nullopt;
  }
  const auto delays = plan.make_delays();
  const bool identical = identical_delays(*delays);
  if (shape->kind == sim::RuleKind::kFirstR) {
    if (!identical) {
      *why = first_r_unequal_reason(plan, *delays);
      return std::nullopt;
    }
    return sim::HeardSetLaw::uniform_subset(n, shape->r);
  }
  // Deadline τ: worker i is heard iff T_i ≤ τ, independently with probability F_i(τ).
  auto law = sim::HeardSetLaw::independent(n, delays->cdf(0, shape->deadline));
  if (!identical) {
    if (n > kMaxHeterogeneousWorkers) {
      *why = fmt::format(
          "deadline with {} > {} workers of different delay distributions: no exact coefficient "
          "moments computed",
          n,
          kMaxHeterogeneousWorkers);
      return std::nullopt;
    }
    for (int i = 0; i < n; ++i) {
      law.heard_probability.push_back(delays->cdf(i, shape->deadline));
    }
  }
  return law;
}

/// Exact partition-level moments of α: closed form for the one-step decoder (α linear in the
/// heard set), otherwise every heard set decoded with its probability (at most
/// kMaxEnumeratedSets of them); nullopt with the reason beyond.
std::optional<Coefficients> heard_set_coefficients(const RunPlan& plan, std::string* why) {
  const auto& code = *plan.scheme.code;
  const int k = code.partitions();
  if (k > kMaxMomentPartitions) {
    *why = fmt::format("no coefficient moments for {} > {} partitions", k, kMaxMomentPartitions);
    return std::nullopt;
  }
  const auto law = heard_set_law(plan, why);
  if (!law) {
    return std::nullopt;
  }
  sim::PartitionMoments moments;
  Coefficients c;
  const bool linear = plan.scheme.decoder == sim::DecoderKind::kOneStep &&
                      code.one_step_weight(1).has_value() &&
                      plan.scheme.rescale != codes::Rescale::kEmpirical;
  if (linear) {
    const double scale = plan.scheme.rescale == codes::Rescale::kExpected
                             ? 1.0 / (1.0 - plan.scheme.erasure_probability)
                             : 1.0;
    moments = sim::one_step_moments(code, *law, scale);
    c.method = "exact (one-step decoder: alpha is linear in the heard set)";
  } else {
    const double sets = law->support_size();
    const char* decoder = plan.scheme.decoder == sim::DecoderKind::kExact     ? "exact"
                          : plan.scheme.decoder == sim::DecoderKind::kOneStep ? "one_step"
                                                                              : "optimal";
    if (sets > kMaxEnumeratedSets || sets * k * k > kMaxEnumerationWork) {
      *why = fmt::format(
          "the {} decoder{} is not linear in the heard set: exact coefficient moments need all "
          "{:.6g} heard sets of {} partitions, more than this program enumerates ({:g} sets, "
          "sets*k^2 <= {:g}); no bound derived",
          decoder,
          plan.scheme.rescale == codes::Rescale::kEmpirical ? " with empirical rescale" : "",
          sets,
          k,
          kMaxEnumeratedSets,
          kMaxEnumerationWork);
      return std::nullopt;
    }
    try {
      moments = sim::enumerated_moments(
          *law, k, [&](std::span<const int> heard) { return plan.scheme.decode(heard, 0).alpha; });
    } catch (const sim::NumericalError& e) {
      *why = fmt::format("decoding fails on some heard sets: {}", e.what());
      return std::nullopt;
    }
    c.method = fmt::format("exact (every one of the {:.0f} heard sets decoded)", sets);
  }
  const sim::MomentSummary summary = sim::summarize_moments(moments);
  c.mean = summary.mean;
  c.bias = summary.bias;
  c.variance = summary.variance;
  return c;
}

/// ‖∇F_g(x)‖ for groups of `d` consecutive partitions.
std::vector<double> group_gradient_norms(const Eigen::MatrixXd& pg, int d) {
  std::vector<double> out;
  for (Eigen::Index g = 0; g < pg.cols(); g += d) {
    out.push_back(
        pg.middleCols(g, std::min<Eigen::Index>(d, pg.cols() - g)).rowwise().sum().norm());
  }
  return out;
}

/// Σ_g ‖∇F_g(x)‖² for groups of `d` consecutive partitions.
double group_gradient_squared(const Eigen::MatrixXd& pg, int d) {
  double s = 0.0;
  for (const double v : group_gradient_norms(pg, d)) {
    s += v * v;
  }
  return s;
}

/// Rows of group g (partitions g·d .. g·d + d − 1).
std::vector<Eigen::Index> group_rows(const models::Objective& f, int g, int d) {
  std::vector<Eigen::Index> rows;
  for (int j = g * d; j < std::min(f.partitions(), (g + 1) * d); ++j) {
    const auto range = f.partition(j);
    for (Eigen::Index i = range.begin; i < range.end; ++i) {
      rows.push_back(i);
    }
  }
  return rows;
}

struct GroupConstants {
  std::vector<double> smoothness;    ///< β_g per group
  std::vector<double> gradient_sup;  ///< (1/m) Σ_{i∈g} |b_i|·‖a_i‖ per group
  double smoothness_squared = 0.0;   ///< L² = Σ_g β_g², β_g = curvature · λ_max(A_gᵀA_g)/m
  /// Σ_g ((1/m) Σ_{i∈g} |b_i|·‖a_i‖)²: sup_x Σ_g ‖∇F_g(x)‖² when |ℓ'(z; b)| ≤ |b| (logistic).
  double gradient_sup_squared = 0.0;
};

GroupConstants group_constants(const models::Objective& f, int d) {
  GroupConstants out;
  const auto m = static_cast<double>(f.rows());
  for (int g = 0; g * d < f.partitions(); ++g) {
    const auto rows = group_rows(f, g, d);
    if (rows.empty()) {
      continue;
    }
    const models::Dataset sub = f.data().select_rows(rows);
    // Power iteration approaches λ_max from below; 1e-8 covers its 1e-10 tolerance.
    const double beta_g = f.loss().curvature_bound() * models::largest_gram_eigenvalue(sub) *
                          (1.0 + 1e-8) * static_cast<double>(rows.size()) / m;
    out.smoothness_squared += beta_g * beta_g;
    const Eigen::VectorXd norms = std::visit(
        [](const auto& a) {
          Eigen::VectorXd n(a.rows());
          for (Eigen::Index i = 0; i < a.rows(); ++i) {
            n(i) = a.row(i).norm();
          }
          return n;
        },
        sub.features);
    const double sup_g = (norms.array() * sub.labels.array().abs()).sum() / m;
    out.gradient_sup_squared += sup_g * sup_g;
    out.smoothness.push_back(beta_g);
    out.gradient_sup.push_back(sup_g);
  }
  return out;
}

/// Largest p for which λ_min(AᵀA/m) is computed for the local PL certificate.
constexpr Eigen::Index kMaxCertificateFeatures = 1000;

/// A PL constant of f on a ball around x* that holds every iterate (docs/convergence.md,
/// "Local PL constant (logistic)").
struct LocalCertificate {
  bool holds = false;
  double radius = 0.0;       ///< R_b: every iterate, and x_c, lie within it of x*
  double weight = 0.0;       ///< min ℓ'' over the margins the ball allows
  double gram_min = 0.0;     ///< λ_min(AᵀA/m), less its rounding
  double pl_constant = 0.0;  ///< μ_R = gram_min·weight + λ₂
  /// Σ_g (‖∇F_g(x*)‖ + β_g R_b)² (capped by the supremum for bounded ℓ'): ζ² on the ball;
  /// +∞ without a radius.
  double zeta_squared = std::numeric_limits<double>::infinity();
  std::string note;
};

/// Almost-sure radius of the iterates around x*. Each decode steps by the gradient of
/// f_S = Σ_g α_g F_g + (λ₂/2)‖x‖², λ₂-strongly convex and β_S = α_max(β − λ₂) + λ₂ smooth, whose
/// step map is ρ_S = max(1 − γλ₂, γβ_S − 1) Lipschitz and moves x* by γ‖Σ_g (α_g − 1)∇F_g(x*)‖
/// ≤ γ·dev·Σ_g ‖∇F_g(x*)‖; from x₀ = 0 induction gives ‖x_t − x*‖ ≤ max(‖x*‖, γE*/(1 − ρ_S)).
std::optional<double> iterate_radius(const RunPlan& plan,
                                     const Coefficients& c,
                                     const std::vector<double>& norms_at_star,
                                     double x_star_norm,
                                     std::string* why) {
  if (!c.alpha_max) {
    *why = "the range of the decoding coefficients is known only for exchangeable groups";
    return std::nullopt;
  }
  const double l2 = plan.objective->l2();
  const double gamma = plan.step;
  const double beta_s = *c.alpha_max * std::max(0.0, plan.smoothness - l2) + l2;
  const double rho_s = std::max(1.0 - gamma * l2, gamma * beta_s - 1.0);
  if (!(rho_s < 1.0)) {
    *why = fmt::format("the worst decode's step map does not contract (rho_S = {:.6g})", rho_s);
    return std::nullopt;
  }
  const double shift =
      c.alpha_deviation * std::accumulate(norms_at_star.begin(), norms_at_star.end(), 0.0);
  return std::max(x_star_norm, gamma * shift / (1.0 - rho_s));
}

/// min over the rows of ℓ''(z) for |z| ≤ |a_iᵀx*| + R‖a_i‖ (logistic: σ'(z), even and
/// decreasing in |z|), and λ_min(AᵀA/m) less 1e-12·‖AᵀA/m‖_F for the eigensolver's rounding.
void ball_curvature(const models::Objective& f,
                    const Eigen::VectorXd& x_star,
                    LocalCertificate& out) {
  const auto m = static_cast<double>(f.rows());
  std::visit(
      [&](const auto& a) {
        const Eigen::VectorXd z = a * x_star;
        double widest = 0.0;
        for (Eigen::Index i = 0; i < a.rows(); ++i) {
          widest = std::max(widest, std::abs(z(i)) + out.radius * a.row(i).norm());
        }
        const double e = std::exp(-widest);
        out.weight = e / ((1.0 + e) * (1.0 + e));
        const Eigen::MatrixXd gram = Eigen::MatrixXd(a.transpose() * a) / m;
        const double low =
            Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram, Eigen::EigenvaluesOnly)
                .eigenvalues()
                .minCoeff();
        out.gram_min = std::max(0.0, low - 1e-12 * gram.norm());
      },
      f.data().features);
}

/// The certificate for logistic regression, or holds = false with the reason in `note` (then the
/// bound keeps the global constant μ = λ₂ and the global ζ² supremum).
LocalCertificate local_certificate(const RunPlan& plan,
                                   const Coefficients& c,
                                   const Eigen::VectorXd& x_star,
                                   const Eigen::MatrixXd& at_star,
                                   const GroupConstants& groups) {
  const auto& f = *plan.objective;
  LocalCertificate out;
  const std::vector<double> norms = group_gradient_norms(at_star, c.group);
  const auto radius = iterate_radius(plan, c, norms, x_star.norm(), &out.note);
  if (!radius) {
    return out;
  }
  // The ball also holds x_c (‖x_c − x*‖ ≤ |1 − c|‖x*‖ with the global μ = λ₂), so every segment
  // [x_t, x_c] the PL step uses.
  out.radius = std::max(*radius, std::abs(1.0 - c.mean) * x_star.norm());
  out.zeta_squared = 0.0;
  const bool bounded = f.loss().traits().bounded_derivative;
  for (std::size_t g = 0; g < norms.size(); ++g) {
    const double along = norms[g] + groups.smoothness[g] * out.radius;
    const double v = bounded ? std::min(groups.gradient_sup[g], along) : along;
    out.zeta_squared += v * v;
  }
  if (f.loss().name() != "logistic" || !(f.l2() > 0.0)) {
    out.note = "the local PL constant is derived for logistic regression with l2 > 0";
    return out;
  }
  if (f.dimension() > kMaxCertificateFeatures) {
    out.note = fmt::format(
        "p = {} > {}: lambda_min(A^T A/m) not computed", f.dimension(), kMaxCertificateFeatures);
    return out;
  }
  ball_curvature(f, x_star, out);
  out.pl_constant = out.gram_min * out.weight + f.l2();
  out.holds = out.pl_constant > f.l2();
  out.note = out.holds ? "certified: every iterate stays in the ball (worst-case decode each step)"
                       : "the ball is too wide: its minimum logistic weight adds nothing to l2";
  return out;
}

/// ∇F_g(x) = H_g x − h_g read off p + 1 gradient passes (least squares is exactly affine).
void least_squares_groups(const models::Objective& f,
                          int d,
                          std::vector<Eigen::MatrixXd>& hessians,
                          std::vector<Eigen::VectorXd>& offsets) {
  const Eigen::Index p = f.dimension();
  const int groups = (f.partitions() + d - 1) / d;
  auto grouped = [&](const Eigen::VectorXd& x) {
    Eigen::MatrixXd pg;
    f.evaluate(x, &pg);
    Eigen::MatrixXd out(p, groups);
    for (int g = 0; g < groups; ++g) {
      const Eigen::Index first = static_cast<Eigen::Index>(g) * d;
      const Eigen::Index width = std::min<Eigen::Index>(d, pg.cols() - first);
      out.col(g) = pg.middleCols(first, width).rowwise().sum();
    }
    return out;
  };
  const Eigen::MatrixXd at_zero = grouped(Eigen::VectorXd::Zero(p));
  hessians.assign(static_cast<std::size_t>(groups), Eigen::MatrixXd(p, p));
  offsets.clear();
  for (int g = 0; g < groups; ++g) {
    offsets.emplace_back(-at_zero.col(g));
  }
  for (Eigen::Index i = 0; i < p; ++i) {
    const Eigen::MatrixXd at_unit = grouped(Eigen::VectorXd::Unit(p, i)) - at_zero;
    for (int g = 0; g < groups; ++g) {
      hessians[static_cast<std::size_t>(g)].col(i) = at_unit.col(g);
    }
  }
  for (auto& h : hessians) {
    h = 0.5 * (h + h.transpose()).eval();
  }
}

/// Why the exact curve cannot be computed for this objective and scheme; empty when it can.
std::string exact_curve_problem(const models::Objective& f, const Coefficients& c, int groups) {
  const double work = static_cast<double>(groups) * static_cast<double>(f.dimension()) *
                      static_cast<double>(f.dimension());
  std::string why;
  if (f.loss().name() != "least_squares") {
    why = "the exact curve is for least squares";
  } else if (!c.exchangeable) {
    why = "the exact curve needs exact coefficient moments (FRC or uncoded, identical workers)";
  } else if (f.dimension() > kMaxCurveFeatures || work > kMaxCurveWork) {
    why = fmt::format("the exact curve is limited to p <= {} and K*p^2 <= {:g}; got p = {}, K = {}",
                      kMaxCurveFeatures,
                      kMaxCurveWork,
                      f.dimension(),
                      groups);
  }
  return why;
}

/// The law of the covered groups per iteration: from the coefficients, or every group covered.
sim::CoverageLaw coverage_law(const RunPlan& plan, const Coefficients& c, int groups) {
  sim::CoverageLaw law;
  law.covered = c.covered;
  if (law.covered.empty()) {  // α = 1: every group covered
    law.covered.assign(static_cast<std::size_t>(groups) + 1, 0.0);
    law.covered.back() = 1.0;
  } else {
    law.rescale = plan.scheme.rescale;
    law.expected_q = plan.scheme.erasure_probability;
  }
  return law;
}

/// Why neither the bound nor the exact curve describes this run's optimiser ("" when they do):
/// both are derived for a constant step on full partition gradients (docs/theory.md).
std::string optimizer_problem(const RunPlan& plan) {
  if (plan.optimizer == OptimizerKind::kErasureHeadAgd) {
    return "derived for gd and nesterov; this run uses erasurehead_agd (optimizer.kind)";
  }
  if (plan.gaussian_start) {
    return "derived from the start x0 = 0; this run starts at a Gaussian point (optimizer.start)";
  }
  if (!plan.schedule.constant()) {
    return fmt::format(
        "derived for a constant step; this run's step follows the {} schedule (optimizer.schedule)",
        plan.schedule.name());
  }
  if (plan.momentum > 0.0) {
    return fmt::format(
        "derived without heavy-ball momentum; this run has momentum {} (optimizer.momentum)",
        plan.momentum);
  }
  if (plan.batch) {
    return fmt::format(
        "derived for full partition gradients; this run samples {} rows per partition "
        "(optimizer.batch), and that sampling noise is not in it",
        *plan.batch);
  }
  return "";
}

void exact_curve(const RunPlan& plan, const Coefficients& c, nlohmann::json& out) {
  const auto& f = *plan.objective;
  const int groups = (f.partitions() + c.group - 1) / c.group;
  std::string why = exact_curve_problem(f, c, groups);
  if (const std::string problem = optimizer_problem(plan); why.empty() && !problem.empty()) {
    why = "the exact curve is " + problem;
  }
  if (!why.empty()) {
    out["exact_curve"] = nullptr;
    out["exact_curve_problem"] = why;
    return;
  }
  sim::LeastSquaresCurveInputs in;
  least_squares_groups(f, c.group, in.hessians, in.offsets);
  in.l2 = f.l2();
  in.step = plan.step;
  in.optimizer = plan.optimizer == OptimizerKind::kNesterov ? sim::CurveOptimizer::kNesterov
                                                            : sim::CurveOptimizer::kGd;
  in.moments = *c.exchangeable;
  if (in.moments.groups == 1 && groups > 1) {
    // α = 1 for an exact scheme: every group has the same (deterministic) coefficient.
    in.moments.groups = groups;
  }
  // Like the bound, the curve stops at kMaxTheoryIterations: theory's cost must not grow with
  // the iterations it predicts for.
  const int iterations = static_cast<int>(std::min(plan.iterations, kMaxTheoryIterations));
  out["exact_curve"] = sim::least_squares_expected_gap(in, iterations);
  const sim::CoverageLaw law = coverage_law(plan, c, groups);
  const double flops = sim::least_squares_gap_spread_flops(in);
  const int affordable = static_cast<int>(std::min<double>(iterations, kMaxSpreadWork / flops));
  if (affordable < std::min(iterations, kMinSpreadIterations)) {
    out["exact_curve_sd"] = nullptr;
    out["exact_curve_sd_problem"] = fmt::format(
        "the standard deviation needs fourth moments of the state at {:.3g} flops per iteration; "
        "fewer than {} iterations fit in {:g} flops",
        flops,
        kMinSpreadIterations,
        kMaxSpreadWork);
    return;
  }
  const sim::LeastSquaresGapSpread spread =
      sim::least_squares_gap_spread(in, law, iterations, kMaxSpreadWork);
  const auto computed = static_cast<int>(spread.sd.size()) - 1;
  out["exact_curve_sd"] = spread.sd;
  if (computed < iterations) {
    out["exact_curve_sd_problem"] = fmt::format(
        "the standard deviation needs fourth moments of the state at {:.3g} flops per iteration; "
        "computed for t <= {} of {} within {:g} flops",
        flops,
        computed,
        iterations,
        kMaxSpreadWork);
  }
}

std::optional<Coefficients> plan_coefficients(const RunPlan& plan,
                                              const sim::SchemeDescription* scheme,
                                              const sim::IterationTimePrediction* timing,
                                              std::string* why) {
  if (plan.stragglers != sim::StragglerPolicy::kCancel) {
    *why =
        "stragglers finish/drain: which workers are heard depends on earlier iterations, so the "
        "coefficients are not independent across iterations; no bound derived";
    return std::nullopt;
  }
  if (plan.scheme.rule->partition_orders() != nullptr) {
    // Multi-message decodes by coverage, not by the heard set (sim/multi_message.h): without a
    // deadline it waits for every partition (α = 1); with one, α_j is the coverage indicator,
    // whose joint law the theory does not derive.
    if (plan.scheme.rule->deadline()) {
      *why =
          "multi_message with a deadline: the joint law of the partitions received is not "
          "derived; no bound";
      return std::nullopt;
    }
    Coefficients c;
    c.exchangeable = sim::CoefficientMoments{1, 1.0, 1.0, 1.0};
    c.method = "exact scheme (multi_message waits for every partition: alpha = 1)";
    c.alpha_max = 1.0;
    return c;
  }
  if (plan.scheme.decoder == sim::DecoderKind::kExact && scheme != nullptr && timing != nullptr &&
      timing->q > 0.0) {
    *why = "the exact decoder stops the run at the first non-decodable iteration";
    return std::nullopt;
  }
  if (scheme != nullptr && timing != nullptr) {
    if (auto c = exact_coefficients(plan, *scheme, *timing)) {
      return c;
    }
  }
  return heard_set_coefficients(plan, why);
}

/// The local certificate's keys (`local_pl`).
nlohmann::json certificate_json(const LocalCertificate& c) {
  return {{"certified", c.holds},
          {"radius", c.radius},
          {"min_weight", c.weight},
          {"gram_min_eigenvalue", c.gram_min},
          {"pl_constant", c.pl_constant},
          {"zeta_squared",
           std::isfinite(c.zeta_squared) ? nlohmann::json(c.zeta_squared) : nlohmann::json()},
          {"note", c.note}};
}

/// The bound's output keys (docs/convergence.md, "Output keys of the bound").
void bound_json(const sim::CodedBound& b, nlohmann::json& out) {
  out["bound"] = b.bound;
  // Without a PL route (only the convex one) there is no contraction and no finite floor.
  out["contraction"] =
      std::isfinite(b.contraction) ? nlohmann::json(b.contraction) : nlohmann::json();
  out["noise_floor"] = std::isfinite(b.floor) ? nlohmann::json(b.floor) : nlohmann::json();
  out["bound_vacuous"] = b.vacuous;
  out["bound_convex_route"] = b.convex_route;
  if (b.convex_route) {
    nlohmann::json pl = nlohmann::json::array();
    for (const double v : b.pl_bound) {
      pl.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json());
    }
    out["bound_pl_routes"] = std::move(pl);
  }
  out["bound_convex_iterations"] = b.convex_iterations;
  out["bound_smallest"] =
      b.smallest_at > 0
          ? nlohmann::json{{"iteration", b.smallest_at},
                           {"value", b.bound[static_cast<std::size_t>(b.smallest_at)]}}
          : nlohmann::json();
  out["mean_coefficient"] = b.mean;
  out["minimiser_shift"] = b.minimiser_shift;
  out["bound_rounding_margin"] = b.rounding_margin;
}

/// The coded bound's inputs, with the local certificate where it holds; false with `why` when
/// the bound does not apply.
bool bound_predictions(const RunPlan& plan,
                       const Coefficients& coefficients,
                       const models::Optimum& opt,
                       double f0,
                       const Eigen::MatrixXd& pg,
                       nlohmann::json& out,
                       std::string* why) {
  const auto& f = *plan.objective;
  sim::CodedBoundInputs in;
  in.smoothness = plan.smoothness;
  in.pl_constant = std::min(*f.pl_constant(), plan.smoothness);
  in.l2 = f.l2();
  in.step = plan.step;
  in.mean = coefficients.mean;
  in.bias = coefficients.bias;
  in.variance = coefficients.variance;
  Eigen::MatrixXd at_star;
  f.evaluate(opt.x, &at_star);
  in.zeta_star_squared = group_gradient_squared(at_star, coefficients.group);
  const GroupConstants groups = group_constants(f, coefficients.group);
  in.group_smoothness_squared = groups.smoothness_squared;
  in.group_smoothness_max = groups.smoothness.empty() ? 0.0
                                                      : *std::max_element(groups.smoothness.begin(),
                                                                          groups.smoothness.end());
  if (f.loss().traits().bounded_derivative) {
    // |ℓ'(z; b)| = |b|σ(−bz) ≤ |b|: a supremum of ζ² over every x.
    in.zeta_sup_squared = groups.gradient_sup_squared;
    out["zeta_sup_squared"] = in.zeta_sup_squared;
  }
  const LocalCertificate local = local_certificate(plan, coefficients, opt.x, at_star, groups);
  out["local_pl"] = certificate_json(local);
  in.zeta_sup_squared = std::min(in.zeta_sup_squared, local.zeta_squared);
  if (local.holds) {
    in.pl_constant = std::max(in.pl_constant, std::min(local.pl_constant, plan.smoothness));
  }
  in.x_star_norm = opt.x.norm();
  in.initial_gap = std::max(0.0, f0 - opt.value);
  in.value_scale = std::abs(opt.value) + std::abs(f0);
  in.initial_data_gradient_squared = pg.rowwise().sum().squaredNorm();
  out["zeta_star_squared"] = in.zeta_star_squared;
  out["group_smoothness_squared"] = in.group_smoothness_squared;
  out["bound_pl_constant"] = in.pl_constant;
  const auto bound_iterations = std::min(plan.iterations, kMaxTheoryIterations);
  out["bound_iterations"] = bound_iterations;
  const auto b = sim::coded_pl_bound(in, static_cast<int>(bound_iterations), why);
  if (!b) {
    return false;
  }
  bound_json(*b, out);
  return true;
}

}  // namespace

nlohmann::json convergence_predictions(const RunPlan& plan,
                                       const sim::SchemeDescription* scheme,
                                       const sim::IterationTimePrediction* timing) {
  nlohmann::json out;
  if (auto problem = convergence_cost_problem(plan)) {
    out["convergence_problem"] = *problem;
    if (!plan.objective->loss().traits().convex) {
      out["bound"] = nullptr;  // a non-convex model: stated, not merely not computed
      out["bound_problem"] = *problem;
    }
    return out;
  }
  const auto& f = *plan.objective;
  std::string why;
  const auto coefficients = plan_coefficients(plan, scheme, timing, &why);
  const auto mu = f.pl_constant();
  const models::Optimum opt = plan_optimum(plan).optimum;
  if (!opt.converged) {
    out["convergence_problem"] = "f* not computed: " + opt.failure;
    return out;
  }
  Eigen::MatrixXd pg;
  const double f0 = f.evaluate(Eigen::VectorXd::Zero(f.dimension()), &pg);
  out["smoothness"] = plan.smoothness;
  out["pl_constant"] = mu ? nlohmann::json(*mu) : nlohmann::json();
  out["f_star"] = opt.value;
  out["f_star_method"] = opt.method;
  out["initial_gap"] = f0 - opt.value;
  out["step"] = plan.step;
  if (coefficients) {
    out["coefficient_moments"] = {{"method", coefficients->method},
                                  {"group_size", coefficients->group},
                                  {"mean", coefficients->mean},
                                  {"variance", coefficients->variance},
                                  {"bias", coefficients->bias}};
    exact_curve(plan, *coefficients, out);
  } else {
    out["exact_curve"] = nullptr;
    out["exact_curve_problem"] = why;
  }
  if (!coefficients) {
  } else if (!mu || *mu <= 0.0) {
    why = "no PL constant: logistic regression needs l2 > 0";
  } else if (plan.optimizer != OptimizerKind::kGd) {
    why = "the bound is derived for gradient descent only (see exact_curve for least squares)";
  } else if (auto problem = optimizer_problem(plan); !problem.empty()) {
    why = "the bound is " + problem;
  } else if (bound_predictions(plan, *coefficients, opt, f0, pg, out, &why)) {
    return out;
  }
  out["bound"] = nullptr;
  out["bound_problem"] = why;
  return out;
}

nlohmann::json simulated_iteration_time(const RunPlan& plan, std::uint64_t asked) {
  // A linear-algebra decode per new stopping set: fewer draws past the decode budget.
  const std::uint64_t draws = simulation_cost(plan, asked).draws;
  sim::DelayOnlySimulator s(plan.make_delays(),
                            plan.scheme.rule,
                            plan.scheme.code,
                            plan.stragglers,
                            derive_seed(plan.seed, 0x7e0b),
                            plan.network,
                            sim::Sampler::kWorkers,
                            plan.collective);
  s.count_coverage(false);  // only the times are read (and a group code's erasures, kept)
  double wall = 0.0;
  const sim::DelayOnlyStatistics stats =
      s.run(draws, [&](const sim::DelayOnlyIteration& it) { wall += it.wall_time; });
  // Under finish/drain the cancel-policy q does not apply: report the simulated erased fraction.
  return {{"method", "simulation"},
          {"draws", draws},
          {"draws_asked", asked},
          {"group_erasure_probability",
           stats.groups > 0 ? nlohmann::json(stats.erasure_fraction()) : nlohmann::json()},
          {"q2", nullptr},
          {"expected_iteration_time", stats.mean},
          {"iteration_time_se", stats.standard_error()},
          {"iteration_time_sd", std::sqrt(stats.variance())},
          {"expected_wall_time", wall / static_cast<double>(draws)}};
}

sim::IterationTimeSimulation iteration_time_simulation(const RunPlan& plan, std::uint64_t draws) {
  return [&plan, draws] {
    const nlohmann::json s = simulated_iteration_time(plan, draws);
    const auto& q = s["group_erasure_probability"];
    return sim::SimulatedIterationTime{s["expected_iteration_time"].get<double>(),
                                       s["iteration_time_sd"].get<double>(),
                                       s["iteration_time_se"].get<double>(),
                                       q.is_number() ? q.get<double>() : std::nan(""),
                                       s["draws"].get<std::uint64_t>()};
  };
}

sim::PredictionOptions prediction_options(const RunPlan& plan, std::uint64_t draws) {
  sim::PredictionOptions o;
  o.simulate = iteration_time_simulation(plan, draws);
  return o;
}

void simulate_training(const RunPlan& plan,
                       std::uint64_t delay_seed,
                       const std::function<void(const sim::TraceRow&)>& on_row) {
  auto optimizer = plan.make_optimizer();
  if (plan.update) {  // an update rule: the asynchronous loop on its own clock
    sim::AsynchronousCluster cluster(plan.make_delays(), *plan.update, delay_seed, plan.network);
    sim::train_asynchronous(
        *plan.objective,
        nullptr,
        *plan.scheme.code,
        *optimizer,
        cluster,
        sim::AsynchronousOptions{{plan.iterations}, plan.update->step, {}, delay_seed},
        on_row);
    return;
  }
  auto cluster = plan.make_cluster(delay_seed);
  // The seed also draws the anytime rule's row samples (unused by every other rule).
  sim::SimulatedBackend backend(
      plan.objective, plan.scheme, std::move(cluster), nullptr, std::nullopt, delay_seed);
  sim::train(
      *plan.objective, nullptr, *optimizer, backend, sim::TrainingOptions{plan.iterations}, on_row);
}

MeasuredGap measure_gap(const RunPlan& plan, int repetitions, std::uint64_t seed, double f_star) {
  const auto size = static_cast<std::size_t>(plan.iterations) + 1;
  std::vector<std::vector<double>> gaps(size);  // gaps[t][run]
  for (int rep = 0; rep < repetitions; ++rep) {
    simulate_training(
        plan, derive_seed(seed, static_cast<std::uint64_t>(rep)), [&](const sim::TraceRow& row) {
          gaps[row.iteration].push_back(row.loss - f_star);
        });
  }
  MeasuredGap out;
  for (const auto& g : gaps) {
    const auto n = static_cast<double>(g.size());
    // Two passes, centred on the first run: the gaps of different runs can agree to many digits,
    // and identical gaps (t = 0) then give their value exactly.
    double shift = 0.0;
    for (const double v : g) {
      shift += v - g.front();
    }
    const double mean = g.front() + shift / n;
    double m2 = 0.0;
    double m4 = 0.0;
    for (const double v : g) {
      const double d2 = (v - mean) * (v - mean);
      m2 += d2;
      m4 += d2 * d2;
    }
    const double var = n > 1 ? m2 / (n - 1.0) : 0.0;
    const double sd = std::sqrt(var);
    out.mean.push_back(mean);
    out.se.push_back(std::sqrt(var / n));
    out.sd.push_back(sd);
    // The sd's standard error: the larger of the delta method with the sample kurtosis,
    // √((μ̂₄ − s⁴)/n)/(2s), and a bootstrap over runs; both understate it under skew at small n.
    const double delta =
        sd > 0.0 ? std::sqrt(std::max(0.0, m4 / n - var * var) / n) / (2.0 * sd) : 0.0;
    out.sd_se.push_back(std::max(
        delta, bootstrap_sd_se(g, derive_seed(derive_seed(seed, 0xb0075), out.sd.size()))));
  }
  out.runs = std::move(gaps);
  return out;
}

}  // namespace stragglersim::experiments

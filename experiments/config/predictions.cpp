#include "experiments/config/predictions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

#include "codes/fractional_repetition_code.h"
#include "models/optimum.h"
#include "sim/stopping_rule.h"
#include "sim/theory/convergence_theory.h"

namespace stragglersim::experiments {

std::optional<sim::SchemeDescription> describe_scheme(const RunPlan& plan, std::string* why) {
  const auto& code = *plan.scheme.code;
  const auto& rule = *plan.scheme.rule;
  sim::SchemeDescription s;
  s.workers = code.workers();
  const std::string name = code.name();
  if (name == "uncoded") {
    s.code = sim::CodeFamily::kUncoded;
    s.d = 1;
  } else if (const auto* frc = dynamic_cast<const codes::FractionalRepetitionCode*>(&code)) {
    s.code = sim::CodeFamily::kFractionalRepetition;
    s.d = frc->replication();
  } else if (name == "crc" || name == "cyclic_mds") {
    s.code = sim::CodeFamily::kCyclic;
    s.d = code.stragglers_tolerated() + 1;
  } else {
    *why = fmt::format("no timing model for code '{}' (random or non-uniform supports)", name);
    return std::nullopt;
  }
  if (dynamic_cast<const sim::AllStopping*>(&rule) != nullptr) {
    s.rule = sim::RuleKind::kAll;
  } else if (const auto* f = dynamic_cast<const sim::FirstRStopping*>(&rule)) {
    s.rule = sim::RuleKind::kFirstR;
    s.r = f->r();
  } else if (const auto* dl = dynamic_cast<const sim::DeadlineStopping*>(&rule)) {
    s.rule = sim::RuleKind::kDeadline;
    s.deadline = dl->after();
  } else if (dynamic_cast<const sim::DecodableStopping*>(&rule) != nullptr) {
    s.rule = sim::RuleKind::kDecodable;
  } else if (const auto* fd = dynamic_cast<const sim::FirstROrDecodableStopping*>(&rule)) {
    s.rule = sim::RuleKind::kFirstROrDecodable;
    s.r = fd->r();
  } else {
    *why = fmt::format("no timing model for rule '{}'", rule.name());
    return std::nullopt;
  }
  return s;
}

int group_size(const RunPlan& plan) {
  if (const auto* frc =
          dynamic_cast<const codes::FractionalRepetitionCode*>(plan.scheme.code.get())) {
    return frc->replication();
  }
  return 1;
}

std::optional<ConvergenceInputs> convergence_inputs(const RunPlan& plan, std::string* why) {
  const auto& f = *plan.objective;
  std::optional<double> mu;
  try {
    mu = f.pl_constant();
  } catch (const std::invalid_argument& e) {  // the Gram matrix is too large to decompose
    *why = e.what();
    return std::nullopt;
  }
  if (!mu || *mu <= 0.0) {
    *why = "no PL constant: logistic regression needs l2 > 0";
    return std::nullopt;
  }
  ConvergenceInputs in;
  in.smoothness = plan.smoothness;
  in.pl_constant = *mu;
  // Above 4000 features f* takes 20 000 accelerated-gradient steps (a data pass and ~6 vector
  // operations each): refused when that is far beyond the run it predicts for, so `theory`
  // stays bounded (10⁶ features would take minutes where the run takes a second).
  const double p = static_cast<double>(f.dimension());
  const double pass = std::visit([](const auto& a) { return static_cast<double>(a.nonZeros()); },
                                 f.data().features);
  const double run_cost = static_cast<double>(plan.iterations) * (pass + p * f.partitions());
  const double solve_cost = 20000.0 * (pass + 6.0 * p);
  if (f.dimension() > 4000 && solve_cost > std::max(10.0 * run_cost, kTheoryWorkBudget)) {
    *why = fmt::format(
        "f* not computed: 20000 accelerated-gradient steps over {} features would cost far more "
        "than the run",
        f.dimension());
    return std::nullopt;
  }
  const models::Optimum opt = models::solve_optimum(f);
  in.f_star = opt.value;
  in.optimum_method = opt.method;
  // ζ² "along the run": the largest Σ_g ‖∇F_g‖² on the exact-gradient GD path of the configured
  // step and length (the estimator's iterates stay near it; check reports the noisy runs' own).
  const int d = group_size(plan);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
  Eigen::MatrixXd pg;
  const double f0 = f.evaluate(x, &pg);
  in.initial_gap = f0 - in.f_star;
  // The path's first kMaxTheoryIterations steps: theory's cost must not grow with iterations.
  for (std::uint64_t t = 0; t <= std::min(plan.iterations, kMaxTheoryIterations); ++t) {
    if (t > 0) {
      f.evaluate(x, &pg);
    }
    double zeta = 0.0;
    for (Eigen::Index g = 0; g < pg.cols(); g += d) {
      zeta +=
          pg.middleCols(g, std::min<Eigen::Index>(d, pg.cols() - g)).rowwise().sum().squaredNorm();
    }
    in.zeta_squared = std::max(in.zeta_squared, zeta);
    x -= plan.step * (pg.rowwise().sum() + f.l2() * x);
  }
  return in;
}

namespace {

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

nlohmann::json predictions(const RunPlan& plan, bool convergence) {
  nlohmann::json out;
  std::string why;
  const auto scheme = describe_scheme(plan, &why);
  if (!scheme) {
    out["iteration_time_problem"] = why;
    return out;
  }
  const auto delays = plan.make_delays();
  const sim::IterationTimePrediction p = sim::predict_iteration_time(*scheme, *delays);
  out["expected_iteration_time"] = number_or_null(p.mean);
  out["iteration_time_sd"] = number_or_null(p.sd);
  out["group_erasure_probability"] = number_or_null(p.q);
  out["q2"] = number_or_null(p.q2);
  out["method"] = p.method;

  if (!convergence) {
    return out;
  }
  if (scheme->code == sim::CodeFamily::kFractionalRepetition &&
      scheme->rule == sim::RuleKind::kFirstR) {
    if (const auto* base = dynamic_cast<const sim::ShiftedExponentialDelay*>(delays.get())) {
      std::vector<int> ns;
      for (int n = 8; n <= 65536; n *= 2) {
        if (n % scheme->d == 0) {
          ns.push_back(n);
        }
      }
      const double fraction = static_cast<double>(scheme->r) / scheme->workers;
      const auto points = sim::predicted_speedup(
          ns, {scheme->d, fraction}, base->shift(), base->rate(), base->tail());
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& pt : points) {
        rows.push_back({{"workers", pt.workers},
                        {"r", pt.r},
                        {"uncoded", pt.uncoded},
                        {"frc", pt.frc},
                        {"erasurehead", pt.erasurehead},
                        {"speedup_vs_uncoded", pt.speedup_vs_uncoded},
                        {"speedup_vs_frc", pt.speedup_vs_frc}});
      }
      out["speedup_vs_n"] = rows;
    }
  }

  if (plan.delay_only()) {
    return out;
  }
  const auto in = convergence_inputs(plan, &why);
  if (!in) {
    out["convergence_problem"] = why;
    return out;
  }
  out["smoothness"] = in->smoothness;
  out["pl_constant"] = in->pl_constant;
  out["f_star"] = in->f_star;
  out["f_star_method"] = in->optimum_method;
  out["zeta_squared"] = in->zeta_squared;
  out["step"] = plan.step;
  if (plan.step > 1.0 / in->smoothness * (1.0 + 1e-12) || std::isnan(p.q)) {
    out["convergence_problem"] =
        std::isnan(p.q) ? "the scheme has no group-erasure probability"
                        : fmt::format("the bound needs step <= 1/beta = {:.6g}; got {:.6g}",
                                      1.0 / in->smoothness,
                                      plan.step);
    return out;
  }
  sim::PlBoundParameters b;
  b.smoothness = in->smoothness;
  b.pl_constant = std::min(in->pl_constant, in->smoothness);
  b.step = std::min(plan.step, 1.0 / in->smoothness);
  b.zeta_squared = in->zeta_squared;
  b.initial_gap = std::max(0.0, in->initial_gap);
  b.q = p.q;
  b.q2 = std::min(p.q2, p.q);
  out["contraction"] = sim::pl_contraction(b);
  out["noise_floor"] = sim::pl_noise_floor(b);
  // Per iteration up to kMaxTheoryIterations (bound_iterations says how far the array goes).
  const auto bound_iterations = std::min(plan.iterations, kMaxTheoryIterations);
  out["bound"] = sim::pl_bound(b, static_cast<int>(bound_iterations));
  out["bound_iterations"] = bound_iterations;
  if (plan.target_loss) {
    const double epsilon = *plan.target_loss - in->f_star;
    const auto its = epsilon > 0 ? sim::iterations_to_suboptimality(b, epsilon) : std::nullopt;
    out["iterations_to_target"] = its ? nlohmann::json(*its) : nlohmann::json();
    out["time_to_target"] =
        its ? nlohmann::json(static_cast<double>(*its) * p.mean) : nlohmann::json();
  }
  return out;
}

}  // namespace stragglersim::experiments

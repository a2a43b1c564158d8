// The `check` rows of the convergence predictions (experiments/predict): the coded bound, the
// exact least-squares curve, its standard deviation and the fitted rate and floor, against the
// mean of repeated runs; logistic regression against the theorem's bound, floor and rate.

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/cli/check_claims.h"
#include "experiments/config/run_plan.h"
#include "experiments/output_file.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/predict/measured_convergence.h"
#include "experiments/predict/predictions.h"
#include "models/base/invariant.h"
#include "sim/theory/convergence_theory.h"

namespace stragglersim::experiments::check {

namespace {

/// One-sided: the mean of `repetitions` runs under the coded bound + 4 s.e. at every t; the row
/// shows the t where the margin is smallest.
CheckRow coded_bound_row(const std::string& label,
                         const nlohmann::json& p,
                         const MeasuredGap& m,
                         int repetitions) {
  std::size_t worst = 0;
  double worst_margin = 1e300;
  bool pass = true;
  for (std::size_t t = 0; t < m.mean.size(); ++t) {
    const double bound = p["bound"][t].get<double>();
    const double margin = bound + 4.0 * m.se[t] - m.mean[t];
    pass = pass && margin >= 0.0;
    // t = 0 is exact (the bound starts at f(x₀) − f*): report the closest later t.
    if (t > 0 && margin < worst_margin) {
      worst_margin = margin;
      worst = t;
    }
  }
  return {fmt::format(
              "mean f-f* <= coded bound, every t: {} ({} runs; t={})", label, repetitions, worst),
          p["bound"][worst].get<double>(),
          m.mean[worst],
          4.0 * m.se[worst],
          pass};
}

CheckRow coded_bound_row(const std::string& label, const nlohmann::json& config, int repetitions) {
  const RunPlan plan = plan_run(config, "check", ".");
  const nlohmann::json p = predictions(plan);
  if (!p["bound"].is_array()) {
    return {label + ": no bound (" + p.value("bound_problem", std::string()) + ")", 0, 0, 0, false};
  }
  const MeasuredGap m = measure_gap(plan, repetitions, 17, p["f_star"].get<double>());
  return coded_bound_row(label, p, m, repetitions);
}

/// Logistic regression has no exact curve: the measured mean stays under the bound at every t,
/// and the fitted floor and rate (fit_rate_and_floor, 95% intervals) are no worse than the
/// theorem's noise floor and per-step factor ρ (one-sided: the interval's low end at or below).
void logistic_theorem_rows(const std::string& label,
                           const nlohmann::json& config,
                           int repetitions,
                           std::vector<CheckRow>& rows) {
  const RunPlan plan = plan_run(config, "check", ".");
  const nlohmann::json p = predictions(plan);
  STRAGGLERSIM_ASSERT(
      p["bound"].is_array() && !p["noise_floor"].is_null() && !p["contraction"].is_null(),
      "the check's logistic configs have a PL bound");
  const MeasuredGap m = measure_gap(plan, repetitions, 29, p["f_star"].get<double>());
  rows.push_back(coded_bound_row(label, p, m, repetitions));
  const auto fit = fit_rate_and_floor(m.runs);
  STRAGGLERSIM_ASSERT(fit && fit->rate, "the check's logistic runs have a rate and a floor");
  const double floor = p["noise_floor"].get<double>();
  const double rho = p["contraction"].get<double>();
  rows.push_back({fmt::format("measured floor CI reaches the theorem's or below, t >= {}: {} ({} "
                              "runs)",
                              fit->floor_first,
                              label,
                              repetitions),
                  floor,
                  fit->floor,
                  (fit->floor_interval.high - fit->floor_interval.low) / 2.0,
                  fit->floor_interval.low <= floor});
  rows.push_back({fmt::format("measured rate CI reaches the theorem's rho or below, t = 1..{}: {} "
                              "({} runs)",
                              fit->fit_last,
                              label,
                              repetitions),
                  rho,
                  *fit->rate,
                  (fit->rate_interval.high - fit->rate_interval.low) / 2.0,
                  fit->rate_interval.low <= rho});
}

/// A logistic config on the Gaussian mixture with shifted-exponential delays, FRC d = 2.
nlohmann::json logistic_config(int rows, int features, double l2, int n, int r, int iterations) {
  return {{"name", "check"},
          {"seed", 5},
          {"workers", n},
          {"data",
           {{"source", "synthetic"},
            {"generator", "gaussian_mixture"},
            {"rows", rows},
            {"features", features},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "logistic"}, {"l2", l2}}},
          {"code", {{"kind", "frc"}, {"d", 2}}},
          {"stopping", {{"rule", "first_r"}, {"r", r}}},
          {"delay", {{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 1.0}}},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}}};
}

/// The exact standard deviation of f(x_t) against the runs' sample sd, within 4 s.e. of the
/// sample sd at every t it is computed for (t ≥ 1; t = 0 is deterministic).
void sd_row(const char* optimizer,
            int repetitions,
            const nlohmann::json& exact_sd,
            const MeasuredGap& m,
            std::vector<CheckRow>& rows) {
  if (!exact_sd.is_array() || exact_sd.size() < 2) {
    return;
  }
  std::size_t worst = 1;
  double worst_z = -1.0;
  bool pass = true;
  for (std::size_t t = 1; t < exact_sd.size(); ++t) {
    const double diff = std::abs(m.sd[t] - exact_sd[t].get<double>());
    pass = pass && diff <= 4.0 * m.sd_se[t];
    if (diff / m.sd_se[t] > worst_z) {
      worst_z = diff / m.sd_se[t];
      worst = t;
    }
  }
  rows.push_back({fmt::format("exact LS sd of f = sample sd, t<={}: {} ({} runs; t={})",
                              exact_sd.size() - 1,
                              optimizer,
                              repetitions,
                              worst),
                  exact_sd[worst].get<double>(),
                  m.sd[worst],
                  4.0 * m.sd_se[worst],
                  pass});
}

/// The measured floor and rate (fit_rate_and_floor over the runs) contain the exact curve's on
/// the same windows: the fit is checked against the truth, not against the theorem's bound.
void rate_and_floor_rows(const MeasuredGap& m,
                         const std::vector<double>& exact_curve,
                         int repetitions,
                         std::vector<CheckRow>& rows) {
  const auto fit = fit_rate_and_floor(m.runs);
  STRAGGLERSIM_ASSERT(fit && fit->rate, "the check's least-squares runs have a rate and a floor");
  const CurveRateFloor exact = curve_rate_and_floor(exact_curve, fit->floor_first, fit->fit_last);
  const auto inside = [](double x, const Interval& ci) { return ci.low <= x && x <= ci.high; };
  rows.push_back({fmt::format("measured floor CI holds the exact curve's, t >= {} ({} runs)",
                              fit->floor_first,
                              repetitions),
                  exact.floor,
                  fit->floor,
                  (fit->floor_interval.high - fit->floor_interval.low) / 2.0,
                  inside(exact.floor, fit->floor_interval)});
  rows.push_back({fmt::format("measured rate CI holds the exact curve's, t = 1..{} ({} runs)",
                              fit->fit_last,
                              repetitions),
                  exact.rate.value_or(0.0),
                  *fit->rate,
                  (fit->rate_interval.high - fit->rate_interval.low) / 2.0,
                  exact.rate && inside(*exact.rate, fit->rate_interval)});
}

}  // namespace

void logistic_rows(bool quick, std::vector<CheckRow>& rows) {
  const int repetitions = quick ? 100 : 200;
  for (const double l2 : {0.1, 0.01}) {
    logistic_theorem_rows(fmt::format("logistic m=600 p=10 l2={} FRC 6/12", l2),
                          logistic_config(600, 10, l2, 12, 6, 200),
                          repetitions,
                          rows);
  }
  // The default ErasureHead config's shape (experiments/examples/default_erasurehead.json),
  // 200 iterations: the PL routes' floor is vacuous there, the convex route is not.
  nlohmann::json config = logistic_config(6000, 200, 1e-4, 30, 15, 200);
  config["seed"] = 7;
  config["delay"] = {{"kind", "shifted_exponential"}, {"shift", 0.1}, {"rate", 1.0}};
  logistic_theorem_rows("default ErasureHead (logistic m=6000 p=200 l2=1e-4 FRC 15/30)",
                        config,
                        quick ? 20 : 40,
                        rows);
}

void coded_bound_rows(bool quick, std::vector<CheckRow>& rows) {
  const int repetitions = quick ? 20 : 40;
  nlohmann::json frc = convergence_config(600, 20, 1.0, 60, 60);
  frc["code"] = {{"kind", "frc"}, {"d", 2}};
  frc["stopping"] = {{"rule", "first_r"}, {"r", 30}};
  for (const char* rescale : {"none", "expected", "empirical"}) {
    frc["rescale"] = rescale;
    rows.push_back(
        coded_bound_row(fmt::format("LS l2=1 FRC first_r 30/60 {}", rescale), frc, repetitions));
  }
  // BGC loads differ between workers (so do their delays): its exact moments exist under a
  // deadline, where each worker is heard independently; optimal decoding walks the 2^12 sets.
  // (BGC's one-step decode is biased for a fixed B, E α_j = col_j/d: b² ≈ k/d, no bound.)
  nlohmann::json approx = convergence_config(400, 10, 1.0, 12, 40);
  approx["stopping"] = {{"rule", "deadline"}, {"after", 7.0}};
  approx["code"] = {{"kind", "bgc"}, {"d", 3}, {"decoder", "optimal"}};
  rows.push_back(coded_bound_row("LS l2=1 BGC optimal deadline 7 s, n=12", approx, repetitions));
  approx = convergence_config(400, 10, 1.0, 20, 40);
  approx["stopping"] = {{"rule", "first_r"}, {"r", 14}};
  approx["code"] = {{"kind", "sgc"}, {"d", 3}, {"decoder", "optimal"}};
  rows.push_back(coded_bound_row("LS l2=1 SGC optimal 14/20", approx, repetitions));
  approx["code"] = {{"kind", "sgc"}, {"d", 3}, {"decoder", "one_step"}};
  rows.push_back(coded_bound_row("LS l2=1 SGC one_step 14/20", approx, repetitions));
  // Load 3: T = 3 + 3·Exp(1), so a worker is heard by τ = 5 s with probability 1 − e^{−2/3}.
  approx["stopping"] = {{"rule", "deadline"}, {"after", 5.0}};
  rows.push_back(coded_bound_row("LS l2=1 SGC one_step deadline 5 s", approx, repetitions));
}

/// The exact least-squares curve against the mean of repeated runs: the t of largest |z|.
void exact_curve_rows(bool quick, std::vector<CheckRow>& rows, const std::filesystem::path& out) {
  const int repetitions = quick ? 100 : 200;
  nlohmann::json config = convergence_config(400, 20, 0.1, 20, 40);
  config["code"] = {{"kind", "frc"}, {"d", 2}};
  config["stopping"] = {{"rule", "first_r"}, {"r", 10}};
  std::string csv = "optimizer,iteration,measured_mean,measured_se,exact,bound\n";
  for (const char* optimizer : {"gd", "nesterov"}) {
    config["optimizer"]["kind"] = optimizer;
    const RunPlan plan = plan_run(config, "check", ".");
    const nlohmann::json p = predictions(plan);
    const MeasuredGap m = measure_gap(plan, repetitions, 23, p["f_star"].get<double>());
    std::size_t worst = 1;
    double worst_z = -1.0;
    bool pass = true;
    for (std::size_t t = 0; t < m.mean.size(); ++t) {
      const double exact = p["exact_curve"][t].get<double>();
      const double diff = std::abs(m.mean[t] - exact);
      pass = pass && diff <= 4.0 * m.se[t] + 1e-12 * exact;
      if (t > 0 && diff / m.se[t] > worst_z) {
        worst_z = diff / m.se[t];
        worst = t;
      }
      csv += fmt::format(
          "{},{},{},{},{},{}\n",
          optimizer,
          t,
          m.mean[t],
          m.se[t],
          exact,
          p["bound"].is_array() ? fmt::format("{}", p["bound"][t].get<double>()) : std::string());
    }
    rows.push_back({fmt::format("exact LS curve = mean f-f*, every t: {} m=400 p=20 FRC 10/20 "
                                "l2=0.1 ({} runs; t={})",
                                optimizer,
                                repetitions,
                                worst),
                    p["exact_curve"][worst].get<double>(),
                    m.mean[worst],
                    4.0 * m.se[worst],
                    pass});
    if (std::string(optimizer) == "gd") {
      rate_and_floor_rows(m, p["exact_curve"].get<std::vector<double>>(), repetitions, rows);
    }
    // f(x_t) is a skewed quadratic form: the sample sd of 100 runs and the s.e. estimated from
    // the same runs' fourth moment are both low in most samples, so the row needs the full 200.
    if (!quick) {
      sd_row(optimizer, repetitions, p["exact_curve_sd"], m, rows);
    }
  }
  if (!out.empty()) {
    write_file_atomically(out / "exact_curve.csv", csv);
  }
}

}  // namespace stragglersim::experiments::check

// `stragglersim fit TIMES.csv [--json] [--per-worker] [--out delay.json]`:
// delay models fitted to measured times (docs/fit.md).

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/entry_points.h"
#include "experiments/fit_report.h"
#include "experiments/run_output.h"
#include "experiments/trace_validation.h"

namespace stragglersim::experiments {
namespace {

std::string parameters_text(const sim::FamilyFit& f) {
  std::string s;
  for (const auto& p : f.parameters) {
    s += fmt::format("{}{}={:.6g}", s.empty() ? "" : " ", p.name, p.value);
    if (p.standard_error) {
      s += fmt::format("(±{:.2g})", *p.standard_error);
    }
  }
  if (!f.factors.empty()) {
    s += fmt::format(" factors=[{:.3g}]", fmt::join(f.factors, ", "));
  }
  return s;
}

void print_fits(const sim::DelayFitReport& r) {
  std::size_t width = 4;
  for (const auto& f : r.fits) {
    width = std::max(width, f.flag.size());
  }
  std::cout << fmt::format("{:<20} {:>3} {:>14} {:>14} {:>8} {:>8}  {:<{}}  {}\n",
                           "family",
                           "k",
                           "log L",
                           "AIC",
                           "KS D",
                           "KS p",
                           "flag",
                           width,
                           "parameters (± s.e.)");
  for (const auto& f : r.fits) {
    if (!f.fitted()) {
      std::cout << fmt::format("{:<20} not fitted: {}\n", f.family, f.problem);
      continue;
    }
    std::cout << fmt::format("{:<20} {:>3} {:>14.6f} {:>14.6f} {:>8.5f} {:>8.4f}  {:<{}}  {}\n",
                             f.family,
                             f.parameter_count,
                             f.log_likelihood,
                             f.aic,
                             f.ks.statistic,
                             f.ks.p_value,
                             f.degenerate() ? f.flag : std::string("-"),
                             width,
                             parameters_text(f));
  }
  std::cout << fmt::format("chosen: {}\n", r.choice);
  if (r.every_family_rejected) {
    std::cout << fmt::format(
        "no family describes these times: every fitted family's KS p is below {:g}, so the "
        "chosen one is only the least bad (advise --fit and validate choose by held-out error "
        "among it, the trace replayed in blocks and its empirical marginals)\n",
        sim::kRejectingKsP);
  }
}

/// The test of equal rates when Λ/φ is no number: a worker whose every time is the smallest
/// (Λ = ∞), or batch means that never vary (φ = 0).
std::string no_ratio_statement(const sim::HeterogeneityTest& h) {
  if (!std::isfinite(h.statistic)) {
    return "some worker's times all equal the smallest time (an excess of 0 over the shift, "
           "the likelihood ratio unbounded) while others' do not: heterogeneous workers";
  }
  if (h.statistic > 0.0) {
    return "every worker's batch means are equal (dispersion 0: no variation over the "
           "iterations to test against) while the workers' mean times differ: heterogeneous "
           "workers";
  }
  return "every worker's batch means are equal and so are the workers' mean times (dispersion "
         "0, LR 0): no evidence of heterogeneity";
}

void print_text(const TraceFit& fit) {
  const auto& r = fit.report;
  std::cout << fmt::format(
      "{}: {} workers, {} times{}, {}\n",
      fit.path,
      r.workers,
      r.observations,
      fit.censored > 0 ? fmt::format(" ({} censored left out)", fit.censored) : std::string(),
      r.ordered ? fmt::format("{} iterations in order", fit.iterations)
                : std::string("no iteration order (per-worker pools)"));
  print_fits(r);
  const auto& h = r.heterogeneity;
  if (h.degrees_of_freedom > 0 && (!std::isfinite(h.statistic) || h.dispersion <= 0.0)) {
    // No ratio to print (it would read "LR inf / dispersion 0 = inf"): say what the data are.
    std::cout << "equal rates: " << no_ratio_statement(h) << "\n";
  } else if (h.degrees_of_freedom > 0) {
    std::cout << fmt::format(
        "equal rates: LR {:.4g} / dispersion {:.4g} = {:.4g} on {} df, p = "
        "{:.3g}: {}\n",
        h.statistic,
        h.dispersion,
        h.statistic / h.dispersion,
        h.degrees_of_freedom,
        h.p_value,
        h.heterogeneous() ? fmt::format("heterogeneous workers (p < {})", h.level)
                          : fmt::format("no evidence of heterogeneity at level {}", h.level));
  } else {
    std::cout << "equal rates: not tested (one worker, no spread, or times too large for double "
                 "precision)\n";
  }
  for (std::size_t w = 0; w < fit.per_worker.size(); ++w) {
    std::cout << fmt::format("\nworker {}: {} times\n", w, fit.per_worker[w].observations);
    print_fits(fit.per_worker[w]);
  }
  if (r.best) {
    std::cout << fmt::format("best by AIC: {}\ndelay block: {}\n",
                             r.fits[*r.best].family,
                             delay_block(r.fits[*r.best]).dump());
  }
}

/// The block --out writes: `advise --fit`'s model (entry_points.h fitted_delay: the held-out
/// choice among the AIC family, the trace replayed in blocks and its empirical marginals, on a
/// delay-only config of the trace's workers; `model` other than "auto" as --fit-model), the
/// trace's path relative to the directory of `out`.
FittedDelay written_model(const TraceFit& fit,
                          const nlohmann::json& best,
                          const std::string& path,
                          const std::string& out,
                          const std::string& model) {
  const nlohmann::json config = {{"workers", fit.report.workers}, {"delay", best}};
  return fitted_delay(config, "--out", std::filesystem::path(out).parent_path(), path, model);
}

/// One line on what --out wrote, and when it is the trace itself, that no family describes it.
void print_written(const FittedDelay& written, const std::string& out) {
  const auto& c = written.choice;
  std::string scores;
  for (const auto& m : c.value("scores", nlohmann::json::array())) {
    scores += fmt::format("{}{} {}",
                          scores.empty() ? "" : ", ",
                          m["model"].get<std::string>(),
                          m["score"].is_number()
                              ? fmt::format("{:.2f}%", 100.0 * m["score"].get<double>())
                              : std::string("-"));
  }
  const std::string chosen = c["chosen"].get<std::string>();
  std::cout << fmt::format("model written to {}: {} ({}{})\n",
                           out,
                           chosen,
                           c["reason"].get<std::string>(),
                           scores.empty() ? "" : fmt::format("; held-out error: {}", scores));
  if (chosen == kBlockReplayModel || chosen == kEmpiricalModel) {
    std::cout << fmt::format(
        "no fitted family describes this trace as well as the trace itself: {} wrote the trace "
        "replayed in {} mode (--model family writes the AIC family)\n",
        out,
        written.block["mode"].get<std::string>());
  }
}

int command_fit(const std::string& path,
                bool json,
                bool per_worker,
                const std::string& out,
                const std::string& model) {
  if (model != "auto" && model != "family" && model != "block" && model != "empirical") {
    throw ConfigError(fmt::format(
        "--model: unknown model; got \"{}\"; expected one of: auto, block, empirical, family",
        model));
  }
  std::optional<OutputFile> out_file;  // reserved before the work
  if (!out.empty()) {
    out_file.emplace(out, "--out");
  }
  const TraceFit fit = fit_trace_file(path, per_worker);
  // No family at all (or every one flagged): refused naming the file, --out or not.
  const nlohmann::json best = best_delay_block(fit);
  std::optional<FittedDelay> written;
  if (out_file) {
    written = written_model(fit, best, path, out, model);
    out_file->commit(written->block.dump(2) + "\n");
  }
  if (json) {
    nlohmann::json j = fit_json(fit);
    if (written) {
      j["written"] = written->block;
      j["model_choice"] = written->choice;
    }
    std::cout << j.dump(2) << '\n';
  } else {
    print_text(fit);
    if (written) {
      print_written(*written, out);
    }
  }
  return 0;
}

}  // namespace

Subcommand add_fit_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto per_worker = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>("auto");
  // fit prints no notes: --quiet is accepted so that every command that computes takes it.
  auto quiet = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("fit", "fit delay models to measured times (CSV)");
  cmd->add_option("times", *path, "CSV: iteration,worker,seconds or worker,seconds")->required();
  cmd->add_flag("--json", *json, "print JSON");
  cmd->add_flag("--per-worker", *per_worker, "also fit every worker alone");
  add_output_option(*cmd,
                    "-o,--out",
                    *out,
                    "write the delay block (JSON) validate would choose here (--model)",
                    false);
  cmd->add_option("--model",
                  *model,
                  "the model --out writes: auto (held-out choice, as advise --fit), family (AIC), "
                  "block, empirical")
      ->default_str("auto");
  add_quiet_flag(*cmd, *quiet);
  return {cmd, [path, json, per_worker, out, model] {
            return command_fit(*path, *json, *per_worker, *out, *model);
          }};
}

}  // namespace stragglersim::experiments

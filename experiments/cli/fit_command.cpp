// `stragglersim fit TIMES.csv [--json] [--per-worker] [--out delay.json]`:
// delay models fitted to measured times (docs/fit.md).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/config/config_error.h"
#include "experiments/fit_report.h"
#include "experiments/run_output.h"
#include "fit/delay_trace.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

nlohmann::json family_json(const sim::FamilyFit& f) {
  nlohmann::json j = {{"family", f.family}, {"fitted", f.fitted()}};
  if (!f.fitted()) {
    j["problem"] = f.problem;
    return j;
  }
  nlohmann::json values = nlohmann::json::object();
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& p : f.parameters) {
    values[p.name] = p.value;
    errors[p.name] = p.standard_error ? nlohmann::json(*p.standard_error) : nlohmann::json();
  }
  j["parameters"] = values;
  j["standard_errors"] = errors;
  if (!f.factors.empty()) {
    j["factors"] = f.factors;
  }
  j["parameter_count"] = f.parameter_count;
  j["log_likelihood"] = number_or_null(f.log_likelihood);
  j["aic"] = number_or_null(f.aic);
  j["ks_statistic"] = f.ks.statistic;
  j["ks_p_value"] = f.ks.p_value;
  j["iterations"] = f.iterations;
  j["flag"] = f.degenerate() ? nlohmann::json(f.flag) : nlohmann::json();
  return j;
}

nlohmann::json report_json(const sim::DelayFitReport& r) {
  nlohmann::json fits = nlohmann::json::array();
  for (const auto& f : r.fits) {
    fits.push_back(family_json(f));
  }
  return {{"workers", r.workers},
          {"observations", r.observations},
          {"fits", fits},
          {"best", r.best ? nlohmann::json(r.fits[*r.best].family) : nlohmann::json()},
          {"choice", r.choice}};
}

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
  if (h.degrees_of_freedom > 0) {
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
    std::cout << "equal rates: not tested (one worker or no spread)\n";
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

int command_fit(const std::string& path, bool json, bool per_worker, const std::string& out) {
  const TraceFit fit = fit_trace_file(path, per_worker);
  const nlohmann::json block = best_delay_block(fit);
  if (!out.empty()) {
    write_file_atomically(out, block.dump(2) + "\n");
  }
  if (json) {
    std::cout << fit_json(fit).dump(2) << '\n';
  } else {
    print_text(fit);
  }
  return 0;
}

}  // namespace

TraceFit fit_trace_file(const std::string& path, bool per_worker) {
  sim::DelayTrace trace;
  try {
    trace = sim::read_delay_trace(path);
  } catch (const sim::TraceFileError& e) {
    throw ConfigError(e.what());
  }
  TraceFit fit;
  fit.path = path;
  fit.censored = trace.censored_lines.size();
  fit.iterations = trace.per_iteration.size();
  // Worker sequences in time order: iteration order when the file has it, else
  // file order.
  std::vector<std::vector<double>> sequences(static_cast<std::size_t>(trace.workers));
  if (trace.has_iterations) {
    for (const auto& row : trace.per_iteration) {
      for (std::size_t w = 0; w < row.size(); ++w) {
        if (std::isfinite(row[w])) {
          sequences[w].push_back(row[w]);
        }
      }
    }
  } else {
    for (std::size_t w = 0; w < trace.per_worker.size(); ++w) {
      for (const double t : trace.per_worker[w]) {
        if (std::isfinite(t)) {
          sequences[w].push_back(t);
        }
      }
    }
  }
  // A censored time breaks the chain's order: Markov needs every time of every
  // iteration.
  const bool ordered = trace.has_iterations && fit.censored == 0;
  fit.report = sim::fit_delay_models(sequences, ordered);
  if (per_worker) {
    for (const auto& s : sequences) {
      sim::DelayFitReport r = sim::fit_delay_models({s}, ordered);
      std::erase_if(r.fits, [](const sim::FamilyFit& f) {
        return f.family.starts_with("heterogeneous");  // per-worker factors: one worker
      });
      fit.per_worker.push_back(std::move(r));
    }
  }
  return fit;
}

nlohmann::json delay_block(const sim::FamilyFit& fit) {
  nlohmann::json block = {{"kind", fit.family}};
  for (const auto& p : fit.parameters) {
    block[p.name] = p.value;
  }
  block["tail"] = "load";
  if (!fit.factors.empty()) {
    block["factors"] = fit.factors;
  }
  return block;
}

nlohmann::json best_delay_block(const TraceFit& fit) {
  if (!fit.report.best) {
    throw ConfigError(
        fmt::format("{}: no delay family could be fitted; got {} "
                    "times; expected at least five distinct "
                    "times",
                    fit.path,
                    fit.report.observations));
  }
  return delay_block(fit.report.fits[*fit.report.best]);
}

nlohmann::json fit_json(const TraceFit& fit) {
  nlohmann::json j = report_json(fit.report);
  j["file"] = fit.path;
  j["censored"] = fit.censored;
  j["ordered"] = fit.report.ordered;
  j["iterations"] = fit.iterations;
  const auto& h = fit.report.heterogeneity;
  j["heterogeneity"] = {{"statistic", h.statistic},
                        {"dispersion", h.dispersion},
                        {"degrees_of_freedom", h.degrees_of_freedom},
                        {"p_value", h.p_value},
                        {"level", h.level},
                        {"heterogeneous", h.heterogeneous()},
                        {"mean_excess", h.mean_excess}};
  if (fit.report.best) {
    j["delay"] = delay_block(fit.report.fits[*fit.report.best]);
  }
  if (!fit.per_worker.empty()) {
    j["per_worker"] = nlohmann::json::array();
    for (const auto& r : fit.per_worker) {
      j["per_worker"].push_back(report_json(r));
    }
  }
  return j;
}

Subcommand add_fit_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto per_worker = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("fit", "fit delay models to measured times (CSV)");
  cmd->add_option("times", *path, "CSV: iteration,worker,seconds or worker,seconds")->required();
  cmd->add_flag("--json", *json, "print JSON");
  cmd->add_flag("--per-worker", *per_worker, "also fit every worker alone");
  cmd->add_option("--out", *out, "write the best delay block (JSON) here");
  return {cmd,
          [path, json, per_worker, out] { return command_fit(*path, *json, *per_worker, *out); }};
}

}  // namespace stragglersim::experiments

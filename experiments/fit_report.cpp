// `stragglersim fit` and `advise --fit` (docs/fit.md): a trace file fitted by every family, as
// JSON and as the config delay block of the best fit.
#include "experiments/fit_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "experiments/config/config_error.h"
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
          {"choice", r.choice},
          {"every_family_rejected", r.every_family_rejected}};
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
  std::vector<std::string> flagged;
  for (const auto& f : fit.report.fits) {
    if (f.fitted() && f.degenerate()) {
      flagged.push_back(f.family);
    }
  }
  if (!fit.report.best && !flagged.empty()) {
    throw ConfigError(fmt::format(
        "{}: no delay family could be fitted without a degenerate flag; got {} times; the "
        "fitted ones are all flagged: {}",
        fit.path,
        fit.report.observations,
        fmt::join(flagged, ", ")));
  }
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

}  // namespace stragglersim::experiments

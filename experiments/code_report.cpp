#include "experiments/code_report.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace stragglersim::experiments {
namespace {

/// Numbers in tables: compact, and exact zeros shown as 0.
std::string num(double x) {
  if (x == 0.0) {
    return "0";
  }
  if (std::isinf(x)) {
    return "inf";
  }
  return fmt::format("{:.4g}", x);
}

nlohmann::json json_number(double x) {
  if (!std::isfinite(x)) {
    return nullptr;  // JSON has no infinity; null means "unbounded / undefined"
  }
  return x;
}

/// An exact decoder that refused every pattern (each refusal leaves first_problem set).
bool refused_every_pattern(const DecoderSummary& d) {
  return d.patterns > 0 && d.exact == 0 && !d.first_problem.empty();
}

}  // namespace

std::string format_table(const CodeReport& report) {
  std::string out = fmt::format("code {}: {} workers, {} partitions, tolerates {} stragglers\n",
                                report.code,
                                report.workers,
                                report.partitions,
                                report.stragglers_tolerated);
  out += fmt::format("load per worker: min {}, mean {}, max {}\n",
                     num(report.min_load),
                     num(report.mean_load),
                     num(report.max_load));
  out += fmt::format("patterns: {} {} of {} stragglers ({} workers heard){}\n",
                     report.exhaustive ? "all" : "random",
                     report.patterns,
                     report.stragglers,
                     report.heard,
                     report.exhaustive ? "" : fmt::format(", seed {}", report.seed));
  out += fmt::format("{:<9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                     "decoder",
                     "patterns",
                     "exact",
                     "mean err",
                     "sd err",
                     "median err",
                     "p90 err",
                     "max err",
                     "median cond",
                     "max cond");
  for (const DecoderSummary& d : report.decoders) {
    if (refused_every_pattern(d)) {
      // Its errors would describe decodes it refused to use: only the count is meaningful.
      out += fmt::format("{:<9} {:>9} {:>9} refused all {} patterns\n",
                         d.decoder,
                         d.patterns,
                         d.exact,
                         d.patterns);
      continue;
    }
    out += fmt::format("{:<9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                       d.decoder,
                       d.patterns,
                       d.exact,
                       num(d.mean_error),
                       num(d.sd_error),
                       num(d.median_error),
                       num(d.p90_error),
                       num(d.max_error),
                       num(d.median_condition),
                       num(d.max_condition));
  }
  for (const DecoderSummary& d : report.decoders) {
    if (!d.first_problem.empty()) {
      out += fmt::format("{} decoder refused {} of {} patterns; first: {}\n",
                         d.decoder,
                         d.patterns - d.exact,
                         d.patterns,
                         d.first_problem);
    }
  }
  return out;
}

nlohmann::json to_json(const CodeReport& report) {
  nlohmann::json decoders = nlohmann::json::array();
  for (const DecoderSummary& d : report.decoders) {
    decoders.push_back({{"decoder", d.decoder},
                        {"patterns", d.patterns},
                        {"exact", d.exact},
                        {"mean_error", json_number(d.mean_error)},
                        {"sd_error", json_number(d.sd_error)},
                        {"min_error", json_number(d.min_error)},
                        {"median_error", json_number(d.median_error)},
                        {"p90_error", json_number(d.p90_error)},
                        {"max_error", json_number(d.max_error)},
                        {"median_condition", json_number(d.median_condition)},
                        {"max_condition", json_number(d.max_condition)},
                        {"mean_partitions_covered", d.mean_partitions_covered},
                        {"first_problem", d.first_problem}});
  }
  nlohmann::json j = {{"code", report.code},
                      {"workers", report.workers},
                      {"partitions", report.partitions},
                      {"stragglers_tolerated", report.stragglers_tolerated},
                      {"stragglers", report.stragglers},
                      {"heard", report.heard},
                      {"exhaustive", report.exhaustive},
                      {"patterns", report.patterns},
                      {"seed", report.seed},
                      {"loads", report.loads},
                      {"min_load", report.min_load},
                      {"mean_load", report.mean_load},
                      {"max_load", report.max_load},
                      {"decoders", decoders}};
  if (!report.assignment_csv.empty()) {
    j["assignment_csv"] = report.assignment_csv;
  }
  return j;
}

std::string format_stability_table(std::span<const StabilityRow> rows) {
  std::string out =
      "| code | n | s | patterns | max residual ‖α−1‖² | median cond | max cond | refused | "
      "burst residual | burst cond | burst exact |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const StabilityRow& r : rows) {
    out += fmt::format(
        "| {} | {} | {} | {} | {:.2e} | {:.2e} | {:.2e} | {} | {:.2e} | {:.2e} | {} |\n",
        r.code,
        r.workers,
        r.stragglers,
        r.patterns,
        r.max_residual,
        r.median_condition,
        r.max_condition,
        r.refused,
        r.burst_residual,
        r.burst_condition,
        r.burst_exact ? "yes" : "no");
  }
  return out;
}

}  // namespace stragglersim::experiments

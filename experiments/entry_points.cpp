#include "experiments/entry_points.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "experiments/config/config_error.h"
#include "experiments/config/factories.h"
#include "experiments/config/json_reader.h"
#include "experiments/config/memory_budget.h"
#include "experiments/fit_report.h"
#include "experiments/output_file.h"
#include "experiments/predict/predictions.h"
#include "experiments/run_diagnostics.h"
#include "models/base/random_stream.h"

namespace stragglersim::experiments {
namespace {

[[noreturn]] void reject_value(const std::string& option,
                               const std::string& problem,
                               const std::string& got,
                               const std::string& expected) {
  throw ConfigError(fmt::format("{}: {}; got \"{}\"; expected {}", option, problem, got, expected));
}

void check_options(const TraceImportRequest& a) {
  if (a.format != "csv" && a.format != "chrome") {
    reject_value("--format", "unknown format", a.format, "one of: chrome, csv");
  }
  const auto& other = a.format == "csv" ? a.chrome_only_given : a.csv_only_given;
  if (!other.empty()) {
    reject_value(other.front(),
                 fmt::format("not an option of --format {}", a.format),
                 other.front(),
                 fmt::format("--format {}", a.format == "csv" ? "chrome" : "csv"));
  }
  if (a.format == "csv" && !a.more_paths.empty()) {
    reject_value("FILE",
                 "more than one file",
                 fmt::format("{}", 1 + a.more_paths.size()),
                 "one CSV file (several files are chrome traces, one per rank)");
  }
  if (a.group_by != "dp_rank" && a.group_by != "rank") {
    reject_value("--group-by", "unknown grouping", a.group_by, "one of: dp_rank, rank");
  }
  if (a.missing != "drop" && a.missing != "censor") {
    reject_value("--missing", "unknown rule", a.missing, "one of: censor, drop");
  }
  const stragglersim::Validation v = a.format == "csv" ? a.csv.validate() : a.chrome.validate();
  if (v) {
    std::string got = v->field == "--scale" ? fmt::format("{}", a.csv.scale) : "";
    if (v->field == "--iteration") got = a.csv.iteration_column;
    if (v->field == "--worker") got = a.csv.worker_column;
    if (v->field == "--seconds") got = a.csv.seconds_column;
    if (v->field == "--events") got = fmt::format("{}", fmt::join(a.chrome.events, ","));
    reject_value(v->field, v->problem, got, v->expected);
  }
}

/// The config's workers, seed and delay in a delay-only config (validate's candidates replace
/// its code and rule): the held-out choice needs no data.
nlohmann::json delay_only(const nlohmann::json& config) {
  nlohmann::json d = {{"data", nullptr},
                      {"code", {{"kind", "uncoded"}}},
                      {"stopping", {{"rule", "all"}}},
                      {"optimizer", {{"iterations", 1}}}};
  for (const char* key : {"name", "seed", "workers", "delay"}) {
    if (config.is_object() && config.contains(key)) {
      d[key] = config[key];
    }
  }
  return d;
}

/// `trace` as a path relative to `base_dir` (where the config's paths are resolved).
std::string relative_to(const std::string& trace, const std::filesystem::path& base_dir) {
  const auto from = std::filesystem::absolute(base_dir.empty() ? "." : base_dir).lexically_normal();
  const auto to = std::filesystem::absolute(trace).lexically_normal();
  const auto relative = to.lexically_relative(from);
  return relative.empty() ? to.string() : relative.string();
}

}  // namespace

FittedDelay fitted_delay(const nlohmann::json& config,
                         const std::string& file,
                         const std::filesystem::path& base_dir,
                         const std::string& fit_path,
                         const std::string& model) {
  const TraceFit whole = fit_trace_file(fit_path, false);
  const nlohmann::json& delay = config.is_object() ? config.value("delay", nlohmann::json::object())
                                                   : nlohmann::json::object();
  const std::string tail =
      delay.is_object() && delay.value("tail", "load") == "none" ? "none" : "load";
  FittedDelay out;
  out.block = best_delay_block(whole);
  out.block["tail"] = tail;
  const std::string family = "fit: " + out.block["kind"].get<std::string>();
  out.choice = {{"trace", fit_path}, {"chosen", family}};
  const auto replay_block = [&](const std::string& mode) {
    return nlohmann::json{{"kind", "trace"},
                          {"path", relative_to(fit_path, base_dir)},
                          {"mode", mode},
                          {"tail", tail}};
  };
  if (model != "auto") {
    out.choice["reason"] = fmt::format("asked for (--fit-model {})", model);
    if (model != "family") {
      out.choice["chosen"] = model == "block" ? kBlockReplayModel : kEmpiricalModel;
      out.block = replay_block(model);
    }
    return out;
  }
  if (whole.iterations < 4 || whole.censored > 0) {
    out.choice["reason"] = whole.censored > 0
                               ? "censored times: no replay to hold out; the family AIC picks"
                               : "no iterations to hold out; the family AIC picks";
    return out;
  }
  const Validation v = validate_file(delay_only(config), file, base_dir, fit_path, 0.5);
  out.choice["chosen"] = v.chosen;
  out.choice["reason"] = v.stationarity.stationary()
                             ? "the smallest held-out error (fit on the first half, replay of the "
                               "second)"
                             : v.choice_reason;
  out.choice["stationary"] = v.stationarity.stationary();
  out.choice["p_value"] = v.stationarity.p_value;
  out.choice["scores"] = validation_json(v)["scores"];
  out.choice["holdout_lag1"] = v.holdout_lag1;
  if (v.chosen == kBlockReplayModel || v.chosen == kEmpiricalModel) {
    out.block = replay_block(v.chosen == kEmpiricalModel ? "empirical" : "block");
  }
  return out;
}

nlohmann::json fit_times(const std::string& path, bool per_worker) {
  return fit_json(fit_trace_file(path, per_worker));
}

nlohmann::json advise_report(const nlohmann::json& config,
                             const std::string& file,
                             const std::filesystem::path& base_dir,
                             AdviceOptions options,
                             const std::string& fit_path) {
  if (fit_path.empty()) {
    return advice_json(advise(config, file, base_dir, options));
  }
  FittedDelay fitted = fitted_delay(config, file, base_dir, fit_path);
  options.predicted_delay = fitted.block;
  nlohmann::json j = advice_json(advise(config, file, base_dir, options));
  j["model_choice"] = std::move(fitted.choice);
  return j;
}

nlohmann::json theory_report(const RunPlan& plan) {
  nlohmann::json p = predictions(plan);
  p["name"] = plan.name;
  std::vector<RunWarning> warnings = plan_warnings(plan);
  if (p.value("bound_vacuous", false)) {
    warnings.push_back(
        {"bound_vacuous",
         fmt::format("the convergence bound is vacuous: it is at least f(x0) - f* = {:.6g} at "
                     "every iteration and its noise floor is {}, so it says nothing about this "
                     "run",
                     p["initial_gap"].get<double>(),
                     p["noise_floor"].is_null()
                         ? std::string("infinite")
                         : fmt::format("{:.6g}", p["noise_floor"].get<double>()))});
  }
  p["warnings"] = warnings_json(warnings);
  return p;
}

namespace {

void check_sizes(const CodeRequest& request) {
  // The command line checks this range while parsing; other callers get the same bound here.
  if (request.workers < 1 || request.workers > 100000) {
    throw ConfigError(fmt::format(
        "{}: workers out of range; got {}; expected 1 to 100000", request.source, request.workers));
  }
  if (request.samples < 1) {
    throw ConfigError(fmt::format(
        "{}: samples out of range; got {}; expected at least 1", request.source, request.samples));
  }
}

void check_footprint(const CodeRequest& request,
                     const std::string& kind,
                     const ClusterShape& shape) {
  // Refuse before building: a dense code for 10⁵ workers needs hundreds of GB.
  const double d = std::min(request.code.contains("d") && request.code["d"].is_number()
                                ? request.code["d"].get<double>()
                                : 0.0,
                            static_cast<double>(shape.workers));
  const double bytes = code_footprint(kind, shape.workers, shape.partitions, d).bytes;
  if (!(bytes <= static_cast<double>(memory_limit()))) {
    throw ConfigError(fmt::format(
        "--workers: code '{}' would need about {} of memory; got {}; expected at most {} "
        "(--max-memory)",
        kind,
        format_bytes(bytes),
        request.workers,
        format_bytes(static_cast<double>(memory_limit()))));
  }
  if (request.include_assignment &&
      static_cast<double>(shape.workers) * static_cast<double>(shape.partitions) > 0x1p24) {
    throw ConfigError(fmt::format(
        "--csv: B is too large to write as CSV; got {} x {}; expected workers x partitions at "
        "most 16777216",
        shape.workers,
        shape.partitions));
  }
}

void check_wait_ranges(const CodeRequest& request) {
  // -1 (stragglers) and 0 (wait_for) mean "not given".
  if (request.stragglers < -1 || request.stragglers > request.workers) {
    throw ConfigError(fmt::format(
        "{}: --stragglers out of range; got {}; expected an integer in [0, {}] (at most "
        "--workers = {})",
        request.source,
        request.stragglers,
        request.workers,
        request.workers));
  }
  if (request.wait_for < 0 || request.wait_for > request.workers) {
    throw ConfigError(
        fmt::format("{}: --wait-for out of range; got {}; expected an integer in [1, {}] (at most "
                    "--workers = {})",
                    request.source,
                    request.wait_for,
                    request.workers,
                    request.workers));
  }
}

}  // namespace

CodeReport inspect_code(const CodeRequest& request) {
  check_sizes(request);
  JsonReader reader(request.code, request.source, "/code");
  const std::string kind = reader.choice("kind", "code", names_of(code_factories()), std::nullopt);
  const ClusterShape shape{request.source,
                           request.workers,
                           request.partitions > 0 ? request.partitions : request.workers,
                           request.partitions > 0,
                           derive_seed(request.seed, static_cast<std::uint64_t>(Stream::kCode))};
  check_footprint(request, kind, shape);
  std::shared_ptr<const codes::GradientCode> code;
  for (const auto& row : code_factories()) {
    if (row.name == kind) {
      // The decoder key is valid in a code object; the report covers every decoder.
      if (reader.has("decoder")) {
        (void)reader.choice("decoder", "decoder", {"exact", "one_step", "optimal"}, {});
      }
      code = row.make(reader, shape);
      reader.finish(keys_of(row, kCodeKeys));
    }
  }
  check_wait_ranges(request);
  CodeReportOptions options;
  options.stragglers = request.stragglers;
  options.wait_for = request.wait_for;
  options.samples = request.samples;
  options.seed = request.seed;
  options.include_assignment = request.include_assignment;
  return analyse_code(*code, options);
}

nlohmann::json code_report_json(const CodeReport& report) {
  nlohmann::json j = to_json(report);
  j.erase("assignment_csv");
  return j;
}

Validation validate_file(const nlohmann::json& config,
                         const std::string& file,
                         const std::filesystem::path& base_dir,
                         const std::string& trace_path,
                         double holdout,
                         const TimeToTargetOptions& time_to_target) {
  sim::DelayTrace trace;
  try {
    trace = sim::read_delay_trace(trace_path);
  } catch (const sim::TraceFileError& e) {
    throw ConfigError(fmt::format("--trace: {}", e.what()));
  }
  ValidationOptions options;
  options.holdout = holdout;
  options.time_to_target = time_to_target;
  return validate_trace(config, file, base_dir, trace, options);
}

TraceImportResult import_trace(TraceImportRequest request) {
  check_options(request);
  check_output_file(request.out, "--out");
  request.chrome.group_by = request.group_by == "rank" ? sim::TraceGrouping::kRank
                                                       : sim::TraceGrouping::kDataParallelRank;
  const auto missing =
      request.missing == "censor" ? sim::MissingCells::kCensor : sim::MissingCells::kDrop;
  TraceImportResult r;
  try {
    std::vector<std::string> paths = {request.path};
    paths.insert(paths.end(), request.more_paths.begin(), request.more_paths.end());
    r.table = request.format == "csv" ? sim::import_csv_times(request.path, request.csv)
                                      : sim::import_chrome_times(paths, request.chrome);
    r.trace = sim::write_imported_trace(r.table, missing);
  } catch (const sim::TraceFileError& e) {
    throw ConfigError(e.what());
  }
  OutputFile(request.out, "--out").commit(r.trace.csv);  // messages name the option
  return r;
}

nlohmann::json trace_import_json(const TraceImportRequest& request,
                                 const TraceImportResult& result) {
  const sim::ImportedTrace& t = result.trace;
  const auto number = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
  };
  return {{"path", request.path},
          {"out", request.out},
          {"format", request.format},
          {"workers", t.workers},
          {"iterations", t.iterations},
          {"missing_cells", t.missing_cells},
          {"dropped_iterations", t.dropped_iterations},
          {"censored_cells", t.censored_cells},
          {"repeated_rows", result.table.repeated_rows},
          {"median", number(t.median)},
          {"mean", number(t.mean)},
          {"max", number(t.max)},
          {"worker_ids", result.table.worker_ids},
          {"source_iterations", t.source_iterations},
          {"renumbered", result.table.renumbered}};
}

}  // namespace stragglersim::experiments

#include "experiments/trace_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <utility>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/fit_report.h"
#include "experiments/predict/convergence_predictions.h"
#include "experiments/scheme_advice.h"
#include "fit/delay_fit.h"
#include "models/base/invariant.h"
#include "sim/delays/trace_delay.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/multi_message_theory.h"

namespace stragglersim::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Iterations [begin, end) of an iteration-form trace, as a trace of their own.
sim::DelayTrace trace_part(const sim::DelayTrace& trace, std::size_t begin, std::size_t end) {
  sim::DelayTrace part;
  part.path = trace.path;
  part.workers = trace.workers;
  part.has_iterations = true;
  const auto first = static_cast<std::ptrdiff_t>(begin);
  const auto last = static_cast<std::ptrdiff_t>(end);
  part.per_iteration.assign(trace.per_iteration.begin() + first,
                            trace.per_iteration.begin() + last);
  part.iterations.assign(trace.iterations.begin() + first, trace.iterations.begin() + last);
  part.per_worker.assign(static_cast<std::size_t>(trace.workers), {});
  for (const auto& row : part.per_iteration) {
    for (std::size_t w = 0; w < row.size(); ++w) {
      part.per_worker[w].push_back(row[w]);
    }
  }
  return part;
}

/// The trace must fit the config and leave two iterations on each side of the split.
std::size_t checked_split(const sim::DelayTrace& trace, int workers, double holdout) {
  if (!trace.has_iterations) {
    throw ConfigError(
        fmt::format("--trace: {}: no iteration column; expected an iteration,worker,seconds trace",
                    trace.path));
  }
  if (!trace.censored_lines.empty()) {
    throw ConfigError(
        fmt::format("--trace: {}:{}: censored time (empty seconds); expected every time measured",
                    trace.path,
                    trace.censored_lines.front()));
  }
  if (trace.workers != workers) {
    throw ConfigError(
        fmt::format("--trace: trace '{}' has {} workers; expected {} (the config's "
                    "workers)",
                    trace.path,
                    trace.workers,
                    workers));
  }
  const std::size_t total = trace.per_iteration.size();
  const auto fit =
      static_cast<std::size_t>(std::lround((1.0 - holdout) * static_cast<double>(total)));
  if (fit < 2 || fit + 2 > total) {
    throw ConfigError(
        fmt::format("--holdout: leaves {} of {} iterations to fit and {} to replay; "
                    "got {}; expected at least 2 in each part",
                    fit,
                    total,
                    total - std::min(fit, total),
                    holdout));
  }
  return fit;
}

/// The best family by AIC on the fit part, as a config delay block with the config's tail.
/// The fit part's AIC-best delay block, and the per-worker slowdown factors of its
/// heterogeneous fit (null when that family was not fitted): the loads of the `proportional`
/// candidates, estimated from the trace.
struct FittedDelay {
  nlohmann::json block;
  nlohmann::json factors;
};

FittedDelay fitted_delay(const sim::DelayTrace& part, const std::string& tail) {
  const sim::DelayFitReport report = sim::fit_delay_models(part.per_worker, true);
  if (!report.best) {
    throw ConfigError(
        fmt::format("--trace: {}: no delay family could be fitted to the first {} "
                    "iterations; expected at least five distinct times",
                    part.path,
                    part.per_iteration.size()));
  }
  FittedDelay out;
  out.block = delay_block(report.fits[*report.best]);
  out.block["tail"] = tail;
  for (const auto& fit : report.fits) {
    if (fit.family == "heterogeneous" && fit.fitted() && !fit.factors.empty()) {
      out.factors = fit.factors;
    }
  }
  return out;
}

/// What one candidate scheme needs from the models: its plan (fitted delay) and description.
/// Delay-only draws behind a fitted model's simulated iteration time (as `advise`).
constexpr std::uint64_t kFittedModelDraws = 20'000;

struct Context {
  const nlohmann::json& fitted_config;
  const std::string& file;
  const std::filesystem::path& base_dir;
  const sim::DelayTrace& fit;
  const sim::DelayTrace& holdout;
  sim::TailScaling tail;
  std::size_t block;
  std::vector<std::string> models;
  nlohmann::json factors;  ///< the fit part's heterogeneous factors (null: none)
};

/// A model's (or the replay's) view of one scheme's iteration time: mean and two quantiles.
struct TimeSummary {
  sim::IterationTimePrediction prediction;
  double median = 0.0;
  double q90 = 0.0;
};

TimeSummary summarise(const sim::SchemeDescription& scheme,
                      const sim::DelayModel& delay,
                      sim::IterationTimePrediction prediction) {
  return {.prediction = std::move(prediction),
          .median = sim::iteration_time_quantile(scheme, delay, 0.5),
          .q90 = sim::iteration_time_quantile(scheme, delay, 0.9)};
}

TimeSummary trace_prediction(const Context& ctx,
                             const sim::SchemeDescription& scheme,
                             const sim::DelayTrace& trace,
                             sim::TraceDelay::Mode mode) {
  const sim::TraceDelay delay(
      sim::scheme_loads(scheme), trace, {.mode = mode, .tail = ctx.tail, .block = ctx.block});
  return summarise(scheme, delay, sim::predict_iteration_time(scheme, delay));
}

double relative(double predicted, double replayed) { return (predicted - replayed) / replayed; }

/// Fills the row's predictions, replayed values (of `rows` held-out rows) and errors.
void fill_row(ValidationRow& row,
              const TimeSummary& model,
              const TimeSummary& replay,
              std::size_t rows) {
  row.predicted = model.prediction.mean;
  row.method = model.prediction.method;
  if (row.method == "simulation") {  // its size and error: draws may be cut by the decode cost
    row.method = fmt::format("simulation ({} draws{}, s.e. {:.2g})",
                             model.prediction.draws,
                             model.prediction.draws < kFittedModelDraws ? ", decode cost" : "",
                             model.prediction.standard_error);
  }
  row.replayed = replay.prediction.mean;
  row.replayed_se = replay.prediction.sd / std::sqrt(static_cast<double>(rows));
  row.relative_error = relative(row.predicted, row.replayed);
  row.predicted_median = model.median;
  row.replayed_median = replay.median;
  row.predicted_q90 = model.q90;
  row.replayed_q90 = replay.q90;
  row.error = (std::abs(row.relative_error) + std::abs(relative(model.median, replay.median)) +
               std::abs(relative(model.q90, replay.q90))) /
              3.0;
}

/// Multi-message (sim/theory/multi_message_theory.h): the same three numbers from its own
/// theory, on the scheme's own loads.
TimeSummary summarise_multi_message(const std::vector<std::vector<int>>& orders,
                                    const sim::DelayModel& delay,
                                    const sim::MultiMessageTheoryOptions& options) {
  return {.prediction = sim::predict_multi_message_time(orders, delay, options),
          .median = sim::multi_message_time_quantile(orders, delay, options, 0.5),
          .q90 = sim::multi_message_time_quantile(orders, delay, options, 0.9)};
}

/// compare() for a multi-message candidate.
void compare_multi_message(const Context& ctx,
                           const RunPlan& plan,
                           const std::vector<std::vector<int>>& orders,
                           std::vector<ValidationRow>& rows) {
  const std::vector<double> loads = plan.scheme.code->loads();
  sim::MultiMessageTheoryOptions options;
  options.deadline = plan.scheme.rule->deadline();
  const auto replay = [&](const sim::DelayTrace& trace, sim::TraceDelay::Mode mode) {
    const sim::TraceDelay delay(loads, trace, {.mode = mode, .tail = ctx.tail, .block = ctx.block});
    return summarise_multi_message(orders, delay, options);
  };
  const TimeSummary replayed = replay(ctx.holdout, sim::TraceDelay::Mode::kCycle);
  for (auto& row : rows) {
    TimeSummary model;
    if (row.model == kBlockReplayModel || row.model == kEmpiricalModel) {
      model = replay(ctx.fit,
                     row.model == kBlockReplayModel ? sim::TraceDelay::Mode::kBlock
                                                    : sim::TraceDelay::Mode::kEmpirical);
    } else {
      sim::MultiMessageTheoryOptions fitted = options;
      fitted.simulate = prediction_options(plan, kFittedModelDraws).simulate;
      model = summarise_multi_message(orders, *plan.make_delays(), fitted);
    }
    fill_row(row, model, replayed, ctx.holdout.per_iteration.size());
  }
}

/// One row per model for `candidate` (all with the same problem when it is not compared).
std::vector<ValidationRow> compare(const Context& ctx, const SchemeCandidate& candidate) {
  std::vector<ValidationRow> rows;
  for (const auto& model : ctx.models) {
    ValidationRow row;
    row.model = model;
    row.scheme = candidate.label;
    rows.push_back(std::move(row));
  }
  RunPlan plan;
  std::string why;
  try {
    plan = plan_run(apply_candidate(ctx.fitted_config, candidate), ctx.file, ctx.base_dir);
  } catch (const ConfigError& e) {
    why = e.what();
  }
  if (const auto* orders = why.empty() ? plan.scheme.rule->partition_orders() : nullptr) {
    compare_multi_message(ctx, plan, *orders, rows);
    return rows;
  }
  const auto scheme = why.empty() ? sim::describe_scheme(plan.scheme, &why) : std::nullopt;
  if (!scheme) {
    for (auto& row : rows) row.problem = why;
    return rows;
  }
  const TimeSummary replayed =
      trace_prediction(ctx, *scheme, ctx.holdout, sim::TraceDelay::Mode::kCycle);
  for (auto& row : rows) {
    TimeSummary model;
    if (row.model == kBlockReplayModel || row.model == kEmpiricalModel) {
      model = trace_prediction(ctx,
                               *scheme,
                               ctx.fit,
                               row.model == kBlockReplayModel ? sim::TraceDelay::Mode::kBlock
                                                              : sim::TraceDelay::Mode::kEmpirical);
    } else {
      // The theory's cost estimate decides: past it, seeded simulation with its s.e. (a fitted
      // family with distinct per-worker factors can make the exact computation unaffordable).
      const auto delay = plan.make_delays();
      model = summarise(*scheme,
                        *delay,
                        sim::predict_iteration_time(
                            *scheme, *delay, prediction_options(plan, kFittedModelDraws)));
    }
    fill_row(row, model, replayed, ctx.holdout.per_iteration.size());
  }
  return rows;
}

/// The recommended scheme of each model (smallest prediction) against the replay's best.
std::vector<ModelVerdict> verdicts(const std::vector<ValidationRow>& rows,
                                   const std::vector<std::string>& models,
                                   double tolerance) {
  std::vector<ModelVerdict> out;
  for (const auto& model : models) {
    const ValidationRow* recommended = nullptr;
    const ValidationRow* best = nullptr;
    for (const auto& row : rows) {
      if (row.model != model || !row.problem.empty() || !std::isfinite(row.predicted)) {
        continue;
      }
      if (recommended == nullptr || row.predicted < recommended->predicted) recommended = &row;
      if (best == nullptr || row.replayed < best->replayed) best = &row;
    }
    if (recommended == nullptr) {
      continue;
    }
    out.push_back(
        {.model = model,
         .recommended = recommended->scheme,
         .recommended_replayed = recommended->replayed,
         .best = best->scheme,
         .best_replayed = best->replayed,
         .recommended_is_best = recommended->replayed <= (1.0 + tolerance) * best->replayed});
  }
  return out;
}

/// The candidates of `advise`, the deadline one at the block replay's mean wait of ErasureHead
/// d = 2, r = n/2 (as advise places it), compared model-major.
std::vector<ValidationRow> compare_candidates(const Context& ctx, int workers) {
  std::vector<std::vector<ValidationRow>> per_candidate;
  const std::string anchor =
      fmt::format("erasurehead frc d=2 r={}", std::clamp((workers + 1) / 2, 1, workers));
  double deadline = 0.0;
  for (const auto& c : scheme_candidates(workers, 0.0)) {
    if (c.simulated_directly()) {
      continue;  // validate checks iteration-time predictions; these times are simulated
    }
    per_candidate.push_back(compare(ctx, c));
    for (const auto& row : per_candidate.back()) {
      if (c.label == anchor && row.model == kBlockReplayModel && row.problem.empty()) {
        deadline = row.predicted;
      }
    }
  }
  // Loads in proportion to the speeds the fit part's heterogeneous fit estimated (advise's
  // candidates when the predicted delay has factors).
  if (!ctx.factors.is_null()) {
    for (const auto& c : proportional_candidates(workers, {{"factors", ctx.factors}})) {
      per_candidate.push_back(compare(ctx, c));
    }
  }
  if (deadline > 0.0) {
    for (const auto& c : scheme_candidates(workers, deadline)) {
      if (!c.simulated_directly() && c.label.find("deadline=") != std::string::npos) {
        per_candidate.push_back(compare(ctx, c));
      }
    }
  }
  std::vector<ValidationRow> rows;
  for (std::size_t m = 0; m < ctx.models.size(); ++m) {
    for (const auto& candidate_rows : per_candidate) {
      rows.push_back(candidate_rows[m]);
    }
  }
  return rows;
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

/// ρ₁ = Σ_{t<T−1} (x_t − x̄)(x_{t+1} − x̄) / Σ_t (x_t − x̄)² (auto_block_length's estimator);
/// circular: the sum runs to T with x_T = x_0. 0 for a constant series.
double lag1(const std::vector<double>& x, bool circular) {
  if (x.size() < 2) return 0.0;
  double mean = 0.0;
  for (const double v : x) mean += v / static_cast<double>(x.size());
  double squares = 0.0;
  double products = 0.0;
  for (std::size_t t = 0; t < x.size(); ++t) {
    squares += (x[t] - mean) * (x[t] - mean);
    if (t + 1 < x.size() || circular) {
      products += (x[t] - mean) * (x[(t + 1) % x.size()] - mean);
    }
  }
  return squares > 0.0 ? products / squares : 0.0;
}

/// Each model's ρ₁ of the per-iteration mean time.
double model_lag1(const std::string& model,
                  const nlohmann::json& fitted,
                  const sim::DelayTrace& fit,
                  std::size_t block) {
  if (model == kBlockReplayModel) {
    const double l = static_cast<double>(block);
    return (l - 1.0) / l * lag1(sim::iteration_means(fit), true);
  }
  const std::string kind = fitted.value("kind", "");
  if (model != kEmpiricalModel && (kind == "markov" || kind == "heterogeneous_markov")) {
    return markov_mean_lag1(fitted);
  }
  return 0.0;
}

/// Each model's held-out score, in model order.
std::vector<ModelScore> held_out_scores(const std::vector<ValidationRow>& rows,
                                        const Context& ctx,
                                        const Validation& v) {
  std::vector<ModelScore> scores;
  for (const auto& model : ctx.models) {
    ModelScore s{.model = model,
                 .lag1 = model_lag1(model, v.fitted_delay, ctx.fit, v.block_length)};
    for (const auto& row : rows) {
      if (row.model == model && row.problem.empty()) {
        s.score += row.error;
        ++s.schemes;
      }
    }
    s.persistence = std::abs(s.lag1 - v.holdout_lag1);
    s.scheme_error = s.schemes > 0 && std::isfinite(s.score)
                         ? s.score / static_cast<double>(s.schemes)
                         : std::numeric_limits<double>::infinity();
    s.score = s.scheme_error + s.persistence;
    scores.push_back(s);
  }
  return scores;
}

std::string chosen_model(const std::vector<ModelScore>& scores) {
  const auto best = std::min_element(
      scores.begin(), scores.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
  return best == scores.end() ? std::string() : best->model;
}

/// validate_time_to_target for the config (its own delay) with validate's parts and models.
TimeToTargetValidation time_to_target(const nlohmann::json& config,
                                      const Context& ctx,
                                      const Validation& v,
                                      const std::string& tail,
                                      const TimeToTargetOptions& options) {
  return validate_time_to_target({.config = config,
                                  .file = ctx.file,
                                  .base_dir = ctx.base_dir,
                                  .fit = ctx.fit,
                                  .holdout = ctx.holdout,
                                  .tail = tail,
                                  .fitted_delay = v.fitted_delay,
                                  .block_length = v.block_length,
                                  .models = ctx.models,
                                  .chosen = v.chosen},
                                 options);
}

}  // namespace

// The chain's (1 − p − q) times the share of the variance that the state explains (the per-worker
// factors scale both the same way and cancel).
double markov_mean_lag1(const nlohmann::json& block) {
  const double p = block.value("to_slow", 0.0);
  const double q = block.value("to_normal", 1.0);
  const double pi = p + q > 0.0 ? p / (p + q) : 0.0;
  const double normal = block.value("shift", 0.0) + 1.0 / block.value("rate", 1.0);
  const double slow = block.value("slow_shift", 0.0) + 1.0 / block.value("slow_rate", 1.0);
  const double state = pi * (1.0 - pi) * (slow - normal) * (slow - normal);
  const double within = (1.0 - pi) / std::pow(block.value("rate", 1.0), 2.0) +
                        pi / std::pow(block.value("slow_rate", 1.0), 2.0);
  return state + within > 0.0 ? (1.0 - p - q) * state / (state + within) : 0.0;
}

StationarityTest test_stationarity(const std::vector<double>& series,
                                   std::size_t fit,
                                   double level) {
  STRAGGLERSIM_ASSERT(fit >= 2 && fit + 2 <= series.size(), "each part needs two iterations");
  const std::array<std::size_t, 2> sizes = {fit, series.size() - fit};
  const std::array<const double*, 2> starts = {series.data(), series.data() + fit};
  StationarityTest t;
  t.level = level;
  t.batch = std::max<std::size_t>(1,
                                  static_cast<std::size_t>(std::floor(std::sqrt(
                                      static_cast<double>(std::min(sizes[0], sizes[1]))))));
  std::array<double, 2> means = {0.0, 0.0};
  double squares = 0.0;
  std::size_t batches = 0;
  for (std::size_t part = 0; part < 2; ++part) {
    for (std::size_t k = 0; k < sizes[part]; ++k) means[part] += starts[part][k];
    means[part] /= static_cast<double>(sizes[part]);
    for (std::size_t b = 0; b + t.batch <= sizes[part]; b += t.batch, ++batches) {
      double m = 0.0;
      for (std::size_t k = b; k < b + t.batch; ++k) m += starts[part][k] - means[part];
      m /= static_cast<double>(t.batch);
      squares += m * m;
    }
  }
  t.fit_mean = means[0];
  t.holdout_mean = means[1];
  const double variance =
      batches > 2 ? static_cast<double>(t.batch) * squares / static_cast<double>(batches - 2) : 0.0;
  t.long_run_sd = std::sqrt(variance);
  const double se = t.long_run_sd * std::sqrt(1.0 / static_cast<double>(sizes[0]) +
                                              1.0 / static_cast<double>(sizes[1]));
  const double difference = t.holdout_mean - t.fit_mean;
  t.statistic = se > 0.0 ? difference / se : (difference == 0.0 ? 0.0 : kNaN);
  t.p_value =
      std::isnan(t.statistic) ? 0.0 : std::erfc(std::abs(t.statistic) / std::numbers::sqrt2);
  return t;
}

Validation validate_trace(const nlohmann::json& config,
                          const std::string& file,
                          const std::filesystem::path& base_dir,
                          const sim::DelayTrace& trace,
                          const ValidationOptions& options) {
  if (!(options.holdout > 0.0 && options.holdout < 1.0)) {
    throw ConfigError(
        fmt::format("--holdout: outside (0, 1); got {}; expected a fraction of the "
                    "iterations strictly between 0 and 1",
                    options.holdout));
  }
  const RunPlan base = plan_run(config, file, base_dir);
  const std::size_t split = checked_split(trace, base.workers, options.holdout);
  Validation v;
  v.trace = trace.path;
  v.tolerance = options.tolerance;
  v.fit_iterations = split;
  v.holdout_iterations = trace.per_iteration.size() - split;
  v.stationarity = test_stationarity(sim::iteration_means(trace), split, options.level);
  const sim::DelayTrace fit = trace_part(trace, 0, split);
  const sim::DelayTrace holdout = trace_part(trace, split, trace.per_iteration.size());
  const nlohmann::json& delay = config.value("delay", nlohmann::json::object());
  const std::string tail =
      delay.is_object() && delay.value("tail", "load") == "none" ? "none" : "load";
  const FittedDelay fitted = fitted_delay(fit, tail);
  v.fitted_delay = fitted.block;
  v.block_length = sim::auto_block_length(sim::iteration_means(fit));
  nlohmann::json fitted_config = config;
  fitted_config["delay"] = v.fitted_delay;
  const Context ctx{.fitted_config = fitted_config,
                    .file = file,
                    .base_dir = base_dir,
                    .fit = fit,
                    .holdout = holdout,
                    .tail = tail == "none" ? sim::TailScaling::kNone : sim::TailScaling::kLoad,
                    .block = v.block_length,
                    .models = {"fit: " + v.fitted_delay["kind"].get<std::string>(),
                               kBlockReplayModel,
                               kEmpiricalModel},
                    .factors = fitted.factors};
  v.rows = compare_candidates(ctx, base.workers);
  v.verdicts = verdicts(v.rows, ctx.models, options.tolerance);
  v.holdout_lag1 = lag1(sim::iteration_means(holdout), false);
  v.scores = held_out_scores(v.rows, ctx, v);
  if (v.stationarity.stationary()) {
    v.chosen = chosen_model(v.scores);
    v.choice_reason = "the smallest held-out error";
  } else {
    v.chosen = kBlockReplayModel;
    v.choice_reason =
        "the trace is not stationary: the held-out errors measure the change, not the models; the "
        "whole trace replayed in blocks keeps its regimes";
  }
  v.time_to_target = time_to_target(config, ctx, v, tail, options.time_to_target);
  return v;
}

std::string score_text(const nlohmann::json& score, double holdout_lag1) {
  const auto number = [&](const char* key, const char* format, double scale) {
    return score.contains(key) && score[key].is_number()
               ? fmt::format(fmt::runtime(format), scale * score[key].get<double>())
               : std::string("-");
  };
  return fmt::format("scheme error {} + persistence {} (lag-1 {} vs {:.2f})",
                     number("scheme_error", "{:.2f}%", 100.0),
                     number("persistence", "{:.2f}", 1.0),
                     number("lag1", "{:.2f}", 1.0),
                     holdout_lag1);
}

nlohmann::json validation_json(const Validation& v) {
  const auto& s = v.stationarity;
  nlohmann::json j = {{"trace", v.trace},
                      {"fit_iterations", v.fit_iterations},
                      {"holdout_iterations", v.holdout_iterations},
                      {"stationarity",
                       {{"fit_mean", s.fit_mean},
                        {"holdout_mean", s.holdout_mean},
                        {"batch", s.batch},
                        {"long_run_sd", s.long_run_sd},
                        {"statistic", number_or_null(s.statistic)},
                        {"p_value", s.p_value},
                        {"level", s.level},
                        {"stationary", s.stationary()}}},
                      {"fitted_delay", v.fitted_delay},
                      {"block_length", v.block_length},
                      {"holdout_lag1", v.holdout_lag1},
                      {"tolerance", v.tolerance},
                      {"rows", nlohmann::json::array()},
                      {"verdicts", nlohmann::json::array()},
                      {"scores", nlohmann::json::array()},
                      {"chosen", v.chosen},
                      {"choice_reason", v.choice_reason}};
  for (const auto& r : v.rows) {
    nlohmann::json row = {{"model", r.model}, {"scheme", r.scheme}};
    if (!r.problem.empty()) {
      row["problem"] = r.problem;
    } else {
      row["predicted"] = number_or_null(r.predicted);
      row["replayed"] = number_or_null(r.replayed);
      row["replayed_se"] = number_or_null(r.replayed_se);
      row["relative_error"] = number_or_null(r.relative_error);
      row["method"] = r.method;
      row["predicted_median"] = number_or_null(r.predicted_median);
      row["replayed_median"] = number_or_null(r.replayed_median);
      row["predicted_q90"] = number_or_null(r.predicted_q90);
      row["replayed_q90"] = number_or_null(r.replayed_q90);
      row["error"] = number_or_null(r.error);
    }
    j["rows"].push_back(row);
  }
  for (const auto& m : v.verdicts) {
    j["verdicts"].push_back({{"model", m.model},
                             {"recommended", m.recommended},
                             {"recommended_replayed", m.recommended_replayed},
                             {"best", m.best},
                             {"best_replayed", m.best_replayed},
                             {"recommended_is_best", m.recommended_is_best}});
  }
  for (const auto& m : v.scores) {
    j["scores"].push_back({{"model", m.model},
                           {"score", number_or_null(m.score)},
                           {"scheme_error", number_or_null(m.scheme_error)},
                           {"persistence", m.persistence},
                           {"schemes", m.schemes},
                           {"lag1", m.lag1}});
  }
  j["time_to_target"] = time_to_target_json(v.time_to_target);
  return j;
}

}  // namespace stragglersim::experiments

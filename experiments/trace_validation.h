#pragma once
// `stragglersim validate CONFIG.json --trace times.csv` (docs/validate.md): how well the
// predictions made from the first part of a measured trace hold on the rest of it.
//
// The trace's T iterations (iteration form) are split in increasing iteration order into a fit
// part, the first T_f = round((1 − h)·T), and a held-out part, the last T − T_f (h the holdout
// fraction). Three models are built from the fit part alone:
//   fit: <family>   the family with the smallest AIC (fit/delay_fit.h) on the fit part's times;
//   block replay    the fit part replayed in block mode (sim/delays/trace_delay.h: its rows);
//   empirical       the fit part's per-worker marginals, independent workers;
// and each predicts the mean iteration time of every candidate scheme `advise` ranks
// (experiments/scheme_advice.h) with the theory (sim/theory/iteration_time_theory.h). The held-out
// part replayed in cycle mode gives the "replayed" mean, exact by the theory's trace-rows path.
// Schemes the theory does not model (BGC) are listed with the reason and not compared.
//
// Model choice by held-out error: beside the mean, each model predicts the median and the 90 %
// quantile of the iteration time (sim::iteration_time_quantile), compared with the held-out
// rows' own; a row's error is the mean of the three absolute relative errors. Persistence, what
// iteration times alone do not show (a worker that stays slow stays unheard, and its data
// missing, for many iterations in a row), enters through the lag-1 autocorrelation ρ₁ of the
// per-iteration mean time x_t: each model's ρ₁ (block replay: ((L − 1)/L)·ρ₁ of the fit part,
// circularly; markov and heterogeneous_markov: (1 − p − q)·V_S/(V_S + E[Var(T|S)]) with V_S =
// π(1 − π)(m_slow − m_normal)² the variance of the state's mean; every other model draws each
// iteration afresh: 0) against the held-out part's. A model's held-out score is the mean of its
// rows' errors plus |ρ₁(model) − ρ₁(held out)|, and the chosen model has the smallest score
// (AIC picks only the family; the held-out error picks the model). When the stationarity test
// rejects, the first part describes another cluster than the rest and the scores rank nothing:
// the chosen model is then the block replay, which built from the whole trace replays its
// regimes in proportion (and says so).

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/validation_time_to_target.h"
#include "fit/delay_trace.h"

namespace stragglersim::experiments {

struct ValidationOptions {
  double holdout = 0.5;  ///< h ∈ (0, 1)
  double level = 0.01;   ///< of the stationarity test
  /// A recommended scheme counts as the replay's best when its replayed mean is within this
  /// relative margin of the best replayed mean.
  double tolerance = 0.10;
  /// The time-to-target comparison's target and runs (experiments/validation_time_to_target.h).
  TimeToTargetOptions time_to_target;
};

/// The change-point test of the header.
struct StationarityTest {
  double fit_mean = 0.0;      ///< x̄_f
  double holdout_mean = 0.0;  ///< x̄_h
  std::size_t batch = 1;      ///< b
  double long_run_sd = 0.0;   ///< σ̂
  double statistic = 0.0;     ///< z
  double p_value = 1.0;
  double level = 0.01;
  [[nodiscard]] bool stationary() const { return !(p_value < level); }
};

/// The test on the per-iteration means `series` split after `fit` iterations (2 ≤ fit ≤ size − 2).
[[nodiscard]] StationarityTest test_stationarity(const std::vector<double>& series,
                                                 std::size_t fit,
                                                 double level);

/// One (model, scheme) comparison.
struct ValidationRow {
  std::string model;
  std::string scheme;
  std::string problem;          ///< non-empty when not compared (and why)
  double predicted = 0.0;       ///< the model's E[Z], seconds
  double replayed = 0.0;        ///< the held-out rows' mean Z
  double replayed_se = 0.0;     ///< sd(Z) over the held-out rows / √rows (rows as independent)
  double relative_error = 0.0;  ///< (predicted − replayed) / replayed
  std::string method;           ///< the theory's method for the prediction
  double predicted_median = 0.0;
  double replayed_median = 0.0;
  double predicted_q90 = 0.0;  ///< 90 % quantile
  double replayed_q90 = 0.0;
  /// (|e_mean| + |e_median| + |e_q90|) / 3, each e relative to the replayed value.
  double error = 0.0;
};

/// A model's held-out score: the mean of its compared rows' `error` (the scheme error), plus its
/// persistence error |ρ₁(model) − ρ₁(held out)|.
struct ModelScore {
  std::string model;
  double score = 0.0;         ///< +∞ when no scheme was compared or a prediction is not finite
  double scheme_error = 0.0;  ///< the mean of the rows' errors (+∞ as the score)
  double persistence = 0.0;   ///< |lag1 − the held-out part's ρ₁|
  std::size_t schemes = 0;    ///< rows compared
  double lag1 = 0.0;          ///< the model's ρ₁ of the per-iteration mean time
};

/// Per model: the scheme it recommends (smallest predicted mean) against the replay's best.
struct ModelVerdict {
  std::string model;
  std::string recommended;
  double recommended_replayed = 0.0;
  std::string best;
  double best_replayed = 0.0;
  bool recommended_is_best = false;  ///< within the tolerance
};

struct Validation {
  std::string trace;
  std::size_t fit_iterations = 0;
  std::size_t holdout_iterations = 0;
  StationarityTest stationarity;
  nlohmann::json fitted_delay;   ///< the fitted family's config block
  std::size_t block_length = 0;  ///< the block replay's automatic L
  double holdout_lag1 = 0.0;     ///< ρ₁ of the held-out part's per-iteration mean times
  double tolerance = 0.1;
  std::vector<ValidationRow> rows;  ///< model-major, schemes in candidate order
  std::vector<ModelVerdict> verdicts;
  std::vector<ModelScore> scores;  ///< one per model, in model order
  /// The model with the smallest score (the first on ties) when the trace is stationary; block
  /// replay when it is not (the held-out errors then measure the change, not the models).
  std::string chosen;
  std::string choice_reason;  ///< why, in words
  /// Every candidate's time to target, predicted by each model and under the held-out replay
  /// (its `not_compared` says why not: a delay-only config, no target).
  TimeToTargetValidation time_to_target;
};

/// Names of the two models built from the trace itself.
inline constexpr const char* kBlockReplayModel = "block replay";
inline constexpr const char* kEmpiricalModel = "empirical";

/// Validates the predictions for `config` (read from `file`, paths relative to `base_dir`) on
/// `trace`. ConfigError for: holdout outside (0, 1), a trace without an iteration column, with
/// censored times, whose workers differ from the config's, or too short to leave 2 iterations in
/// each part; the fit part when no family can be fitted to it; a config that does not plan.
[[nodiscard]] Validation validate_trace(const nlohmann::json& config,
                                        const std::string& file,
                                        const std::filesystem::path& base_dir,
                                        const sim::DelayTrace& trace,
                                        const ValidationOptions& options);

/// ρ₁ of the per-iteration mean time (over workers, at load 1) under a markov or
/// heterogeneous_markov delay block: (1 − p − q)·V_S / (V_S + E[Var(T | S)]) (the header).
[[nodiscard]] double markov_mean_lag1(const nlohmann::json& block);

/// A model's score in words: "scheme error 0.80% + persistence 0.25 (lag-1 0.19 vs 0.44)", from
/// one entry of validation_json's "scores" (`advise --fit` prints the same).
[[nodiscard]] std::string score_text(const nlohmann::json& score, double holdout_lag1);

/// What `validate --json` prints (docs/validate.md lists every key).
[[nodiscard]] nlohmann::json validation_json(const Validation& validation);

}  // namespace stragglersim::experiments

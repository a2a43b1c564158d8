// `validate` (experiments/trace_validation.h, docs/validate.md): the change-point test by hand,
// the table on a stationary synthetic trace (small errors, the verdicts recomputed here), a trace
// with a change point flagged, and the bad options.

#include "experiments/trace_validation.h"

#include <fmt/format.h>

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "fit/delay_trace.h"
#include "models/base/random_stream.h"
#include "sim/delays/heterogeneous_markov_delay.h"
#include "sim/delays/markov_delay.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::TempDir;

/// `iterations` rows of `workers` times a + Exp(rate), the parameters switching to (a2, rate2)
/// after `change` iterations.
std::string exponential_trace(int workers, int iterations, int change, double a2, double rate2) {
  boost::random::mt19937 engine(99);
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 0; t < iterations; ++t) {
    const bool after = t >= change;
    boost::random::exponential_distribution<double> tail(after ? rate2 : 2.0);
    for (int i = 0; i < workers; ++i) {
      csv += fmt::format("{},{},{:.9f}\n", t + 1, i, (after ? a2 : 1.0) + tail(engine));
    }
  }
  return csv;
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST_CASE("validate: the change-point statistic by hand", "[experiments][validate]") {
  // Parts {1, 2, 3, 6} and {2, 3, 5, 6}: means 3 and 4; batches of ⌊√4⌋ = 2 of the centred parts
  // give −1.5, 1.5, −1.5, 1.5, so σ² = 2·9/(4 − 2) = 9 and z = 1/(3·√(1/4 + 1/4)).
  const StationarityTest t = test_stationarity({1, 2, 3, 6, 2, 3, 5, 6}, 4, 0.01);
  CHECK(t.batch == 2);
  CHECK(t.fit_mean == 3.0);
  CHECK(t.holdout_mean == 4.0);
  CHECK(t.long_run_sd == Approx(3.0));
  CHECK(t.statistic == Approx(1.0 / (3.0 * std::sqrt(0.5))));
  CHECK(t.p_value == Approx(0.6374).margin(1e-4));
  CHECK(t.stationary());
  // A level shift with no variation inside the parts is a certain change.
  const StationarityTest shift = test_stationarity({1, 1, 1, 1, 2, 2, 2, 2}, 4, 0.01);
  CHECK_FALSE(shift.stationary());
}

TEST_CASE(
    "validate: a stationary trace is predicted within a few percent by every model, which are "
    "scored on held-out error",
    "[experiments][validate][heavy]") {
  const TempDir dir("validate_stationary");
  const std::string path = dir.write("times.csv", exponential_trace(8, 800, 800, 1.0, 2.0));
  const sim::DelayTrace trace = sim::read_delay_trace(path);
  const Validation v =
      validate_trace(testing::small_least_squares_config(), "cfg.json", dir.path(), trace, {});
  CHECK(v.fit_iterations == 400);
  CHECK(v.holdout_iterations == 400);
  CHECK(v.stationarity.stationary());
  CHECK(v.fitted_delay["tail"] == "load");  // the config's (default) tail
  int compared = 0;
  for (const auto& r : v.rows) {
    INFO(r.model << " / " << r.scheme << ": " << r.predicted << " vs " << r.replayed << " "
                 << r.problem);
    if (r.scheme.rfind("bgc", 0) == 0) {
      CHECK(r.problem.find("no timing model") != std::string::npos);
      continue;
    }
    REQUIRE(r.problem.empty());
    ++compared;
    // Each mean over 400 rows has a s.e. of ≤ 1.5%: 10% is over 4 s.e. of the difference.
    CHECK(std::abs(r.relative_error) < 0.10);
    CHECK(r.relative_error == Approx((r.predicted - r.replayed) / r.replayed));
  }
  CHECK(compared >= 3 * 10);
  REQUIRE(v.verdicts.size() == 3);
  for (const auto& m : v.verdicts) {
    double predicted = INFINITY;
    double replayed = INFINITY;
    std::string recommended;
    std::string best;
    for (const auto& r : v.rows) {
      if (r.model == m.model && r.problem.empty()) {
        if (r.predicted < predicted) {
          predicted = r.predicted;
          recommended = r.scheme;
        }
        if (r.replayed < replayed) {
          replayed = r.replayed;
          best = r.scheme;
        }
      }
    }
    CHECK(m.recommended == recommended);
    CHECK(m.best == best);
    CHECK(m.recommended_is_best == (m.recommended_replayed <= 1.1 * replayed));
  }
  // Each row's error is the mean of its three absolute relative errors; a model's score the mean
  // of its rows' errors plus |its lag-1 autocorrelation − the held-out part's|; the chosen model
  // the smallest score.
  REQUIRE(v.scores.size() == 3);
  // The held-out part's ρ₁ by hand (the per-iteration means of rows 400..799).
  std::vector<double> means;
  for (std::size_t t = 400; t < 800; ++t) {
    double m = 0.0;
    for (const double x : trace.per_iteration[t]) m += x / 8.0;
    means.push_back(m);
  }
  double mean = 0.0;
  for (const double m : means) mean += m / 400.0;
  double num = 0.0;
  double den = 0.0;
  for (std::size_t t = 0; t < means.size(); ++t) {
    den += (means[t] - mean) * (means[t] - mean);
    if (t + 1 < means.size()) num += (means[t] - mean) * (means[t + 1] - mean);
  }
  CHECK(v.holdout_lag1 == Approx(num / den).epsilon(1e-12));
  // i.i.d. rows: within the white-noise band, and L = 1 gives the block replay ρ₁ = 0 too.
  CHECK(std::abs(v.holdout_lag1) < 2.0 / std::sqrt(400.0));
  CHECK(v.block_length == 1);
  double smallest = INFINITY;
  std::string smallest_model;
  for (const auto& m : v.scores) {
    double sum = 0.0;
    std::size_t count = 0;
    for (const auto& r : v.rows) {
      if (r.model != m.model || !r.problem.empty()) continue;
      const double e = (std::abs(r.predicted / r.replayed - 1.0) +
                        std::abs(r.predicted_median / r.replayed_median - 1.0) +
                        std::abs(r.predicted_q90 / r.replayed_q90 - 1.0)) /
                       3.0;
      CHECK(r.error == Approx(e).epsilon(1e-12));
      CHECK(r.replayed_median <= r.replayed_q90);
      sum += e;
      ++count;
    }
    CHECK(m.schemes == count);
    // No persistence to model: L = 1 and the empirical marginals give 0, the family (whatever AIC
    // picks on i.i.d. exponentials) a chain with almost none.
    if (m.model == "block replay" || m.model == "empirical") {
      CHECK(m.lag1 == 0.0);
    }
    CHECK(std::abs(m.lag1) < 0.05);
    CHECK(m.score == Approx(sum / static_cast<double>(count) + std::abs(m.lag1 - v.holdout_lag1))
                         .epsilon(1e-12));
    // i.i.d. workers, 400 rows a part: every model's quantiles are within a few percent too.
    CHECK(m.score < 0.10 + 2.0 / std::sqrt(400.0));
    if (m.score < smallest) {
      smallest = m.score;
      smallest_model = m.model;
    }
  }
  CHECK(v.chosen == smallest_model);
  CHECK(v.choice_reason == "the smallest held-out error");
  const nlohmann::json j = validation_json(v);
  CHECK(j["stationarity"]["stationary"] == true);
  CHECK(j["rows"].size() == v.rows.size());
  CHECK(j["chosen"] == v.chosen);
  CHECK(j["scores"].size() == 3);
}

TEST_CASE("validate: proportional loads estimated from the fit part are predicted on the rest",
          "[experiments][validate][heavy]") {
  // Workers 1 and 5 of 8 take 1.6× as long (not neighbours: their group is not consecutive
  // workers). The fit part's heterogeneous fit estimates the factors; the two `proportional`
  // candidates built from them are compared by every model, the trace-built ones within 10 %.
  boost::random::mt19937 engine(7);
  boost::random::exponential_distribution<double> tail(2.0);
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 1; t <= 600; ++t) {
    for (int i = 0; i < 8; ++i) {
      csv += fmt::format(
          "{},{},{:.9f}\n", t, i, (i == 1 || i == 5 ? 1.6 : 1.0) * (1.0 + tail(engine)));
    }
  }
  const TempDir dir("validate_proportional");
  const sim::DelayTrace trace = sim::read_delay_trace(dir.write("times.csv", csv));
  const Validation v =
      validate_trace(testing::small_least_squares_config(), "cfg.json", dir.path(), trace, {});
  int rows = 0;
  double exact_proportional = 0.0;
  double exact_frc = 0.0;
  double cyclic = 0.0;
  double proportional_cyclic = 0.0;
  for (const auto& r : v.rows) {
    if (r.model == "block replay" && r.scheme == "exact frc d=2") exact_frc = r.replayed;
    if (r.model == "block replay" && r.scheme == "crc s=1") cyclic = r.replayed;
    if (r.model == "block replay" && r.scheme == "exact proportional_crc s=1 k=4n") {
      proportional_cyclic = r.replayed;
    }
    if (r.scheme.find("proportional") == std::string::npos) continue;
    INFO(r.model << " / " << r.scheme << ": " << r.predicted << " vs " << r.replayed << " "
                 << r.problem);
    REQUIRE(r.problem.empty());
    ++rows;
    if (r.model == "block replay" || r.model == "empirical") {
      CHECK(std::abs(r.relative_error) < 0.10);
    }
    if (r.model == "block replay" && r.scheme == "exact proportional d=2 k=4n") {
      exact_proportional = r.replayed;
    }
  }
  CHECK(rows == 3 * 3);
  // The slow pair shares a group holding fewer partitions: exact decoding waits less than FRC's.
  CHECK(exact_proportional > 0.0);
  CHECK(exact_proportional < exact_frc);
  // The slow pair holds fewer partitions of the cyclic code too: waiting for n − 1 is shorter.
  CHECK(proportional_cyclic > 0.0);
  CHECK(proportional_cyclic < cyclic);
}

TEST_CASE("validate: a change point between the parts is flagged and the block replay chosen",
          "[experiments][validate][heavy]") {
  const TempDir dir("validate_change");
  // After 300 of 600 iterations the shift grows by half and the tail doubles.
  const std::string path = dir.write("times.csv", exponential_trace(8, 600, 300, 1.5, 1.0));
  const Validation v = validate_trace(testing::small_least_squares_config(),
                                      "cfg.json",
                                      dir.path(),
                                      sim::read_delay_trace(path),
                                      {});
  CHECK_FALSE(v.stationarity.stationary());
  CHECK(v.stationarity.p_value < 1e-6);
  CHECK(v.stationarity.holdout_mean > v.stationarity.fit_mean);
  CHECK(validation_json(v)["stationarity"]["stationary"] == false);
  // The scores rank nothing across a change: the whole trace replayed in blocks is chosen.
  CHECK(v.chosen == "block replay");
  CHECK(v.choice_reason.starts_with("the trace is not stationary"));
}

TEST_CASE("validate: bad holdouts and traces are config errors", "[experiments][validate]") {
  const TempDir dir("validate_errors");
  const auto config = testing::small_least_squares_config();
  const sim::DelayTrace trace =
      sim::read_delay_trace(dir.write("t.csv", exponential_trace(8, 20, 20, 1.0, 2.0)));
  const auto with_holdout = [](double h) {
    ValidationOptions options;
    options.holdout = h;
    return options;
  };
  for (const double h : {0.0, 1.0, -0.5, 1.5}) {
    CHECK(config_error([&] {
            (void)validate_trace(config, "cfg.json", dir.path(), trace, with_holdout(h));
          }) ==
          fmt::format("--holdout: outside (0, 1); got {}; expected a fraction of the iterations "
                      "strictly between 0 and 1",
                      h));
  }
  CHECK(config_error([&] {
          (void)validate_trace(config, "cfg.json", dir.path(), trace, with_holdout(0.95));
        }) ==
        "--holdout: leaves 1 of 20 iterations to fit and 19 to replay; got 0.95; expected "
        "at least 2 in each part");
  const sim::DelayTrace three =
      sim::read_delay_trace(dir.write("three.csv", exponential_trace(3, 20, 20, 1.0, 2.0)));
  CHECK(config_error([&] { (void)validate_trace(config, "cfg.json", dir.path(), three, {}); }) ==
        fmt::format("--trace: trace '{}' has 3 workers; expected 8 (the config's workers)",
                    three.path));
  const sim::DelayTrace pool =
      sim::read_delay_trace(dir.write("pool.csv", "worker,seconds\n0,1\n"));
  CHECK(config_error([&] { (void)validate_trace(config, "cfg.json", dir.path(), pool, {}); }) ==
        fmt::format("--trace: {}: no iteration column; expected an iteration,worker,seconds trace",
                    pool.path));
}

}  // namespace
}  // namespace stragglersim::experiments

namespace stragglersim::experiments {
namespace {

TEST_CASE("validate: the Markov families' lag-1 autocorrelation matches a long simulation",
          "[experiments][validate]") {
  // ρ₁ of the mean over workers of 100 000 simulated iterations against the closed form, for a
  // markov and a heterogeneous_markov block; the s.e. of a sample ρ₁ from an AR(1)-like series
  // is about √((1 − ρ²)/T)·√((1 + ρ²)/(1 − ρ²)) (Bartlett), under 0.004 here.
  const nlohmann::json markov = {{"kind", "markov"},
                                 {"shift", 0.5},
                                 {"rate", 2.0},
                                 {"slow_shift", 2.0},
                                 {"slow_rate", 0.5},
                                 {"to_slow", 0.05},
                                 {"to_normal", 0.25}};
  constexpr int kWorkers = 4;
  constexpr int kIterations = 100'000;
  const sim::MarkovDelay::Options o{.shift = 0.5,
                                    .rate = 2.0,
                                    .slow_shift = 2.0,
                                    .slow_rate = 0.5,
                                    .to_slow = 0.05,
                                    .to_normal = 0.25};
  const std::vector<double> factors = {1.0, 1.3, 0.8, 2.0};
  sim::MarkovDelay plain(std::vector<double>(kWorkers, 1.0), o);
  sim::HeterogeneousMarkovDelay scaled(std::vector<double>(kWorkers, 1.0),
                                       {.markov = o, .factors = factors});
  for (sim::DelayModel* model :
       {static_cast<sim::DelayModel*>(&plain), static_cast<sim::DelayModel*>(&scaled)}) {
    RandomEngine rng = make_engine(8, Stream::kDelays);
    std::vector<double> row(kWorkers);
    std::vector<double> means;
    for (int t = 0; t < kIterations; ++t) {
      model->sample(static_cast<std::uint64_t>(t + 1), rng, row);
      double m = 0.0;
      for (const double x : row) m += x / kWorkers;
      means.push_back(m);
    }
    double mean = 0.0;
    for (const double m : means) mean += m / kIterations;
    double num = 0.0;
    double den = 0.0;
    for (std::size_t t = 0; t < means.size(); ++t) {
      den += (means[t] - mean) * (means[t] - mean);
      if (t + 1 < means.size()) num += (means[t] - mean) * (means[t + 1] - mean);
    }
    const double expected = markov_mean_lag1(markov);
    INFO(model->name() << ": measured " << num / den << ", closed form " << expected);
    CHECK(expected > 0.3);  // a persistent chain, not a vacuous comparison
    CHECK(std::abs(num / den - expected) < 4.0 * 0.004);
  }
}

}  // namespace
}  // namespace stragglersim::experiments

// `validate`'s time to target (experiments/validation_time_to_target.h, docs/validate.md "Time to
// target"): the replay rank against a sort, the picks by hand, and on a small config every
// candidate advise ranks (baselines, adaptive rules, time-optimal methods, proportional loads,
// and over a ring all-reduce the collective schemes) predicted by each model and replayed on the
// held-out part, one prediction and one replay recomputed here; a delay-only config and one
// without a target not compared.

#include "experiments/validation_time_to_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "experiments/scheme_advice.h"
#include "experiments/trace_validation.h"
#include "fit/delay_trace.h"
#include "models/base/random_stream.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

using testing::TempDir;

constexpr double kTttInf = std::numeric_limits<double>::infinity();

/// 8 workers, worker 3 1.6 times slower, 0.5 + Exp(2) per unit: `iterations` rows.
std::string ttt_trace(int iterations) {
  boost::random::mt19937 engine(21);
  boost::random::exponential_distribution<double> tail(2.0);
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 0; t < iterations; ++t) {
    for (int i = 0; i < 8; ++i) {
      csv += fmt::format("{},{},{:.9f}\n", t, i, (i == 3 ? 1.6 : 1.0) * (0.5 + tail(engine)));
    }
  }
  return csv;
}

nlohmann::json ttt_config() {
  nlohmann::json c = testing::small_least_squares_config();
  c["optimizer"]["iterations"] = 60;
  return c;
}

const TimeToTargetRow* ttt_row(const TimeToTargetValidation& t, const std::string& scheme) {
  for (const auto& r : t.rows) {
    if (r.scheme == scheme) return &r;
  }
  return nullptr;
}

TEST_CASE("validate time to target: the replay rank is one plus the count of faster schemes",
          "[experiments][validate]") {
  // Every vector of 5 values from {1, 2, 3, +inf}: the rank from a sort (the position of the
  // first equal value in ascending order, plus one) against replay_rank.
  const std::vector<double> values = {1.0, 2.0, 3.0, kTttInf};
  for (int code = 0; code < 4 * 4 * 4 * 4 * 4; ++code) {
    std::vector<double> x;
    for (int k = 0, c = code; k < 5; ++k, c /= 4)
      x.push_back(values[static_cast<std::size_t>(c % 4)]);
    std::vector<double> sorted = x;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto first = std::lower_bound(sorted.begin(), sorted.end(), x[i]) - sorted.begin();
      CHECK(replay_rank(x, i) == static_cast<std::size_t>(first) + 1);
    }
  }
}

TEST_CASE("validate time to target: each model's pick with its rank and its distance to the best",
          "[experiments][validate]") {
  const auto row = [](std::string scheme, std::vector<double> predicted, double replayed) {
    TimeToTargetRow r;
    r.scheme = std::move(scheme);
    r.predicted = std::move(predicted);
    r.methods.assign(r.predicted.size(), "m");
    r.runs = 4;
    r.reached = std::isfinite(replayed) ? 4 : 2;
    r.replayed = replayed;
    r.replayed_se = 0.1;
    return r;
  };
  std::vector<TimeToTargetRow> rows = {row("a", {3.0, 1.0}, 5.0),
                                       row("b", {1.0, 2.0}, kTttInf),
                                       row("c", {2.0, kTttInf}, 4.0),
                                       row("d", {0.5, 0.1}, 1.0)};
  rows[3].problem = "cannot run";  // not compared: no pick, no rank
  std::vector<double> replayed;
  for (std::size_t i = 0; i < 3; ++i) replayed.push_back(rows[i].replayed);
  for (std::size_t i = 0; i < 3; ++i) rows[i].rank = replay_rank(replayed, i);
  const auto picks = time_to_target_picks(rows, {"m1", "m2"});
  REQUIRE(picks.size() == 2);
  // m1 picks b (1.0; d is not compared): not reached in every replay run, last of 3.
  CHECK(picks[0].scheme == "b");
  CHECK(picks[0].rank == 3);
  CHECK(picks[0].of == 3);
  CHECK(picks[0].best == "c");
  CHECK(picks[0].best_replayed == 4.0);
  CHECK(std::isinf(picks[0].behind_best));
  CHECK(picks[0].reached == 2);
  // m2 picks a (1.0): replayed 5 against c's 4, 25 % behind, rank 2.
  CHECK(picks[1].scheme == "a");
  CHECK(picks[1].rank == 2);
  CHECK(picks[1].behind_best == Approx(0.25));
}

TEST_CASE("validate time to target: every advise candidate predicted by each model and replayed",
          "[experiments][validate][heavy]") {
  const TempDir dir("validate_ttt");
  const std::string path = dir.write("times.csv", ttt_trace(160));
  const sim::DelayTrace trace = sim::read_delay_trace(path);
  ValidationOptions options;
  options.time_to_target.suboptimality = 0.05;
  options.time_to_target.repetitions = 3;
  options.time_to_target.fixed_step = true;  // advise --fixed-step's: the tuned grid costs minutes
  const Validation v = validate_trace(ttt_config(), "cfg.json", dir.path(), trace, options);
  const TimeToTargetValidation& t = v.time_to_target;
  REQUIRE(t.not_compared.empty());
  CHECK(t.models == std::vector<std::string>{v.scores[0].model, "block replay", "empirical"});
  CHECK(t.chosen == v.chosen);
  // The candidates advise ranks for 8 workers, the baselines, adaptive rules, time-optimal
  // methods and the proportional loads (the fit part's slow worker) among them.
  for (const std::string scheme : {"uncoded",
                                   "exact frc d=2",
                                   "erasurehead frc d=2 r=4",
                                   "k-sync K=4",
                                   "k-async K=4",
                                   "erasurehead frc d=2 adaptive r>=4",
                                   "erasurehead dynamic_frc d=2 r=4 K=2",
                                   "rennala B=8",
                                   "malenia S=8",
                                   "rescaled asgd",
                                   "exact proportional d=2 k=4n"}) {
    INFO(scheme);
    const TimeToTargetRow* r = ttt_row(t, scheme);
    REQUIRE(r != nullptr);
    CHECK(r->problem.empty());
    CHECK(r->runs == 3);
  }
  CHECK(std::any_of(t.rows.begin(), t.rows.end(), [](const auto& r) {
    return r.scheme.starts_with("anytime window=");
  }));
  // The fixed blocks: the proportional code's factors are numbers, not "delay".
  CHECK(ttt_row(t, "exact proportional d=2 k=4n")->block["code"]["factors"].is_array());
  // Ranks recomputed from the compared rows' replayed means; the rows come in rank order.
  std::vector<double> replayed;
  for (const auto& r : t.rows) {
    if (r.problem.empty()) replayed.push_back(r.replayed);
  }
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    CHECK(t.rows[i].rank == replay_rank(replayed, i));
    if (i > 0) CHECK(t.rows[i - 1].rank <= t.rows[i].rank);
  }
  // Each model's pick is its smallest prediction.
  REQUIRE(t.picks.size() == 3);
  for (std::size_t m = 0; m < 3; ++m) {
    const auto smallest = std::min_element(t.rows.begin(), t.rows.end(), [m](auto& a, auto& b) {
      const double x = a.problem.empty() ? a.predicted[m] : kTttInf;
      const double y = b.problem.empty() ? b.predicted[m] : kTttInf;
      return x < y;
    });
    CHECK(t.picks[m].scheme == smallest->scheme);
    CHECK(t.picks[m].of == replayed.size());
  }
  // One replay recomputed: uncoded on the held-out 80 rows from random start rows, 3 runs with
  // the replay's seeds; the mean and its s.e. by hand.
  std::string held = "iteration,worker,seconds\n";
  for (std::size_t i = 80; i < 160; ++i) {
    for (std::size_t w = 0; w < 8; ++w) {
      held += fmt::format("{},{},{}\n", trace.iterations[i], w, trace.per_iteration[i][w]);
    }
  }
  nlohmann::json config = ttt_config();
  config["delay"] = {{"kind", "trace"},
                     {"path", dir.write("held.csv", held)},
                     {"mode", "cycle"},
                     {"start", "random"}};
  config["code"] = {{"kind", "uncoded"}};
  config["stopping"] = {{"rule", "all"}};
  config["stragglers"] = "cancel";
  config["rescale"] = "none";
  const RunPlan plan = plan_run(config, "cfg.json", dir.path());
  const std::vector<double> times = measure_time_to_target(
      plan, 3, derive_seed(plan.seed, kTimeToTargetReplayStream), t.target_loss);
  const double mean = (times[0] + times[1] + times[2]) / 3.0;
  double squares = 0.0;
  for (const double x : times) squares += (x - mean) * (x - mean);
  const TimeToTargetRow* uncoded = ttt_row(t, "uncoded");
  CHECK(uncoded->replayed == Approx(mean).epsilon(1e-12));
  CHECK(uncoded->replayed_se == Approx(std::sqrt(squares / 2.0 / 3.0)).epsilon(1e-9));
  // One prediction recomputed: advise with the empirical marginals of the fit part.
  std::string fit = "iteration,worker,seconds\n";
  for (std::size_t i = 0; i < 80; ++i) {
    for (std::size_t w = 0; w < 8; ++w) {
      fit += fmt::format("{},{},{}\n", trace.iterations[i], w, trace.per_iteration[i][w]);
    }
  }
  AdviceOptions advice;
  advice.suboptimality = 0.05;
  advice.repetitions = 3;
  advice.predicted_delay = {{"kind", "trace"},
                            {"path", dir.write("fit.csv", fit)},
                            {"mode", "empirical"},
                            {"tail", "load"}};
  const Advice a = advise(ttt_config(), "cfg.json", dir.path(), advice);
  for (const auto& c : a.ranked) {
    if (c.label == "exact frc d=2") {
      CHECK(ttt_row(t, "exact frc d=2")->predicted[2] == Approx(c.total).epsilon(1e-12));
    }
  }
  CHECK(t.target_gap == Approx(a.target_gap).epsilon(1e-12));
  const nlohmann::json j = validation_json(v)["time_to_target"];
  CHECK(j["rows"].size() == t.rows.size());
  CHECK(j["picks"].size() == 3);
  CHECK(j["rows"][0]["predicted"].size() == 3);
}

TEST_CASE("validate time to target: over a ring all-reduce the collective schemes are compared",
          "[experiments][validate][heavy]") {
  const TempDir dir("validate_ttt_ring");
  const sim::DelayTrace trace = sim::read_delay_trace(dir.write("times.csv", ttt_trace(80)));
  nlohmann::json config = ttt_config();
  config["aggregation"] = {{"kind", "ring"}, {"latency", 0.001}, {"bandwidth", 1e6}};
  ValidationOptions options;
  options.time_to_target.suboptimality = 0.05;
  options.time_to_target.repetitions = 2;
  options.time_to_target.fixed_step = true;  // advise --fixed-step's: the tuned grid costs minutes
  const TimeToTargetValidation t =
      validate_trace(config, "cfg.json", dir.path(), trace, options).time_to_target;
  REQUIRE(t.not_compared.empty());
  for (const std::string scheme : {"ring: uncoded",
                                   "ring: backup workers r=4",
                                   "ring: exact frc d=2",
                                   "ring: erasurehead frc d=2 r=4",
                                   "parameter_server: uncoded",
                                   "parameter_server: k-async K=4"}) {
    INFO(scheme);
    const TimeToTargetRow* r = ttt_row(t, scheme);
    REQUIRE(r != nullptr);
    CHECK(r->problem.empty());
    CHECK(r->rank >= 1);
  }
  CHECK(std::any_of(t.rows.begin(), t.rows.end(), [](const auto& r) {
    return r.scheme.starts_with("ring: bounded-time deadline=") && r.problem.empty();
  }));
}

TEST_CASE("validate time to target: not compared without data or without a target",
          "[experiments][validate]") {
  const TempDir dir("validate_ttt_none");
  const sim::DelayTrace trace = sim::read_delay_trace(dir.write("times.csv", ttt_trace(40)));
  nlohmann::json delay_only = ttt_config();
  delay_only["data"] = nullptr;
  delay_only.erase("loss");
  delay_only["optimizer"] = {{"iterations", 30}};
  const Validation v = validate_trace(delay_only, "cfg.json", dir.path(), trace, {});
  CHECK(v.time_to_target.not_compared ==
        "no data: the config's data is null; time to target needs data, a loss and a target");
  CHECK_FALSE(v.rows.empty());  // the iteration times are still compared
  CHECK(validation_json(v)["time_to_target"] ==
        nlohmann::json{{"not_compared", v.time_to_target.not_compared}});
  const Validation w = validate_trace(ttt_config(), "cfg.json", dir.path(), trace, {});
  CHECK(w.time_to_target.not_compared ==
        "no target: the config has no target_loss; give one or --suboptimality");
  // The held-out score in its two parts: the scheme error and the persistence term.
  CHECK(score_text({{"scheme_error", 0.008}, {"persistence", 0.25}, {"lag1", 0.19}}, 0.44) ==
        "scheme error 0.80% + persistence 0.25 (lag-1 0.19 vs 0.44)");
  CHECK(score_text({{"scheme_error", nullptr}, {"persistence", 0.0}, {"lag1", 0.0}}, 0.0) ==
        "scheme error - + persistence 0.00 (lag-1 0.00 vs 0.00)");
  for (const auto& s : w.scores) {
    CHECK(s.score == Approx(s.scheme_error + s.persistence).epsilon(1e-12));
    CHECK(s.persistence == Approx(std::abs(s.lag1 - w.holdout_lag1)).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace stragglersim::experiments

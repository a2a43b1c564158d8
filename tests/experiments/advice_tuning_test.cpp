// `advise`'s tuning (experiments/advice_tuning.h, docs/advise.md "Tuning"): the grids, the
// families, the choice recomputed over the whole grid, edge flags, divergent runs counted as not
// reaching the target, --fixed-step's output byte for byte the untuned advise's, and the
// recommendation within 10 % of the best time to target of an exhaustive sweep of the same grid
// (an EC2-like generated trace and two shipped traces).

#include "experiments/advice_tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/scheme_advice.h"
#include "sim/scheme.h"
#include "tests/test_paths.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

const std::filesystem::path kTuningSource(stragglersim::testing::source_dir());

std::vector<double> tuning_test_values(const std::vector<TunedParameter>& params) {
  return params.empty() ? std::vector<double>() : params.front().values;
}

const SchemeCandidate& tuning_test_find(const std::vector<SchemeCandidate>& c,
                                        const std::string& label) {
  const auto it = std::find_if(c.begin(), c.end(), [&](const auto& x) { return x.label == label; });
  REQUIRE(it != c.end());
  return *it;
}

/// Logistic regression on a small two-class mixture, 10 workers, the given delay block.
nlohmann::json tuning_test_config(const nlohmann::json& delay, int iterations) {
  return {{"name", "advise-tuning"},
          {"seed", 7},
          {"workers", 10},
          {"partitions", 10},
          {"data",
           {{"source", "synthetic"},
            {"generator", "gaussian_mixture"},
            {"rows", 200},
            {"features", 10},
            {"test_fraction", 0}}},
          {"loss", {{"kind", "logistic"}, {"l2", 0.001}}},
          {"code", {{"kind", "uncoded"}}},
          {"stopping", {{"rule", "all"}}},
          {"rescale", "none"},
          {"delay", delay},
          {"stragglers", "cancel"},
          {"optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", iterations}}},
          {"backend", {{"kind", "simulated"}}},
          {"threads", 1}};  // results never depend on it; a pool per run costs more here
}

/// The EC2-like trace: 10 workers near lock-step (a shared per-iteration factor with 1 %
/// spread, 0.3 % per worker), worker 9 2 % slower; 200 iterations.
std::string tuning_test_ec2_trace() {
  std::mt19937_64 rng(2026);
  std::normal_distribution<double> common(1.0, 0.01);
  std::normal_distribution<double> own(1.0, 0.003);
  std::string csv = "iteration,worker,seconds\n";
  for (int t = 0; t < 200; ++t) {
    const double c = common(rng);
    for (int w = 0; w < 10; ++w) {
      csv += fmt::format("{},{},{:.6f}\n", t, w, c * own(rng) * (w == 9 ? 1.02 : 1.0));
    }
  }
  return csv;
}

nlohmann::json tuning_test_trace_delay(const std::string& path) {
  return {{"kind", "trace"}, {"path", path}, {"mode", "cycle"}, {"start", "random"}};
}

/// Every point of a tuned row's grid: its block at each combination of the grid's values.
std::vector<nlohmann::json> tuning_test_grid_blocks(const SchemeCandidate& c) {
  std::vector<nlohmann::json> blocks = {c.block};
  for (const auto& [pointer, values] : c.tuning->grid.items()) {
    std::vector<nlohmann::json> next;
    for (const auto& block : blocks) {
      for (const auto& v : values) {
        nlohmann::json b = block;
        b[nlohmann::json::json_pointer(pointer)] = v;
        next.push_back(std::move(b));
      }
    }
    blocks = std::move(next);
  }
  return blocks;
}

/// Mean time to the target over `runs` seeded runs of the candidate at `block` (+∞ unless every
/// run reaches it; a run that stops on a non-finite loss does not).
double tuning_test_mean_time(const Advice& a,
                             const std::filesystem::path& base_dir,
                             SchemeCandidate c,
                             const nlohmann::json& block,
                             int runs) {
  c.block = block;
  nlohmann::json config = a.config;
  config["delay"] = a.predicted_delay;
  try {
    const RunPlan plan = plan_run(apply_candidate(config, c), "tuning.json", base_dir);
    double sum = 0.0;
    for (const double t : measure_time_to_target(plan, runs, 0x5eed, a.target_loss)) {
      sum += t;
    }
    return sum / runs;
  } catch (const sim::NumericalError&) {
    return std::numeric_limits<double>::infinity();
  } catch (const ConfigError&) {
    return std::numeric_limits<double>::infinity();
  }
}

/// advise's recommendation against an exhaustive sweep of every candidate's grid: the same
/// `runs` seeds for every point; returns the recommendation's mean over the best one.
double tuning_test_against_exhaustive(const nlohmann::json& config,
                                      const std::filesystem::path& base_dir,
                                      const std::string& name) {
  AdviceOptions o;
  o.suboptimality = 0.05;
  o.repetitions = 4;
  const Advice a = advise(config, "tuning.json", base_dir, o);
  REQUIRE_FALSE(a.ranked.empty());
  const SchemeCandidate& best = a.ranked.front();
  REQUIRE(std::isfinite(best.total));
  REQUIRE(best.tuning);
  constexpr int kRuns = 6;
  double exhaustive = std::numeric_limits<double>::infinity();
  std::string where;
  std::size_t points = 0;
  for (const auto& c : a.ranked) {
    if (!c.tuning) {
      continue;
    }
    for (const auto& block : tuning_test_grid_blocks(c)) {
      ++points;
      const double t = tuning_test_mean_time(a, base_dir, c, block, kRuns);
      if (t < exhaustive) {
        exhaustive = t;
        where = c.label + " at " + block.dump();
      }
    }
  }
  const double recommended = tuning_test_mean_time(a, base_dir, best, best.block, kRuns);
  const double ratio = recommended / exhaustive;
  // The table of docs/advise.md "Tuning" is these lines.
  WARN(
      fmt::format("{}: recommended {} {} ({}): {:.4g} s; exhaustive best of {} points: {:.4g} "
                  "s ({}); ratio {:.3f}",
                  name,
                  best.label,
                  tuning_summary(*best.tuning),
                  best.total,
                  recommended,
                  points,
                  exhaustive,
                  where,
                  ratio));
  return ratio;
}

}  // namespace

TEST_CASE("advise tuning: the K, r and deadline grids of 10 workers", "[advise][tuning]") {
  const auto candidates = scheme_candidates(10, 2.0);
  const auto params = [&](const std::string& label) {
    return tuned_parameters(tuning_test_find(candidates, label), 10);
  };
  // ⌈f·10⌉ for f = 1/8 … 1: first_r below n, k_async up to n.
  CHECK(tuning_test_values(params("ignore-stragglers r=8")) ==
        std::vector<double>{2, 3, 4, 5, 7, 8, 9});
  CHECK(params("ignore-stragglers r=8").front().pointer == "/stopping/r");
  CHECK(params("erasurehead frc d=2 r=5").front().pointer == "/stopping/r");
  CHECK(params("k-sync K=5").front().label_key == "K");
  CHECK(tuning_test_values(params("k-async K=5")) == std::vector<double>{2, 3, 4, 5, 7, 8, 9, 10});
  CHECK(params("k-async K=5").front().pointer == "/stopping/k");
  CHECK(tuning_test_values(params("erasurehead frc d=2 deadline=2")) ==
        std::vector<double>{1.0, 1.5, 2.0, 3.0, 4.0});
  CHECK(tuning_test_values(params("anytime window=2")) ==
        std::vector<double>{1.0, 1.5, 2.0, 3.0, 4.0});
  // Step only: exact codes, BGC's random supports, the adaptive rules, the time-optimal methods.
  for (const char* label : {"uncoded",
                            "exact frc d=2",
                            "crc s=1",
                            "bgc d=2 r=5",
                            "erasurehead frc d=2 adaptive r>=5",
                            "rennala B=10",
                            "rescaled asgd"}) {
    INFO(label);
    CHECK(params(label).empty());
    CHECK(grid_points(tuning_test_find(candidates, label), 10) == kStepMultipliers.size());
  }
  CHECK(grid_points(tuning_test_find(candidates, "k-async K=5"), 10) == 6 * 8);
}

TEST_CASE("advise tuning: candidates that differ only in a tuned parameter are one family",
          "[advise][tuning]") {
  std::vector<std::string> labels;
  for (const auto& c : tuning_families(scheme_candidates(12, 0.0), 12)) {
    labels.push_back(c.label);
  }
  // ignore-stragglers r = 9, 6 → the member at n/2; ErasureHead d = 2 and d = 3 at r = 3, 6, 9
  // → r = 6 each; BGC d = 2 and 3 stay apart (not tuned in r: their codes differ anyway).
  CHECK(labels == std::vector<std::string>{"uncoded",
                                           "ignore-stragglers r=6",
                                           "exact frc d=2",
                                           "exact frc d=3",
                                           "crc s=1",
                                           "crc s=2",
                                           "multi_message frc d=2",
                                           "erasurehead frc d=2 r=6",
                                           "erasurehead frc d=3 r=6",
                                           "bgc d=2 r=6",
                                           "bgc d=3 r=6",
                                           "erasurehead frc d=2 adaptive r>=6",
                                           "erasurehead frc d=2 adaptive deadline",
                                           "erasurehead dynamic_frc d=2 r=6 K=2",
                                           "k-sync K=6",
                                           "k-async K=6",
                                           "rennala B=12",
                                           "malenia S=12",
                                           "ringmaster R=12",
                                           "rescaled asgd"});
}

TEST_CASE("advise tuning: the label names the chosen values", "[advise][tuning]") {
  SchemeCandidate c =
      tuning_test_find(scheme_candidates(10, 2.0), "erasurehead dynamic_frc d=2 r=5 K=2");
  c.tuning = TuningChoice{};
  c.tuning->parameters["/stopping/r"] = 8;
  relabel_tuned(c);
  CHECK(c.label == "erasurehead dynamic_frc d=2 r=8 K=2");  // K=2 is the regrouping, not tuned
  SchemeCandidate w = tuning_test_find(scheme_candidates(10, 2.0), "anytime window=2");
  w.tuning = TuningChoice{};
  w.tuning->parameters["/stopping/window"] = 1.25;
  relabel_tuned(w);
  CHECK(w.label == "anytime window=1.25");
}

TEST_CASE("advise tuning: a run whose loss becomes non-finite counts as not reaching the target",
          "[advise][tuning]") {
  // Least squares at 400/β: the iterates grow about 400-fold per iteration and the loss
  // overflows within the horizon. advise's fixed-step estimate stops there (numerical trouble); the
  // tuning counts the runs as not reaching the target.
  nlohmann::json config =
      tuning_test_config({{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 2.0}}, 80);
  config["data"]["generator"] = "linear_regression";
  config["data"]["condition"] = 1;
  config["loss"] = {{"kind", "least_squares"}, {"l2", 0.01}};
  config["workers"] = 4;  // few candidates: the exact curves of least squares cost most here
  config["partitions"] = 4;
  const RunPlan base = plan_run(config, "tuning.json", kTuningSource);
  AdviceOptions o;
  o.suboptimality = 0.05;
  o.repetitions = 2;
  o.fixed_step = true;
  const Advice a = advise(config, "tuning.json", kTuningSource, o);
  SchemeCandidate c = tuning_test_find(a.ranked, "ignore-stragglers r=3");
  c.block["optimizer"] = {{"step", 400.0 * base.step}};
  SchemeCandidate diverging = c;
  REQUIRE(estimate_candidate(a, "tuning.json", kTuningSource, 2, kTuningStream, true, diverging));
  CHECK(diverging.problem.empty());
  CHECK_FALSE(diverging.iterations);
  CHECK(diverging.total == std::numeric_limits<double>::infinity());
  CHECK(diverging.iterations_method.ends_with(": 0 reached"));
  CHECK_THROWS_AS(estimate_candidate(a, "tuning.json", kTuningSource, 2, kTuningStream, false, c),
                  sim::NumericalError);
}

TEST_CASE("advise tuning: a config whose every step diverges is ranked, not an error",
          "[advise][tuning][heavy]") {
  // As above, at 400/β as the config's step: every grid point diverges.
  nlohmann::json config =
      tuning_test_config({{"kind", "shifted_exponential"}, {"shift", 1.0}, {"rate", 2.0}}, 80);
  config["data"]["generator"] = "linear_regression";
  config["data"]["condition"] = 1;
  config["loss"] = {{"kind", "least_squares"}, {"l2", 0.01}};
  config["workers"] = 4;
  config["partitions"] = 4;
  const RunPlan base = plan_run(config, "tuning.json", kTuningSource);
  config["optimizer"]["step"] = 400.0 * base.step;
  AdviceOptions o;
  o.suboptimality = 0.05;
  o.fixed_step = false;
  o.repetitions = 1;
  const Advice tuned = advise(config, "tuning.json", kTuningSource, o);
  const auto& row = tuning_test_find(tuned.ranked, "uncoded");
  REQUIRE(row.tuning);
  CHECK_FALSE(std::isfinite(row.tuning->tuning_total));
  CHECK(row.tuning->at_edge.empty());  // nothing chosen, nothing flagged
}

TEST_CASE("advise tuning: the choice is the grid's best on the tuning runs, reported on fresh runs",
          "[advise][tuning]") {
  testing::TempDir dir("advise_tuning_choice");
  (void)dir.write("ec2.csv", tuning_test_ec2_trace());
  // A step 50 times below 1/β: every scheme wants the grid's largest multiplier, flagged.
  nlohmann::json config = tuning_test_config(tuning_test_trace_delay("ec2.csv"), 60);
  const RunPlan base = plan_run(config, "tuning.json", dir.path());
  config["optimizer"]["step"] = 0.02 * base.step;
  AdviceOptions o;
  o.suboptimality = 0.5;
  o.repetitions = 3;
  std::string note;
  std::size_t last_done = 0;
  std::size_t last_total = 0;
  o.note = [&note](const std::string& n) { note = n; };
  o.progress = [&](std::size_t done, std::size_t total) {
    CHECK(done == last_done + 1);
    last_done = done;
    last_total = total;
  };
  const Advice a = advise(config, "tuning.json", dir.path(), o);
  CHECK(a.tuned);
  CHECK(a.base_step == Approx(0.02 * base.step).epsilon(1e-12));
  CHECK(note.starts_with("advise: tuning "));
  CHECK(last_done == last_total);  // the announced count is every point tuned
  const nlohmann::json j = advice_json(a);
  CHECK(j["tuning"]["step_multipliers"].size() == kStepMultipliers.size());
  int checked = 0;
  for (const auto& c : a.ranked) {
    if (!c.tuning || !std::isfinite(c.tuning->tuning_total)) {
      continue;
    }
    INFO(c.label << " " << tuning_summary(*c.tuning));
    // The choice recomputed over the whole grid on the tuning stream.
    double best = std::numeric_limits<double>::infinity();
    for (const auto& block : tuning_test_grid_blocks(c)) {
      SchemeCandidate point = c;
      point.block = block;
      (void)estimate_candidate(a, "tuning.json", dir.path(), 3, kTuningStream, true, point);
      best = std::min(best, point.total);
    }
    CHECK(c.tuning->tuning_total == best);
    // The reported total is the fresh estimate at the chosen point (advise's own stream).
    SchemeCandidate fresh = c;
    (void)estimate_candidate(a, "tuning.json", dir.path(), 3, kAdviceStream, true, fresh);
    CHECK(c.total == fresh.total);
    CHECK(c.block["optimizer"]["step"].get<double>() == c.tuning->step);
    if (c.label == "uncoded" || c.label.starts_with("exact frc")) {
      CHECK(c.tuning->step_multiplier == kStepMultipliers.back());
      CHECK(c.tuning->at_edge == std::vector<std::string>{"/optimizer/step"});
      CHECK(tuning_summary(*c.tuning).ends_with(", edge: step"));
    }
    const auto& row = *std::find_if(j["schemes"].begin(), j["schemes"].end(), [&](const auto& r) {
      return r["scheme"] == c.label;
    });
    CHECK(row["tuning"]["step"] == c.tuning->step);
    CHECK(row["tuning"]["grid_points"] == c.tuning->grid_points);
    ++checked;
  }
  CHECK(checked >= 15);
}

TEST_CASE("advise tuning: an r at the bound of its range is not an edge, one inside it is",
          "[advise][tuning]") {
  // r = n − 1 = 9 is first_r's own bound; ⌈n/8⌉ = 2 is the grid's end but r = 1 exists.
  const auto params =
      tuned_parameters(tuning_test_find(scheme_candidates(10, 0.0), "ignore-stragglers r=8"), 10);
  REQUIRE(params.size() == 1);
  CHECK(params.front().upper_bound == 9);
  CHECK(params.front().values.back() == 9);
  CHECK(params.front().values.front() > params.front().lower_bound);
}

TEST_CASE("advise tuning: --fixed-step's JSON is the untuned advise's, byte for byte",
          "[advise][tuning]") {
  // pai_job1.expected.json was printed by `advise ... --repetitions 3 --json` before the tuning
  // existed; since then only the iterations method of the three exact linear-algebra decodes
  // (crc s=1, s=2, proportional_crc) changed, to "as uncoded" (their iterations are the same),
  // and Malenia's two methods, to "as uncoded" and its clock's (its numbers are the same).
  const auto dir = kTuningSource / "tests" / "experiments" / "advise_fixed_step";
  const nlohmann::json config = read_json_file(dir / "pai_job1.json");
  AdviceOptions o;
  o.repetitions = 3;
  o.fixed_step = true;
  const Advice a = advise(config, "tests/experiments/advise_fixed_step/pai_job1.json", dir, o);
  std::ifstream in(dir / "pai_job1.expected.json");
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(advice_json(a).dump(2) + "\n" == expected.str());
  for (const auto& c : a.ranked) {
    CHECK_FALSE(c.tuning);
  }
}

TEST_CASE("advise tuning: the recommendation is within 10 % of an exhaustive sweep of its grid",
          "[advise][tuning][heavy]") {
  testing::TempDir dir("advise_tuning_exhaustive");
  (void)dir.write("ec2.csv", tuning_test_ec2_trace());
  CHECK(tuning_test_against_exhaustive(tuning_test_config(tuning_test_trace_delay("ec2.csv"), 60),
                                       dir.path(),
                                       "ec2-like") <= 1.10);
  for (const char* trace : {"pai_job1.csv", "pai_job2.csv"}) {
    const std::string path = (kTuningSource / "data" / "traces" / "imported" / trace).string();
    CHECK(tuning_test_against_exhaustive(
              tuning_test_config(tuning_test_trace_delay(path), 60), dir.path(), trace) <= 1.10);
  }
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("advise tuning: a pruned estimate stops only above its bound, and an exact one is kept",
          "[advise][tuning]") {
  testing::TempDir dir("advise_tuning_prune");
  (void)dir.write("ec2.csv", tuning_test_ec2_trace());
  const nlohmann::json config = tuning_test_config(tuning_test_trace_delay("ec2.csv"), 60);
  AdviceOptions o;
  o.suboptimality = 0.05;
  o.repetitions = 3;
  o.fixed_step = true;
  const Advice a = advise(config, "tuning.json", dir.path(), o);
  // One candidate whose total is T · E[Z] over simulated runs, one simulated directly.
  for (const char* label : {"ignore-stragglers r=8", "k-async K=5"}) {
    INFO(label);
    SchemeCandidate whole = tuning_test_find(a.ranked, label);
    REQUIRE(estimate_candidate(a, "tuning.json", dir.path(), 3, kTuningStream, true, whole));
    REQUIRE(std::isfinite(whole.total));
    // A bound at the estimate itself never prunes it: the same estimate, bit for bit.
    SchemeCandidate at_bound = tuning_test_find(a.ranked, label);
    (void)estimate_candidate(a,
                             "tuning.json",
                             dir.path(),
                             3,
                             kTuningStream,
                             true,
                             at_bound,
                             nullptr,
                             nullptr,
                             whole.total);
    CHECK(at_bound.total == whole.total);
    CHECK(at_bound.iterations == whole.iterations);
    CHECK(at_bound.iterations_method == whole.iterations_method);
    // Below it, the runs stop: +∞, said in the method.
    SchemeCandidate below = tuning_test_find(a.ranked, label);
    (void)estimate_candidate(a,
                             "tuning.json",
                             dir.path(),
                             3,
                             kTuningStream,
                             true,
                             below,
                             nullptr,
                             nullptr,
                             0.5 * whole.total);
    CHECK(below.total == std::numeric_limits<double>::infinity());
    CHECK(below.iterations_method.ends_with(": pruned, above the best point so far"));
  }
}

TEST_CASE(
    "advise tuning: Malenia's time from its clock at uncoded's iterations is its simulated "
    "runs' time",
    "[advise][tuning]") {
  // Every Malenia update is the full gradient at the current x (each worker's b_i gradients
  // there are one gradient, weighted 1/b_i), so its runs reach the target at uncoded's
  // iteration, at its clock's time: the estimate from the clock alone is the runs' estimate.
  testing::TempDir dir("advise_tuning_malenia");
  (void)dir.write("ec2.csv", tuning_test_ec2_trace());
  const std::string pai =
      (kTuningSource / "data" / "traces" / "imported" / "pai_job1.csv").string();
  for (const std::string& trace : {std::string("ec2.csv"), pai}) {
    const nlohmann::json config = tuning_test_config(tuning_test_trace_delay(trace), 60);
    const RunPlan base = plan_run(config, "tuning.json", dir.path());
    AdviceOptions o;
    o.suboptimality = 0.05;
    o.repetitions = 4;
    o.fixed_step = true;
    const Advice a = advise(config, "tuning.json", dir.path(), o);
    for (const double m : {1.0, 3.0}) {
      INFO(trace << " at step " << m << "x");
      SchemeCandidate full = tuning_test_find(a.ranked, "uncoded");
      SchemeCandidate clock = tuning_test_find(a.ranked, "malenia S=10");
      full.block["optimizer"] = {{"step", m * base.step}};
      clock.block["optimizer"] = full.block["optimizer"];
      SchemeCandidate simulated = clock;
      REQUIRE(estimate_candidate(a, "tuning.json", dir.path(), 4, kAdviceStream, false, full));
      REQUIRE(full.iterations);
      REQUIRE(estimate_candidate(
          a, "tuning.json", dir.path(), 4, kAdviceStream, false, clock, nullptr, &full));
      REQUIRE(estimate_candidate(a, "tuning.json", dir.path(), 4, kAdviceStream, false, simulated));
      CHECK(clock.total_method.starts_with("simulation of its clock"));
      CHECK(simulated.total_method.starts_with("simulation (mean time at target"));
      CHECK(clock.iterations == simulated.iterations);
      CHECK(clock.total == simulated.total);
      CHECK(clock.total_se == simulated.total_se);
    }
  }
}

}  // namespace stragglersim::experiments

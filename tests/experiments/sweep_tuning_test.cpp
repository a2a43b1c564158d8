// Tuning in sweeps (experiments/sweep_tuning.cpp, the "tune" keys of sweep_expansion.cpp): tune
// grids and their errors, the tuning runs and their seeds, the choice rule, edge flags, failed
// runs as not reached, and the output of a tuned sweep (the same bytes for any --jobs).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config/config_error.h"
#include "experiments/sweep.h"
#include "models/base/random_stream.h"
#include "tests/experiments/sweep_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using stragglersim::testing::slurp;

/// The logistic base (target_loss 0.6) tuned over the step, three schemes.
nlohmann::json tune_sweep_json() {
  return nlohmann::json::parse(R"({
    "name": "tuned", "repetitions": 2, "baseline": "uncoded",
    "tune": {"/optimizer/step": [0.25, 1, 4, 16]},
    "schemes": [
      {"name": "uncoded", "/code": {"kind": "uncoded"}, "/stopping": {"rule": "all"}},
      {"name": "frc", "/code": {"kind": "frc", "d": 2}, "/stopping": {"rule": "first_r", "r": 3},
       "tune": {"/optimizer/step": [0.25, 1, 4], "/stopping/r": [2, 3, 4]}},
      {"name": "fixed", "/code": {"kind": "uncoded"}, "/stopping": {"rule": "all"}}]
  })");
}

nlohmann::json tune_sweep_with_base() {
  nlohmann::json sweep = tune_sweep_json();
  sweep["base"] = gradient_base();
  return sweep;
}

TuneCombination tune_case(std::size_t runs, std::size_t reached, double value, double loss) {
  TuneCombination c;
  c.runs = runs;
  c.reached = reached;
  c.mean_value = value;
  c.mean_final_loss = loss;
  return c;
}

std::string tune_csv_column(const std::string& csv, const std::string& name, std::size_t row) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) {
      cells.push_back(cell);
    }
    if (!line.empty() && line.back() == ',') {
      cells.emplace_back();
    }
    rows.push_back(cells);
  }
  const auto at = std::find(rows[0].begin(), rows[0].end(), name);
  REQUIRE(at != rows[0].end());
  REQUIRE(row + 1 < rows.size());
  return rows[row + 1][static_cast<std::size_t>(at - rows[0].begin())];
}

}  // namespace

TEST_CASE("tuning: tune grids per scheme, log ranges and the tuning runs with their own seeds",
          "[experiments][sweep][tuning]") {
  nlohmann::json sweep = tune_sweep_with_base();
  sweep["tune"] = {{"/optimizer/step", {{"log_range", {0.5, 8}}, {"points", 5}}}};
  const SweepSpec spec = expand_sweep(sweep, "t.json", ".");
  REQUIRE(spec.tuning);
  const SweepTuning& tuning = *spec.tuning;
  CHECK(tuning.repetitions == 2);
  CHECK(tuning.pointers == std::vector<std::string>{"/optimizer/step", "/stopping/r"});
  REQUIRE(tuning.keys.size() == 3);
  // 0.5 · 16^(i/4): 0.5, 1, 2, 4, 8, the inner points rounded to 12 digits, so exact here.
  REQUIRE(tuning.keys[0].size() == 1);
  const auto& steps = tuning.keys[0][0].values;
  REQUIRE(steps.size() == 5);
  CHECK(steps[0].get<double>() == 0.5);
  CHECK(steps[4].get<double>() == 8.0);
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(steps[i].get<double>() == 0.5 * std::pow(2.0, static_cast<double>(i)));
  }
  CHECK(tuning.keys[1].size() == 2);  // frc's own grid replaces the sweep's
  CHECK(tuning.keys[2] == tuning.keys[0]);
  // The evaluation runs are the sweep's: the seeds of an untuned sweep.
  REQUIRE(spec.runs.size() == 6);
  CHECK(spec.runs[0].seed == 5);
  CHECK(spec.runs[1].seed == (derive_seed(5, 1) & ((std::uint64_t{1} << 63U) - 1U)));

  const SweepSpec runs = tuning_sweep(spec);
  // uncoded 5 steps, frc 3 steps × 3 r, fixed 5 steps; 2 tuning seeds each.
  REQUIRE(runs.runs.size() == (5 + 9 + 5) * 2);
  CHECK(runs.parameters == std::vector<std::string>{"/optimizer/step", "/stopping/r"});
  const std::uint64_t stream = derive_seed(5, kSweepTuningStream);
  std::set<std::uint64_t> tuning_seeds;
  for (const auto& run : runs.runs) {
    CHECK(run.seed == (derive_seed(stream, static_cast<std::uint64_t>(run.repetition)) &
                       ((std::uint64_t{1} << 63U) - 1U)));
    CHECK(run.config["data_seed"] == 5);  // one data set for tuning and evaluation
    CHECK(run.config["optimizer"]["step"] == run.values[0]);
    tuning_seeds.insert(run.seed);
  }
  CHECK(tuning_seeds.size() == 2);
  for (const auto& run : spec.runs) {
    CHECK_FALSE(tuning_seeds.contains(run.seed));  // evaluation seeds never tune
  }
  // frc's combinations: the step slowest, r fastest; its untuned pointers are null elsewhere.
  const auto& frc = runs.runs[10 + 2 * 4];  // frc combination 4: step 1, r 3
  CHECK(frc.scheme == "frc");
  CHECK(frc.config["optimizer"]["step"] == 1);
  CHECK(frc.config["stopping"] == nlohmann::json({{"rule", "first_r"}, {"r", 3}}));
  CHECK(frc.folder == "runs/scheme=frc_optimizer.step=1_stopping.r=3_rep0");
  CHECK(frc.config["name"] == "tuned/tuning/scheme=frc_optimizer.step=1_stopping.r=3_rep0");
  CHECK(runs.runs[0].values[1].is_null());
  CHECK(runs.runs[0].folder == "runs/scheme=uncoded_optimizer.step=0.5_rep0");

  // A scheme's "tune": {} leaves it untuned: no tuning runs.
  sweep["schemes"][2]["tune"] = nlohmann::json::object();
  const SweepSpec untuned = expand_sweep(sweep, "t.json", ".");
  CHECK(untuned.tuning->keys[2].empty());
  CHECK(tuning_sweep(untuned).runs.size() == (5 + 9) * 2);
}

TEST_CASE("tuning: bad tune grids and objectives are config errors at their pointers",
          "[experiments][sweep][tuning]") {
  const auto with = [](const char* key, const nlohmann::json& value) {
    nlohmann::json sweep = {{"base", gradient_base()},
                            {"grid", {{"/code/d", {1, 2}}}},
                            {"tune", {{"/optimizer/step", {1, 2}}}}};
    sweep[key] = value;
    return sweep;
  };
  const auto error = [](const nlohmann::json& sweep) {
    try {
      (void)expand_sweep(sweep, "s.json", ".");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(with("tune", {{"/code/d", {1}}})) ==
        "s.json:/tune/~1code~1d: also a grid key; got \"/code/d\"; expected a pointer the grid "
        "does not vary");
  CHECK(error(with("tune", {{"/code", {1}}})) ==
        "s.json:/tune/~1code: nested with grid key /code/d; got \"/code\"; expected a pointer the "
        "grid does not vary");
  CHECK(error(with("tune", {{"/optimizer/stpe/x", {1}}})) ==
        "s.json:/tune/~1optimizer~1stpe~1x: no such place in the base config; got "
        "\"/optimizer/stpe/x\"; expected a pointer to an existing value or to a new key of an "
        "existing object");
  CHECK(error(with("tune", nlohmann::json::object())) ==
        "s.json:/tune: empty tune grid; got {}; expected an object such as "
        "{\"/optimizer/step\": [0.5, 1, 2]}");
  CHECK(error(with("tune", {{"/optimizer/step", nlohmann::json::array()}})) ==
        "s.json:/tune/~1optimizer~1step: wrong type; got []; expected a non-empty array of "
        "values, such as [0.5, 1, 2], or {\"log_range\": [lo, hi], \"points\": N} with 0 < lo < "
        "hi and N >= 2");
  CHECK(error(with("tune", {{"/optimizer/step", {{"log_range", {2, 1}}, {"points", 3}}}})) ==
        "s.json:/tune/~1optimizer~1step/log_range: not a range; got [2,1]; expected [lo, hi] "
        "with 0 < lo < hi");
  CHECK(error(with("tune", {{"/optimizer/step", {{"log_range", {0.1, 1}}, {"points", 1}}}})) ==
        "s.json:/tune/~1optimizer~1step/points: out of range; got 1; expected an integer in [2, "
        "1000]");
  CHECK(error(with("tune", {{"/optimizer/step", {{"points", 3}}}})) ==
        "s.json:/tune/~1optimizer~1step/log_range: missing required key; expected [lo, hi] with "
        "0 < lo < hi");
  CHECK(error(with("tune_objective", {{"suboptimality", 0.01}, {"time_budget", 5}}))
            .rfind("s.json:/tune_objective: two objectives; got ", 0) == 0);
  CHECK(error(with("tune_objective", {{"suboptimality", 1.5}})) ==
        "s.json:/tune_objective/suboptimality: out of range; got 1.5; expected a number with 0 "
        "< S < 1");
  CHECK(error(with("tune_objective", {{"time_budget", -1}}))
            .rfind("s.json:/tune_objective/time_budget: ", 0) == 0);
  CHECK(error(with("tune_objective", {{"suboptimality", 0.1}, {"sustained", "yes"}})) ==
        "s.json:/tune_objective/sustained: wrong type; got \"yes\"; expected true or false");
  CHECK(error(with("tune_objective", {{"time_budget", 5}, {"sustained", true}})) ==
        "s.json:/tune_objective/sustained: unknown key 'sustained'; valid keys are: time_budget");
  CHECK(error(with("tune_objective", {{"suboptimality", 0.1}, {"sustained", true}})) == "no error");
  CHECK(error(with("tuning_repetitions", 0)) ==
        "s.json:/tuning_repetitions: out of range; got 0; expected an integer in [1, 1000]");
  nlohmann::json untuned = with("tune_objective", {{"time_budget", 5}});
  untuned.erase("tune");
  CHECK(error(untuned) ==
        "s.json:/tune_objective: given without a tune grid; got {\"time_budget\":5}; expected a "
        "\"tune\" object too");
  nlohmann::json no_target = with("repetitions", 1);
  no_target["base"].erase("target_loss");
  CHECK(error(no_target) ==
        "s.json:/tune_objective: missing required key; got a run without target_loss "
        "(runs/code.d=1_rep0); expected {\"suboptimality\": S} or {\"time_budget\": T}, or a "
        "target_loss in the base config");
  no_target["tune_objective"] = {{"suboptimality", 0.01}};
  CHECK(error(no_target) == "no error");
  nlohmann::json scheme_tune = tune_sweep_with_base();
  scheme_tune["schemes"][1]["tune"] = {{"/stopping/k", {1, 2}}, {"/stopping", {1}}};
  CHECK(error(scheme_tune) ==
        "s.json:/schemes/1/tune/~1stopping~1k: inside the value of grid key /stopping, which "
        "replaces it; got \"/stopping/k\"; expected grid keys that do not nest: vary /stopping or "
        "the keys inside it, not both");
}

TEST_CASE("tuning: the choice rule on enumerated cases", "[experiments][sweep][tuning]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::vector<TuneCombination> combinations;
    std::size_t chosen;
  };
  const std::vector<Case> cases = {
      // All complete: the least mean time; a tie goes to the first.
      {{tune_case(2, 2, 5.0, 0.3), tune_case(2, 2, 3.0, 0.4), tune_case(2, 2, 4.0, 0.1)}, 1},
      {{tune_case(2, 2, 3.0, 0.3), tune_case(2, 2, 3.0, 0.1)}, 0},
      // A complete combination beats a faster incomplete one (its mean is over fewer runs).
      {{tune_case(2, 1, 1.0, 0.2), tune_case(2, 2, 9.0, 0.3)}, 1},
      // None complete: the most reached, then the least mean final loss.
      {{tune_case(3, 1, 1.0, 0.2), tune_case(3, 2, 9.0, 0.5), tune_case(3, 0, nan, 0.1)}, 1},
      {{tune_case(2, 0, nan, 0.5), tune_case(2, 0, nan, 0.2), tune_case(2, 0, nan, inf)}, 1},
      {{tune_case(2, 1, 4.0, 0.5), tune_case(2, 1, 2.0, 0.5)}, 0},
      // Every run failed everywhere: the first combination.
      {{tune_case(2, 0, nan, inf), tune_case(2, 0, nan, inf)}, 0},
      {{tune_case(1, 1, 7.0, 0.3)}, 0},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(choose_combination(cases[i].combinations) == cases[i].chosen);
  }
  // combine: the mean time over the runs that reached, the mean final loss over all.
  const TuneCombination c =
      combine_tuning_runs({{true, 2.0, 0.3}, {false, 0.0, inf}, {true, 4.0, 0.5}});
  CHECK(c.runs == 3);
  CHECK(c.reached == 2);
  CHECK(c.mean_value == 3.0);
  CHECK(c.mean_final_loss == inf);
}

TEST_CASE("tuning: a failed run is not reached under every objective",
          "[experiments][sweep][tuning]") {
  const std::string trace = "iteration,time,loss\n0,0,1.0\n1,2,0.5\n2,4,0.3\n3,6,0.25\n";
  nlohmann::json ok = {
      {"status", "ok"}, {"final_loss", 0.25}, {"time_to_target", 4.0}, {"f_star", 0.2}};
  nlohmann::json failed = ok;
  failed["status"] = "failed";
  failed["final_loss"] = 0.25;  // the last good row's loss: still not a result
  const TuneObjective target;
  TuneObjective suboptimality;
  suboptimality.kind = TuneObjective::Kind::kSuboptimality;
  suboptimality.value = 0.125;  // f* + 0.125 · (1 − 0.2) = 0.3: reached at time 4
  TuneObjective budget;
  budget.kind = TuneObjective::Kind::kTimeBudget;
  budget.value = 5.0;  // the loss of the last row at or before time 5: 0.3
  for (const auto& objective : {target, suboptimality, budget}) {
    const TuneRunResult bad = tune_run_result(failed, trace, objective);
    CHECK_FALSE(bad.reached);
    CHECK(std::isinf(bad.final_loss));
    const TuneRunResult good = tune_run_result(ok, trace, objective);
    CHECK(good.reached);
    CHECK(good.final_loss == 0.25);
  }
  CHECK(tune_run_result(ok, trace, target).value == 4.0);
  CHECK(tune_run_result(ok, trace, suboptimality).value == 4.0);
  CHECK(tune_run_result(ok, trace, budget).value == 0.3);
  suboptimality.value = 0.05;  // 0.24: never reached
  CHECK_FALSE(tune_run_result(ok, trace, suboptimality).reached);
  nlohmann::json missed = ok;
  missed.erase("time_to_target");
  CHECK_FALSE(tune_run_result(missed, trace, target).reached);
}

TEST_CASE("tuning: a sustained level counts from the last time the loss gets there for good",
          "[experiments][sweep][tuning]") {
  // f* = 0, f(x0) = 1, level 0.5 · 1 = 0.5: first reached at time 1, left at 2, back for good
  // at 4 (row 5's 0.5 is at the level, which counts as below it).
  const nlohmann::json ok = {{"status", "ok"}, {"final_loss", 0.3}, {"f_star", 0.0}};
  const std::string oscillating =
      "iteration,time,loss\n0,0,1.0\n1,1,0.4\n2,2,0.9\n3,3,0.6\n4,4,0.45\n5,5,0.5\n6,6,0.3\n";
  TuneObjective first;
  first.kind = TuneObjective::Kind::kSuboptimality;
  first.value = 0.5;
  TuneObjective sustained = first;
  sustained.sustained = true;
  CHECK(tune_run_result(ok, oscillating, first).value == 1.0);
  const TuneRunResult r = tune_run_result(ok, oscillating, sustained);
  CHECK(r.reached);
  CHECK(r.value == 4.0);
  CHECK(r.final_loss == 0.3);
  // Every (first, sustained) pair on the traces of three rows after row 0, each row above or at
  // or below the level: sustained is reached exactly when the last row is, at the start of the
  // last run of rows at or below it, and never before the first time.
  for (int mask = 0; mask < 27; ++mask) {
    std::string trace = "iteration,time,loss\n0,0,1.0\n";
    std::vector<double> losses;
    for (int i = 0, m = mask; i < 3; ++i, m /= 3) {
      losses.push_back(std::array<double, 3>{0.8, 0.5, 0.2}[static_cast<std::size_t>(m % 3)]);
      trace += fmt::format("{},{},{}\n", i + 1, i + 1, losses.back());
    }
    INFO(trace);
    const TuneRunResult a = tune_run_result(ok, trace, first);
    const TuneRunResult b = tune_run_result(ok, trace, sustained);
    CHECK(b.reached == (losses.back() <= 0.5));
    if (b.reached) {
      std::size_t start = losses.size();
      while (start > 0 && losses[start - 1] <= 0.5) {
        --start;
      }
      CHECK(b.value == static_cast<double>(start + 1));
      REQUIRE(a.reached);
      CHECK(a.value <= b.value);
    }
  }
}

TEST_CASE("tuning: a choice at an end of its grid is flagged", "[experiments][sweep][tuning]") {
  const std::vector<TuneKey> keys = {
      {"/optimizer/step", {4.0, 0.5, 1.0, 2.0}},  // numbers: the least and greatest are the ends
      {"/stopping/r", {3}},                       // one value: nothing tuned, never an edge
      {"/stopping/rule", {"all", "first_r", "fastest"}}};  // not numbers: first and last
  const auto edge = [&](std::size_t step, std::size_t rule) {
    return edge_pointers(keys, {step, 0, rule});
  };
  CHECK(edge(0, 1) == "/optimizer/step");
  CHECK(edge(1, 1) == "/optimizer/step");
  CHECK(edge(2, 1).empty());
  CHECK(edge(3, 1).empty());
  CHECK(edge(2, 0) == "/stopping/rule");
  CHECK(edge(0, 2) == "/optimizer/step /stopping/rule");
}

TEST_CASE("tuning: a tuned sweep chooses from its tuning runs, the same bytes for any jobs",
          "[experiments][sweep][tuning]") {
  const auto dir = sweep_scratch("tuning");
  const auto path = write_sweep(dir / "tuned.json", tune_sweep_with_base());
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 1", path.string(), (dir / "j1").string())) == 0);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", path.string(), (dir / "j2").string())) == 0);
  const auto one = tree(dir / "j1");
  CHECK(one == tree(dir / "j2"));
  const std::string tuning = one.at("tuning.csv");
  // uncoded and fixed 4 steps, frc 3 × 3: a row per combination.
  CHECK(std::count(tuning.begin(), tuning.end(), '\n') == 1 + 4 + 9 + 4);
  CHECK(tuning.rfind("scheme,optimizer.step,stopping.r,runs,reached,mean_time,mean_final_loss,"
                     "chosen,edge\n",
                     0) == 0);
  // The choice by the rule, recomputed from tuning.csv's own statistics.
  const std::string summary = one.at("summary.csv");
  CHECK(summary.rfind("scheme,optimizer.step,stopping.r,edge,runs,failed,", 0) == 0);
  const std::vector<std::pair<std::size_t, std::size_t>> blocks = {{0, 4}, {4, 9}, {13, 4}};
  for (std::size_t s = 0; s < 3; ++s) {
    std::vector<TuneCombination> combos;
    std::size_t chosen_row = 0;
    for (std::size_t c = 0; c < blocks[s].second; ++c) {
      const std::size_t row = blocks[s].first + c;
      const auto number = [&](const char* name) {
        const std::string cell = tune_csv_column(tuning, name, row);
        return cell.empty() ? std::numeric_limits<double>::quiet_NaN() : std::stod(cell);
      };
      combos.push_back(tune_case(static_cast<std::size_t>(number("runs")),
                                 static_cast<std::size_t>(number("reached")),
                                 number("mean_time"),
                                 number("mean_final_loss")));
      if (tune_csv_column(tuning, "chosen", row) == "1") {
        chosen_row = row;
      }
    }
    CHECK(choose_combination(combos) + blocks[s].first == chosen_row);
    // summary.csv names the chosen values and the edge flag of the same row.
    CHECK(tune_csv_column(summary, "optimizer.step", s) ==
          tune_csv_column(tuning, "optimizer.step", chosen_row));
    CHECK(tune_csv_column(summary, "stopping.r", s) ==
          tune_csv_column(tuning, "stopping.r", chosen_row));
    CHECK(tune_csv_column(summary, "edge", s) == tune_csv_column(tuning, "edge", chosen_row));
  }
  // The evaluation runs ran at the chosen values, on the seeds of the untuned sweep.
  const auto index = one.at("index.csv");
  CHECK(index.rfind("index,repetition,seed,scheme,/optimizer/step,/stopping/r,status,", 0) == 0);
  const std::string step = tune_csv_column(summary, "optimizer.step", 1);
  const std::string r = tune_csv_column(summary, "stopping.r", 1);
  const auto config = nlohmann::json::parse(one.at(
      fmt::format("runs/scheme=frc_optimizer.step={}_stopping.r={}_rep1/config.json", step, r)));
  CHECK(config["optimizer"]["step"].dump() == step);
  CHECK(config["stopping"]["r"].dump() == r);
  CHECK(config["seed"] == (derive_seed(5, 1) & ((std::uint64_t{1} << 63U) - 1U)));
  // An untuned pointer's cell is empty.
  CHECK(tune_csv_column(summary, "stopping.r", 0).empty());
}

TEST_CASE("tuning: evaluation seeds never enter the choice", "[experiments][sweep][tuning]") {
  const auto dir = sweep_scratch("tuning_seeds");
  nlohmann::json sweep = tune_sweep_with_base();
  sweep["repetitions"] = 1;
  const auto one = write_sweep(dir / "one.json", sweep);
  sweep["repetitions"] = 3;  // two more evaluation seeds, their runs different outcomes
  const auto three = write_sweep(dir / "three.json", sweep);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", one.string(), (dir / "one").string())) == 0);
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", three.string(), (dir / "three").string())) == 0);
  const auto tuning_one = tree(dir / "one" / "tuning");
  CHECK(tuning_one == tree(dir / "three" / "tuning"));
  CHECK(slurp(dir / "one" / "tuning.csv") == slurp(dir / "three" / "tuning.csv"));

  // An evaluation run's outcome rewritten (every run reached the target at once): a rerun
  // resumes, chooses the same and rewrites the same tuning.csv.
  const std::string before = slurp(dir / "three" / "tuning.csv");
  for (const auto& e : fs::directory_iterator(dir / "three" / "runs")) {
    auto s = nlohmann::json::parse(slurp(e.path() / "summary.json"));
    s["time_to_target"] = 1e-9;
    s["final_loss"] = 0.0;
    std::ofstream(e.path() / "summary.json") << s.dump(2);
  }
  fs::remove(dir / "three" / "tuning.csv");
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 2", three.string(), (dir / "three").string())) == 0);
  CHECK(slurp(dir / "three" / "tuning.csv") == before);
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("tuning: a diverging tuning run ends early and counts as not reached",
          "[experiments][sweep][tuning]") {
  const auto dir = sweep_scratch("tuning_diverge");
  nlohmann::json sweep = {
      {"base", gradient_base()}, {"repetitions", 1}, {"tune", {{"/optimizer/step", {1, 100000}}}}};
  const auto path = write_sweep(dir / "diverge.json", sweep);
  // Never an error of the sweep: exit 0, the step that diverged not chosen.
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", path.string(), (dir / "out").string())) ==
          0);
  const std::string tuning = slurp(dir / "out" / "tuning.csv");
  CHECK(tune_csv_column(tuning, "optimizer.step", 1) == "100000");
  CHECK(tune_csv_column(tuning, "reached", 1) == "0");
  CHECK(tune_csv_column(tuning, "mean_final_loss", 1).empty());  // +inf: its runs failed
  CHECK(tune_csv_column(tuning, "chosen", 0) == "1");
  for (int k = 0; k < 2; ++k) {
    const auto folder =
        dir / "out" / "tuning" / "runs" / fmt::format("optimizer.step=100000_rep{}", k);
    const auto summary = nlohmann::json::parse(slurp(folder / "summary.json"));
    CHECK(summary["status"] == "failed");
    CHECK(summary["error"].get<std::string>().find(": diverged: loss ") != std::string::npos);
    // It ended early: fewer rows than the 15 iterations.
    CHECK(summary["iterations"].get<int>() < 15);
    CHECK(nlohmann::json::parse(slurp(folder / "config.json"))["divergence_bound"] == 10.0);
  }
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("tuning: a tuned sweep is refused with --shard and --merge, exit 2",
          "[experiments][sweep][tuning]") {
  const auto dir = sweep_scratch("tuning_shard");
  const auto path = write_sweep(dir / "tuned.json", tune_sweep_with_base());
  const auto spec = expand_sweep_file(path);
  CHECK(needs_tuning(spec));
  SweepOptions options;
  options.shard = {0, 2};
  CHECK_THROWS_WITH(run_sweep(spec, dir / "out", options),
                    path.string() +
                        ":/tune: a tuned sweep runs its tuning before its evaluation; got --shard; "
                        "expected the sweep without --shard (or --jobs N)");
  CHECK_THROWS_WITH(merge_sweep(spec, dir / "out"),
                    path.string() +
                        ":/tune: a tuned sweep runs its tuning before its evaluation; got --merge; "
                        "expected the sweep without --shard and --merge (or --jobs N)");
  CHECK(run_binary(fmt::format(
            "sweep '{}' --out '{}' --shard 0/2", path.string(), (dir / "cli").string())) == 2);
  CHECK_FALSE(fs::exists(dir / "out"));
  CHECK_FALSE(fs::exists(dir / "cli"));
}

}  // namespace stragglersim::experiments

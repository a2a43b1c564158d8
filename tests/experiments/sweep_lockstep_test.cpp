// Lock-step groups: every run of a batched sweep writes the same bytes as when it runs alone, for
// every code, rule, loss, optimiser and data kind a group takes, dense and sparse, 1 and 2 jobs;
// the runs that cannot share a pass run alone and the log says why; groups are bounded by the
// batch and the memory limit.

#include "experiments/sweep_lockstep.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/memory_budget.h"
#include "experiments/config/run_plan.h"
#include "experiments/sweep.h"
#include "tests/experiments/sweep_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

/// One scheme of the byte-identity sweep: its name and pointer values.
Json lockstep_scheme(const std::string& name, const Json& values) {
  Json scheme = values;
  scheme["name"] = name;
  return scheme;
}

/// Every code, synchronous rule and optimiser a group takes: 15 iterations each on 6 workers.
Json lockstep_schemes() {
  const Json uncoded = {{"kind", "uncoded"}};
  const Json frc = {{"kind", "frc"}, {"d", 2}};
  return Json::array({
      lockstep_scheme("uncoded all", {{"/code", uncoded}, {"/stopping", {{"rule", "all"}}}}),
      lockstep_scheme("frc first_r",
                      {{"/code", frc}, {"/stopping", {{"rule", "first_r"}, {"r", 3}}}}),
      lockstep_scheme("frc decodable", {{"/code", frc}, {"/stopping", {{"rule", "decodable"}}}}),
      lockstep_scheme("crc or-decodable",
                      {{"/code", {{"kind", "crc"}, {"s", 1}}},
                       {"/stopping", {{"rule", "first_r_or_decodable"}, {"r", 4}}}}),
      lockstep_scheme(
          "cyclic_mds decodable",
          {{"/code", {{"kind", "cyclic_mds"}, {"s", 1}}}, {"/stopping", {{"rule", "decodable"}}}}),
      lockstep_scheme(
          "bgc first_r",
          {{"/code", {{"kind", "bgc"}, {"d", 2}}}, {"/stopping", {{"rule", "first_r"}, {"r", 4}}}}),
      lockstep_scheme(
          "sgc first_r",
          {{"/code", {{"kind", "sgc"}, {"d", 2}}}, {"/stopping", {{"rule", "first_r"}, {"r", 4}}}}),
      lockstep_scheme("dynamic_frc first_r",
                      {{"/code", {{"kind", "dynamic_frc"}, {"d", 2}, {"every", 4}}},
                       {"/stopping", {{"rule", "first_r"}, {"r", 3}}}}),
      lockstep_scheme("deadline",
                      {{"/code", frc}, {"/stopping", {{"rule", "deadline"}, {"after", 1.5}}}}),
      lockstep_scheme(
          "adaptive_r",
          {{"/code", frc}, {"/stopping", {{"rule", "adaptive_r"}, {"window", 3}, {"r_min", 2}}}}),
      lockstep_scheme(
          "adaptive_deadline",
          {{"/code", uncoded},
           {"/stopping", {{"rule", "adaptive_deadline"}, {"window", 3}, {"quantile", 0.7}}}}),
      lockstep_scheme("multi_message",
                      {{"/code", frc}, {"/stopping", {{"rule", "multi_message"}}}}),
      lockstep_scheme(
          "drop_compute",
          {{"/code", uncoded}, {"/stopping", {{"rule", "drop_compute"}, {"threshold", 2.0}}}}),
      lockstep_scheme("K-sync",
                      {{"/code", uncoded},
                       {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
                       {"/rescale", "empirical"}}),
      lockstep_scheme("ring",
                      {{"/code", frc},
                       {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
                       {"/aggregation", {{"kind", "ring"}}}}),
      lockstep_scheme("network",
                      {{"/code", frc},
                       {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
                       {"/network", {{"latency", 0.01}, {"serial", true}}}}),
      lockstep_scheme(
          "nesterov",
          {{"/code", frc},
           {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
           {"/optimizer", {{"kind", "nesterov"}, {"step", "auto"}, {"iterations", 15}}}}),
      lockstep_scheme(
          "erasurehead_agd",
          {{"/code", frc},
           {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
           {"/optimizer", {{"kind", "erasurehead_agd"}, {"step", "auto"}, {"iterations", 15}}}}),
      lockstep_scheme("momentum schedule",
                      {{"/code", frc},
                       {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
                       {"/optimizer",
                        {{"kind", "gd"},
                         {"step", "auto"},
                         {"iterations", 15},
                         {"momentum", 0.5},
                         {"schedule", {{"kind", "inverse_t"}, {"half_life", 5}}}}}}),
      lockstep_scheme(
          "minibatch",
          {{"/code", frc},
           {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
           {"/optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 15}, {"batch", 8}}}}),
      lockstep_scheme(
          "time budget",
          {{"/code", frc},
           {"/stopping", {{"rule", "first_r"}, {"r", 3}}},
           {"/optimizer",
            {{"kind", "gd"}, {"step", "auto"}, {"iterations", 15}, {"time_budget", 9.0}}}}),
      lockstep_scheme("anytime",
                      {{"/code", uncoded}, {"/stopping", {{"rule", "anytime"}, {"window", 2.0}}}}),
  });
}

/// Every update rule of the asynchronous loop, whose members share their passes at x_t and
/// compute their gradients at stale iterates on their own: 15 iterations each on 6 workers.
Json asynchronous_schemes() {
  const Json uncoded = {{"kind", "uncoded"}};
  const auto rule = [](const std::string& name, const Json& code, Json stopping) {
    const std::string kind = name.substr(0, name.find(' '));
    stopping["rule"] = kind;
    return lockstep_scheme(name, {{"/code", code}, {"/stopping", stopping}});
  };
  Json schemes = Json::array({
      rule("k_async", uncoded, {{"k", 3}}),
      rule("k_async inverse", uncoded, {{"k", 2}, {"staleness_step", "inverse"}}),
      rule("k_batch_async", uncoded, {{"k", 2}}),
      rule("k_batch_sync", uncoded, {{"k", 4}}),
      rule("malenia", uncoded, {{"batch", 8}}),
      rule("mindflayer", uncoded, {{"batch", 4}, {"cutoffs", 2.0}}),
      rule("rennala", uncoded, {{"batch", 4}, {"sampling", "shared"}}),
      rule("rescaled_async", uncoded, Json::object()),
      rule("ringmaster", uncoded, {{"max_delay", 2}, {"stop_stale", true}}),
  });
  schemes.push_back(lockstep_scheme(
      "k_async minibatch",
      {{"/code", uncoded},
       {"/stopping", {{"rule", "k_async"}, {"k", 2}}},
       {"/optimizer", {{"kind", "gd"}, {"step", "auto"}, {"iterations", 15}, {"batch", 8}}}}));
  return schemes;
}

/// The schemes on logistic and least-squares losses, dense or sparse data with a test set.
Json lockstep_sweep(bool sparse) {
  Json base = gradient_base();
  base["data"] = sparse ? Json{{"source", "synthetic"},
                               {"generator", "amazon_like"},
                               {"rows", 300},
                               {"features", 120},
                               {"test_fraction", 0.2}}
                        : Json{{"source", "synthetic"},
                               {"generator", "gaussian_mixture"},
                               {"rows", 301},
                               {"features", 13},
                               {"test_fraction", 0.2}};
  base.erase("target_loss");
  Json schemes = lockstep_schemes();
  for (const Json& scheme : asynchronous_schemes()) {
    schemes.push_back(scheme);
  }
  return {{"name", sparse ? "lockstep_sparse" : "lockstep_dense"},
          {"base", base},
          {"schemes", schemes},
          {"grid", {{"/loss/kind", {"least_squares", "logistic"}}}},
          {"repetitions", 2}};
}

/// Runs `sweep` into `out` with `batch` runs per group on `jobs` jobs; the log's lines.
std::vector<std::string> run_lockstep(const Json& sweep, const fs::path& out, int batch, int jobs) {
  const SweepSpec spec = expand_sweep(sweep, "lockstep.json", out.parent_path());
  SweepOptions options;
  options.jobs = jobs;
  options.batch = batch;
  std::vector<std::string> log;
  options.log = [&log](const std::string& line) { log.push_back(line); };
  const SweepResult result = run_sweep(spec, out, options);
  REQUIRE(result.ran == spec.runs.size());
  return log;
}

}  // namespace

TEST_CASE("lockstep: a batched sweep writes the bytes of one run at a time, dense and sparse",
          "[experiments][sweep][lockstep]") {
  for (const bool sparse : {false, true}) {
    const auto dir = sweep_scratch(sparse ? "lockstep_sparse" : "lockstep_dense");
    const Json sweep = lockstep_sweep(sparse);
    run_lockstep(sweep, dir / "alone", 1, 1);
    const auto alone = tree(dir / "alone");
    for (const int jobs : {1, 2}) {
      INFO("sparse " << sparse << ", jobs " << jobs);
      const auto out = dir / fmt::format("batched{}", jobs);
      const auto log = run_lockstep(sweep, out, 64, jobs);
      const auto batched = tree(out);
      REQUIRE(batched.size() == alone.size());
      for (const auto& [file, bytes] : alone) {
        INFO(file);
        CHECK(batched.at(file) == bytes);
      }
      // Two losses × {gradient descent at its iterate (the asynchronous rules and anytime
      // among them), the optimisers with a query point of their own}: four groups, no run alone.
      const auto count = [&log](const std::string& start) {
        return std::count_if(log.begin(), log.end(), [&start](const std::string& line) {
          return line.rfind(start, 0) == 0;
        });
      };
      CHECK(count("lock-step group ") == 8);  // 4 groups, each listed and then its passes
      CHECK(count("alone: ") == 0);
    }
  }
}

TEST_CASE("lockstep: a group reads the data about once per pass of its longest run",
          "[experiments][sweep][lockstep]") {
  const auto dir = sweep_scratch("lockstep_floor");
  Json sweep = lockstep_sweep(false);
  sweep["schemes"] =
      Json::array({lockstep_schemes()[0], lockstep_schemes()[1], lockstep_schemes()[2]});
  sweep["grid"] = Json::object();
  sweep["repetitions"] = 4;
  const auto log = run_lockstep(sweep, dir / "out", 64, 1);
  // 12 runs of 15 iterations: 16 passes over the training set and 16 over the test set, each
  // serving all 12 runs.
  const auto passes = std::find_if(log.begin(), log.end(), [](const std::string& line) {
    return line.rfind("lock-step group 1: ", 0) == 0;
  });
  REQUIRE(passes != log.end());
  CHECK(passes->find("12 runs in 16 passes over the training set (192 evaluations, at most 12 per "
                     "pass)") != std::string::npos);
  CHECK(passes->find("1.00x its longest run's 16 passes") != std::string::npos);
}

TEST_CASE("lockstep: groups are cut by the batch and by the memory limit",
          "[experiments][sweep][lockstep]") {
  // Runs 0, 2, 4, 6 share key a, runs 1 and 5 key b; run 3 runs alone.
  const std::vector<std::string> keys = {"a", "b", "a", "", "a", "b", "a"};
  std::vector<LockstepInfo> infos(keys.size());
  for (std::size_t i = 0; i < infos.size(); ++i) {
    infos[i].key = keys[i];
    if (keys[i].empty()) {
      infos[i].alone = "asynchronous";
    }
    infos[i].member_bytes = 100.0;
    infos[i].shared_bytes = 1000.0;
  }
  const std::vector<std::size_t> todo = {0, 1, 2, 3, 4, 5, 6};
  struct Case {
    int batch;
    std::uint64_t memory;
    std::vector<std::vector<std::size_t>> units;
    std::vector<std::string> alone;  ///< the log's lines for the runs alone
  };
  const std::string async = "alone: 1 runs (3): asynchronous";
  const std::vector<Case> cases = {
      {64, 1U << 30, {{0, 2, 4, 6}, {1, 5}, {3}}, {async}},
      {3,
       1U << 30,
       {{0, 2, 4}, {1, 5}, {3}, {6}},
       {async,
        "alone: 1 runs (6): left over when the 4 runs of its data set were cut into groups of "
        "3"}},
      {1,
       1U << 30,
       {{0}, {1}, {2}, {3}, {4}, {5}, {6}},
       {"alone: 6 runs (0 ... 2, 4 ... 6): --no-batch", async}},
      // 1250 bytes hold the data and two members: groups of two.
      {64, 1250, {{0, 2}, {1, 5}, {3}, {4, 6}}, {async}},
      // Not even one member beside the data: every run alone (never refused here: plan_run
      // refuses a run that cannot fit at all).
      {64,
       1000,
       {{0}, {1}, {2}, {3}, {4}, {5}, {6}},
       {"alone: 6 runs (0 ... 2, 4 ... 6): --max-memory (1e+03 bytes) holds one run of 100 bytes "
        "beside its "
        "1e+03 bytes of data",
        async}},
  };
  for (const Case& c : cases) {
    INFO("batch " << c.batch << ", memory " << c.memory);
    const auto units = form_units(todo, infos, c.batch, c.memory);
    std::vector<std::vector<std::size_t>> got;
    for (const SweepUnit& unit : units) {
      got.push_back(unit.runs);
      CHECK(unit.group == (unit.runs.size() > 1));
    }
    CHECK(got == c.units);
    std::vector<std::string> alone;
    for (const std::string& line : describe_units(units, infos, c.batch, c.memory)) {
      if (line.rfind("alone: ", 0) == 0) {
        alone.push_back(line);
      }
    }
    CHECK(alone == c.alone);
  }
  // A key with one run has no partner.
  std::vector<LockstepInfo> single(1);
  single[0].key = "a";
  single[0].member_bytes = 100.0;
  const std::vector<std::size_t> one = {0};
  CHECK(describe_units(form_units(one, single, 64, 1U << 30), single, 64, 1U << 30) ==
        std::vector<std::string>{
            "alone: 1 runs (0): no other run shares its data set, loss and partitions"});
}

TEST_CASE("lockstep: a run whose data came from the sweep's cache reports the data it shares",
          "[experiments][sweep][lockstep]") {
  const auto dir = sweep_scratch("lockstep_cached_data");
  for (const bool sparse : {false, true}) {
    const SweepSpec spec = expand_sweep(lockstep_sweep(sparse), "lockstep.json", dir);
    SetupCache cache;
    const RunPlan first = plan_run(spec.runs[0].config, "lockstep.json", dir, {.setup = &cache});
    const RunPlan second = plan_run(spec.runs[1].config, "lockstep.json", dir, {.setup = &cache});
    CAPTURE(sparse);
    // The second plan read the data from the cache, and counts the first one's estimate of it.
    REQUIRE(&second.objective->data() == &first.objective->data());
    REQUIRE(first.data_memory > 0.0);
    CHECK(second.data_memory == first.data_memory);
    CHECK(second.memory == first.memory);
    const LockstepInfo a = lockstep_info(first, dir);
    const LockstepInfo b = lockstep_info(second, dir);
    CHECK(b.shared_bytes == a.shared_bytes);
    CHECK(b.member_bytes == a.member_bytes);
  }
}

TEST_CASE("lockstep: sparse partitions with fewer non-zeros than features run alone",
          "[experiments][sweep][lockstep]") {
  const auto dir = sweep_scratch("lockstep_wide");
  // 240 training rows of 45 non-zeros (the Amazon-like rows): 120 features share passes, 5000
  // do not (10 800 non-zeros in all, below 5000 per partition).
  for (const int features : {120, 5000}) {
    Json sweep = lockstep_sweep(true);
    sweep["base"]["data"]["features"] = features;
    const SweepSpec spec = expand_sweep(sweep, "lockstep.json", dir);
    const RunPlan plan = plan_run(spec.runs[0].config, "lockstep.json", dir);
    const models::Dataset& data = plan.objective->data();
    CAPTURE(features, data.stored_entries(), plan.partitions);
    const LockstepInfo info = lockstep_info(plan, dir);
    if (features == 120) {
      REQUIRE(data.stored_entries() >= data.dimension() * plan.partitions);
      CHECK(info.alone.empty());
      CHECK_FALSE(info.key.empty());
    } else {
      REQUIRE(data.stored_entries() < data.dimension() * plan.partitions);
      CHECK(info.key.empty());
      CHECK(info.alone ==
            fmt::format("its {} partitions hold {} non-zeros each on average, fewer than its 5000 "
                        "features: its pass is mostly the partition gradients each run writes",
                        plan.partitions,
                        data.stored_entries() / plan.partitions));
    }
  }
}

TEST_CASE("lockstep: a small memory limit splits the group, the same bytes",
          "[experiments][sweep][lockstep]") {
  const auto dir = sweep_scratch("lockstep_memory");
  Json sweep = lockstep_sweep(false);
  sweep["schemes"] = Json::array({lockstep_schemes()[1]});
  sweep["grid"] = Json::object();
  sweep["repetitions"] = 6;
  run_lockstep(sweep, dir / "alone", 1, 1);
  // The run's own estimate of its data and of what each run adds: room for two and a half runs
  // beside the data.
  const SweepSpec spec = expand_sweep(sweep, "lockstep.json", dir);
  const LockstepInfo info = lockstep_info(plan_run(spec.runs[0].config, "lockstep.json", dir), dir);
  REQUIRE(info.member_bytes > 0.0);
  const std::uint64_t saved = memory_limit();
  set_memory_limit(static_cast<std::uint64_t>(info.shared_bytes + 2.5 * info.member_bytes));
  std::vector<std::string> log;
  try {
    log = run_lockstep(sweep, dir / "small", 64, 1);
  } catch (...) {
    set_memory_limit(saved);
    throw;
  }
  set_memory_limit(saved);
  CHECK(tree(dir / "small") == tree(dir / "alone"));
  const auto groups = std::count_if(log.begin(), log.end(), [](const std::string& line) {
    return line.rfind("lock-step group ", 0) == 0 &&
           line.find(" of 3: 2 runs") != std::string::npos &&
           line.find("--max-memory") != std::string::npos;
  });
  CHECK(groups == 3);
}

}  // namespace stragglersim::experiments

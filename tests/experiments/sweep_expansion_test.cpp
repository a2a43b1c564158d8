// Sweep expansion (experiments/sweep_expansion.cpp): the grid in key order with repetitions
// innermost and their seeds, the config errors of a bad grid or baseline, run folder names.

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/sweep.h"
#include "models/base/random_stream.h"
#include "tests/experiments/sweep_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using stragglersim::testing::slurp;

}  // namespace

TEST_CASE("sweep: grid expands in sorted key order with repetitions innermost",
          "[experiments][sweep]") {
  const nlohmann::json sweep = {
      {"name", "order"},
      {"base", delay_only_base()},
      {"grid", {{"/workers", {12, 24}}, {"/code/d", {2, 3, 4}}, {"/target_loss", {1.5}}}},
      {"repetitions", 3}};
  const auto spec = expand_sweep(sweep, "order.json", ".");
  CHECK(spec.name == "order");
  REQUIRE(spec.parameters == std::vector<std::string>{"/code/d", "/target_loss", "/workers"});
  REQUIRE(spec.runs.size() == 18);
  // index = ((d · 1 + target) · 2 + workers) · 3 + repetition; the first key varies slowest.
  for (std::size_t i = 0; i < spec.runs.size(); ++i) {
    const auto& run = spec.runs[i];
    CHECK(run.index == i);
    CHECK(run.repetition == static_cast<int>(i % 3));
    CHECK(run.values[0] == std::vector<int>{2, 3, 4}[i / 6]);
    CHECK(run.values[1] == 1.5);
    CHECK(run.values[2] == std::vector<int>{12, 24}[i / 3 % 2]);
    CHECK(run.config["code"]["d"] == run.values[0]);
    CHECK(run.config["workers"] == run.values[2]);
    CHECK(run.config["target_loss"] == 1.5);  // a new key of an existing object is allowed
    // Repetition 0 keeps the base seed; repetition k derives it (top bit cleared).
    const std::uint64_t expected =
        run.repetition == 0
            ? 11U
            : stragglersim::derive_seed(11, static_cast<std::uint64_t>(run.repetition)) &
                  ((std::uint64_t{1} << 63U) - 1U);
    CHECK(run.seed == expected);
    CHECK(run.config["seed"] == expected);
  }
  CHECK(spec.runs[0].folder == "runs/code.d=2_target_loss=1.5_workers=12_rep0");
  CHECK(spec.runs[17].folder == "runs/code.d=4_target_loss=1.5_workers=24_rep2");
  CHECK(spec.runs[17].config["name"] == "order/code.d=4_target_loss=1.5_workers=24_rep2");
  CHECK(spec.runs[4].seed == spec.runs[1].seed);  // same repetition, other grid point
  CHECK(spec.runs[1].seed != spec.runs[2].seed);

  // No grid, one repetition: the base config itself, seed included.
  const auto single = expand_sweep({{"base", delay_only_base()}}, "one.json", ".");
  REQUIRE(single.runs.size() == 1);
  CHECK(single.runs[0].folder == "runs/rep0");
  auto expected = delay_only_base();
  expected["name"] = "one/rep0";
  CHECK(single.runs[0].config == expected);
}

TEST_CASE("sweep: bad grid pointers and values are config errors with exact messages",
          "[experiments][sweep]") {
  auto sweep_with = [](const nlohmann::json& grid) {
    return nlohmann::json{{"base", delay_only_base()}, {"grid", grid}};
  };
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/dd/x", {1}}}), "s.json", "."),
                    "s.json:/grid/~1code~1dd~1x: no such place in the base config; got "
                    "\"/code/dd/x\"; expected a pointer to an existing value or to a new key of an "
                    "existing object");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"code/d", {1}}}), "s.json", "."),
                    "s.json:/grid/code~1d: not a JSON pointer; got \"code/d\"; expected a pointer "
                    "into the base config such as \"/code/d\"");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/d", 3}}), "s.json", "."),
                    "s.json:/grid/~1code~1d: wrong type; got 3; expected a non-empty array of "
                    "values, such as [2, 3, 5]");
  CHECK_THROWS_WITH(expand_sweep(sweep_with({{"/code/d", nlohmann::json::array()}}), "s.json", "."),
                    "s.json:/grid/~1code~1d: wrong type; got []; expected a non-empty array of "
                    "values, such as [2, 3, 5]");
  CHECK_THROWS_WITH(
      expand_sweep({{"base", delay_only_base()}, {"repetitions", 0}}, "s.json", "."),
      "s.json:/repetitions: out of range; got 0; expected an integer in [1, 1000000]");
  CHECK_THROWS_WITH(expand_sweep({{"grid", nlohmann::json::object()}}, "s.json", "."),
                    "s.json:/base: missing required key; expected a run config object (or "
                    "\"base_file\")");
  CHECK_THROWS_WITH(
      expand_sweep(
          {{"base", delay_only_base()}, {"grdi", nlohmann::json::object()}}, "s.json", "."),
      Catch::Matchers::StartsWith("s.json:/grdi: unknown key"));

  // A bad grid value fails validation before anything is written, naming the run.
  const auto dir = sweep_scratch("bad_value");
  const auto spec =
      expand_sweep(sweep_with({{"/code/d", {2, 5}}, {"/stopping/r", {6, 13}}}), "s.json", dir);
  CHECK_THROWS_WITH(run_sweep(spec, dir / "out", SweepOptions{}),
                    "s.json run 1 (/code/d = 2, /stopping/r = 13, repetition 0):/stopping/r: out "
                    "of range; got 13; expected an integer in [1, 12]");
  CHECK_FALSE(fs::exists(dir / "out"));

  // The CLI prints it and exits 2, writing nothing.
  const auto path = dir / "bad.json";
  std::ofstream(path) << sweep_with({{"/code/d", {2, 5}}}).dump();
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", path.string(), (dir / "cli").string())) ==
        2);
  CHECK_FALSE(fs::exists(dir / "cli"));
}

TEST_CASE("sweep: folder names come from the grid point and survive grid extension",
          "[experiments][sweep]") {
  const auto small =
      expand_sweep({{"base", delay_only_base()}, {"grid", {{"/code/d", {2, 3}}}}}, "s.json", ".");
  const auto large = expand_sweep(
      {{"base", delay_only_base()}, {"grid", {{"/code/d", {1, 2, 3, 4}}}}, {"repetitions", 2}},
      "s.json",
      ".");
  REQUIRE(small.runs.size() == 2);
  REQUIRE(large.runs.size() == 8);
  // d = 2, repetition 0 is index 0 of the small sweep and index 2 of the large one.
  CHECK(small.runs[0].folder == "runs/code.d=2_rep0");
  CHECK(large.runs[2].folder == small.runs[0].folder);
  CHECK(large.runs[2].config == small.runs[0].config);
  CHECK(large.runs[4].folder == small.runs[1].folder);
  CHECK(large.runs[5].folder == "runs/code.d=3_rep1");

  // Values the slug cannot keep whole add 8 hex digits of FNV-1a over the point's values, so
  // the string "2" and the number 2 (and two long names with one prefix) get distinct folders.
  const auto odd = expand_sweep(
      {{"base", delay_only_base()}, {"grid", {{"/label", {2, "2", "a/b"}}}}}, "s.json", ".");
  REQUIRE(odd.runs.size() == 3);
  CHECK(odd.runs[0].folder == "runs/label=2_rep0");
  auto fnv = [](const std::string& text) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    return fmt::format("{:016x}", h).substr(0, 8);
  };
  CHECK(odd.runs[1].folder == "runs/label=2_rep0-h" + fnv(R"(["2"])"));
  CHECK(odd.runs[2].folder == "runs/label=a_b_rep0-h" + fnv(R"(["a/b"])"));
}

TEST_CASE("sweep: a baseline must name grid keys and grid values", "[experiments][sweep]") {
  const auto with = [](const nlohmann::json& baseline) {
    return nlohmann::json{{"base", gradient_base()},
                          {"grid", {{"/code/d", {1, 2}}, {"/stopping/r", {3, 6}}}},
                          {"baseline", baseline}};
  };
  CHECK_THROWS_WITH(expand_sweep(with({{"/code/s", 1}}), "b.json", "."),
                    "b.json:/baseline/~1code~1s: not a grid key; got \"/code/s\"; expected one of "
                    "the grid keys: /code/d, /stopping/r");
  CHECK_THROWS_WITH(expand_sweep(with({{"/code/d", 3}}), "b.json", "."),
                    "b.json:/baseline/~1code~1d: not one of the grid's values for this key; got 3; "
                    "expected one of [1,2]");
  CHECK_THROWS_WITH(expand_sweep(with(nlohmann::json::object()), "b.json", "."),
                    "b.json:/baseline: empty baseline; got {}; expected an object naming at least "
                    "one grid key and its baseline value");
  nlohmann::json none = with({{"/code/d", 1}});
  none.erase("baseline");
  const auto plain = expand_sweep(none, "b.json", ".");
  CHECK_FALSE(plain.has_baseline);
  for (const auto& run : plain.runs) {
    CHECK(run.baseline == run.index);
  }
}

}  // namespace stragglersim::experiments

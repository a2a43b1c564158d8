// A sweep's output folder (experiments/sweep_folder.cpp): another sweep refused, an extension
// keeping the runs done, shards merged into the folder of one full sweep.

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/sweep.h"
#include "tests/experiments/sweep_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

using stragglersim::testing::slurp;

nlohmann::json small_delay_sweep(const nlohmann::json& d_values, int repetitions) {
  return {{"name", "ext"},
          {"base", delay_only_base()},
          {"grid", {{"/code/d", d_values}}},
          {"repetitions", repetitions}};
}

}  // namespace

TEST_CASE("sweep: another sweep into a used folder is refused and changes nothing",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("identity");
  const auto out = dir / "out";
  const auto first = write_sweep(dir / "first.json", small_delay_sweep({2, 3}, 2));
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", first.string(), out.string())) == 0);
  const auto before = tree(out);

  // Same grid, another base (more iterations): every shared run differs.
  auto other = small_delay_sweep({2, 3}, 2);
  other["base"]["optimizer"]["iterations"] = 30;
  const auto second = write_sweep(dir / "second.json", other);
  const auto spec = stragglersim::experiments::expand_sweep_file(second);
  CHECK_THROWS_WITH(
      run_sweep(spec, out, SweepOptions{}),
      fmt::format("{}: holds sweep \"ext\" of 4 runs (0 with the same config as here, 4 with "
                  "another); got {}; expected the same sweep or one that extends its grid or "
                  "repetitions; to proceed, give another --out folder or delete {} to start over",
                  out.string(),
                  second.string(),
                  out.string()));
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", second.string(), out.string())) == 2);
  // Another grid key: no run in common.
  const auto third = write_sweep(
      dir / "third.json",
      {{"name", "ext"}, {"base", delay_only_base()}, {"grid", {{"/stopping/r", {5, 6}}}}});
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}'", third.string(), out.string())) == 2);
  CHECK(tree(out) == before);

  // A non-empty folder that is no sweep folder is refused too, and left alone.
  fs::create_directories(dir / "plain");
  std::ofstream(dir / "plain" / "notes.txt") << "mine";
  CHECK(run_binary(
            fmt::format("sweep '{}' --out '{}'", first.string(), (dir / "plain").string())) == 2);
  CHECK(tree(dir / "plain").size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("sweep: extending the grid and repetitions keeps the runs done and names the dropped",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("extend");
  const auto out = dir / "out";
  const auto small = write_sweep(dir / "small.json", small_delay_sweep({2, 3}, 1));
  const auto large = write_sweep(dir / "large.json", small_delay_sweep({1, 2, 3, 4}, 2));
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", small.string(), out.string())) == 0);
  const auto small_tree = tree(out);

  const auto spec = stragglersim::experiments::expand_sweep_file(large);
  const auto result = run_sweep(spec, out, SweepOptions{});
  CHECK(result.total == 8);
  CHECK(result.skipped == 2);
  CHECK(result.ran == 6);
  CHECK(result.stale.empty());
  const auto extended = tree(out);
  for (const auto& [name, bytes] : small_tree) {
    if (name.rfind("runs/", 0) == 0) {
      CHECK(extended.at(name) == bytes);  // kept, not rerun
    }
  }
  // The same as the large sweep into a fresh folder.
  REQUIRE(run_binary(
              fmt::format("sweep '{}' --out '{}'", large.string(), (dir / "fresh").string())) == 0);
  CHECK(extended == tree(dir / "fresh"));

  // Back to the small sweep: its runs are all there; the others are named, kept, not indexed.
  const auto back = run_sweep(stragglersim::experiments::expand_sweep_file(small), out, {});
  CHECK(back.ran == 0);
  CHECK(back.stale == std::vector<std::string>{"runs/code.d=1_rep0",
                                               "runs/code.d=1_rep1",
                                               "runs/code.d=2_rep1",
                                               "runs/code.d=3_rep1",
                                               "runs/code.d=4_rep0",
                                               "runs/code.d=4_rep1"});
  CHECK(slurp(out / "index.csv") == small_tree.at("index.csv"));
  CHECK(fs::exists(out / "runs/code.d=4_rep1/summary.json"));

  // Switching the folder to the large sweep again through a shard drops the small sweep's
  // index.csv (it no longer describes the folder); the merge writes the large one.
  SweepOptions half;
  half.shard = {0, 2};
  CHECK(run_sweep(spec, out, half).ran == 0);
  CHECK_FALSE(fs::exists(out / "index.csv"));
  CHECK(merge_sweep(spec, out).failed == 0);
  CHECK(tree(out) == tree(dir / "fresh"));
  fs::remove_all(dir);
}

TEST_CASE("sweep: three shards then merge equal one full sweep byte for byte",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("shards");
  const auto path = write_sweep(dir / "grad.json",
                                {{"base", gradient_base()},
                                 {"grid", {{"/code/d", {1, 2, 3}}, {"/stopping/r", {3, 6}}}},
                                 {"repetitions", 2}});
  REQUIRE(run_binary(fmt::format(
              "sweep '{}' --out '{}' --jobs 1", path.string(), (dir / "full").string())) == 0);
  const auto out = dir / "sharded";
  const auto spec = stragglersim::experiments::expand_sweep_file(path);
  std::size_t ran = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    SweepOptions options;
    options.shard = {i, 3};
    options.f_star_cache = out / "f_star_cache";  // as the command line's shards share it
    const auto result = run_sweep(spec, out, options);
    CHECK(result.ran == 4);  // index mod 3 == i: 12 runs, 4 each
    ran += result.ran;
    CHECK_FALSE(fs::exists(out / "index.csv"));
    if (i == 1) {
      // Merging before every shard is done is refused, writing nothing.
      CHECK_THROWS_WITH(merge_sweep(spec, out),
                        fmt::format("{}: 4 of 12 runs are not complete (the first is "
                                    "runs/code.d=1_stopping.r=6_rep0); got --merge; expected "
                                    "every shard finished: rerun the missing shards, or the sweep "
                                    "without --shard to run the rest",
                                    out.string()));
    }
  }
  CHECK(ran == 12);
  // A resumed shard runs nothing: the share of a run does not depend on what is done.
  SweepOptions again;
  again.shard = {1, 3};
  CHECK(run_sweep(spec, out, again).ran == 0);
  CHECK(run_binary(fmt::format("sweep '{}' --out '{}' --merge", path.string(), out.string())) == 0);
  CHECK(tree(out) == tree(dir / "full"));
  CHECK(run_binary(fmt::format(
            "sweep '{}' --out '{}' --shard 3/3", path.string(), (dir / "x").string())) == 2);
  fs::remove_all(dir);
}

}  // namespace stragglersim::experiments

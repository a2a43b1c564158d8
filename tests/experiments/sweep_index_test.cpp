// index.csv of a sweep (experiments/sweep_index.cpp): the speedup columns against each run's
// baseline run.

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

}  // namespace

TEST_CASE("sweep: a baseline adds the speedup of every run against its baseline run",
          "[experiments][sweep]") {
  const auto dir = sweep_scratch("baseline");
  const nlohmann::json sweep = {{"base", gradient_base()},
                                {"grid", {{"/code/d", {1, 2, 3}}, {"/stopping/r", {3, 6}}}},
                                {"baseline", {{"/code/d", 1}}},
                                {"repetitions", 2}};
  const auto spec = expand_sweep(sweep, "b.json", ".");
  REQUIRE(spec.has_baseline);
  for (const auto& run : spec.runs) {
    // Same /stopping/r and repetition, /code/d = 1.
    const auto& b = spec.runs[run.baseline];
    CHECK(b.values[0] == 1);
    CHECK(b.values[1] == run.values[1]);
    CHECK(b.repetition == run.repetition);
  }
  const auto path = dir / "b.json";
  std::ofstream(path) << sweep.dump(2);
  REQUIRE(run_binary(fmt::format("sweep '{}' --out '{}'", path.string(), (dir / "out").string())) ==
          0);
  std::istringstream index(slurp(dir / "out" / "index.csv"));
  std::string line;
  std::getline(index, line);
  CHECK(line ==
        "index,repetition,seed,/code/d,/stopping/r,status,iterations,total_time,"
        "mean_iteration_time,final_loss,best_loss,time_to_target,final_test_metric,f_star,"
        "final_suboptimality,time_to_1e-1,time_to_1e-2,time_to_1e-3,baseline_index,"
        "speedup_mean_iteration_time,speedup_time_to_1e-1,speedup_time_to_1e-2,"
        "speedup_time_to_1e-3,speedup_time_to_target,folder");
  const auto cell = [](const std::string& row, std::size_t column) {
    std::stringstream s(row);
    std::string c;
    for (std::size_t i = 0; i <= column; ++i) {
      std::getline(s, c, ',');
    }
    return c;
  };
  std::size_t rows = 0;
  while (std::getline(index, line)) {
    const auto& run = spec.runs[rows++];
    const auto mine = nlohmann::json::parse(slurp(dir / "out" / run.folder / "summary.json"));
    const auto theirs =
        nlohmann::json::parse(slurp(dir / "out" / spec.runs[run.baseline].folder / "summary.json"));
    CHECK(cell(line, 18) == std::to_string(run.baseline));
    CHECK(cell(line, 19) == fmt::format("{}",
                                        theirs["mean_iteration_time"].get<double>() /
                                            mine["mean_iteration_time"].get<double>()));
    const auto& a = mine["time_to_relative_suboptimality"]["1e-1"];
    const auto& b = theirs["time_to_relative_suboptimality"]["1e-1"];
    CHECK(cell(line, 20) == (a.is_number() && b.is_number() && a.get<double>() > 0.0
                                 ? fmt::format("{}", b.get<double>() / a.get<double>())
                                 : std::string()));
    if (run.baseline == run.index) {
      CHECK(cell(line, 19) == "1");
    }
  }
  CHECK(rows == 12);
}

}  // namespace stragglersim::experiments

// trace.csv of a run (experiments/run_trace.cpp): the writer's bytes and its error on an
// unwritable path, the columns a plan has, and one row's cells and its refusal of a non-finite
// number before anything of the row is written.

#include "experiments/run_trace.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "experiments/run_summary.h"
#include "sim/scheme.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

fs::path trace_scratch(const std::string& name) {
  return stragglersim::testing::scratch_dir("run_trace_test", name);
}

/// The small least-squares run without a test set: the base columns only.
nlohmann::json run_trace_config() {
  auto config = stragglersim::testing::small_least_squares_config();
  config["data"]["test_fraction"] = 0;
  return config;
}

sim::TraceRow training_row(std::uint64_t iteration, double loss) {
  sim::TraceRow row;
  row.iteration = iteration;
  row.time = 1.5 * static_cast<double>(iteration);
  row.iteration_time = 1.5;
  row.loss = loss;
  row.grad_norm = 0.25;
  row.decoding_error = 0.5;
  row.gradient_error = 0.125;
  row.workers_heard = 4;
  row.partitions_covered = 8;
  row.heard = {0, 1, 2, 3};
  row.used = {0, 1, 2, 3};
  return row;
}

}  // namespace

TEST_CASE("run trace: the writer writes every buffer it is handed, in order, and empties it",
          "[experiments][run_trace]") {
  const auto path = trace_scratch("bytes") / "trace.csv";
  TraceWriter writer(path);
  fmt::memory_buffer buffer;
  std::string expected;
  for (int row = 0; row < 1000; ++row) {
    const std::string line = fmt::format("{},{}\n", row, row * row);
    buffer.append(line.data(), line.data() + line.size());
    expected += line;
    writer.add(buffer);
  }
  writer.finish(buffer);
  CHECK(buffer.size() == 0);
  CHECK(stragglersim::testing::slurp(path) == expected);
  CHECK(writer.seconds() >= 0.0);
}

TEST_CASE("run trace: a trace that cannot be created is a config error naming the file",
          "[experiments][run_trace]") {
  const auto path = trace_scratch("missing") / "no_such_folder" / "trace.csv";
  CHECK(stragglersim::testing::message_of<ConfigError>([&] { TraceWriter writer(path); }) ==
        fmt::format("{}: cannot write file (No such file or directory); got \"{}\"; expected a "
                    "writable file system with free space",
                    path.string(),
                    path.string()));
}

TEST_CASE("run trace: a plan's columns and one row's cells", "[experiments][run_trace]") {
  const RunPlan plan = plan_run(run_trace_config(), "cfg.json", ".");
  const TraceColumns columns(plan);
  CHECK(columns.header() ==
        "iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,"
        "gradient_error_relative,workers_heard,partitions_covered\n");
  fmt::memory_buffer buffer;
  TrainingTally tally;
  tally.workers.resize(plan.workers);
  write_row(plan, columns, nullptr, training_row(0, 4.0), buffer, tally);
  write_row(plan, columns, nullptr, training_row(1, 3.0), buffer, tally);
  // gradient_error_relative has no value: an empty cell.
  CHECK(std::string(buffer.data(), buffer.size()) ==
        "0,0,1.5,4,0.25,0.5,0.125,,4,8\n"
        "1,1.5,1.5,3,0.25,0.5,0.125,,4,8\n");
  // Row 0 is the start: only row 1 counts as an iteration.
  CHECK(tally.times.n == 1);
  CHECK(tally.best == 3.0);
  CHECK(tally.last.iteration == 1);
  CHECK(tally.workers.heard == std::vector<std::uint64_t>{1, 1, 1, 1, 0, 0, 0, 0});
}

TEST_CASE("run trace: a non-finite number ends the run before any cell of its row is written",
          "[experiments][run_trace]") {
  const RunPlan plan = plan_run(run_trace_config(), "cfg.json", ".");
  const TraceColumns columns(plan);
  fmt::memory_buffer buffer;
  TrainingTally tally;
  tally.workers.resize(plan.workers);
  write_row(plan, columns, nullptr, training_row(1, 3.0), buffer, tally);
  const std::size_t before = buffer.size();
  auto bad = training_row(2, std::numeric_limits<double>::infinity());
  CHECK(stragglersim::testing::message_of<sim::NumericalError>([&] {
          write_row(plan, columns, nullptr, bad, buffer, tally);
        }) == "iteration 2: non-finite loss inf (delays or data too large)");
  bad = training_row(2, 1.0);
  bad.gradient_error = std::nan("");
  CHECK(stragglersim::testing::message_of<sim::NumericalError>([&] {
          write_row(plan, columns, nullptr, bad, buffer, tally);
        }) == "iteration 2: non-finite gradient_error nan (delays or data too large)");
  CHECK(buffer.size() == before);
  CHECK(tally.last.iteration == 1);
}

}  // namespace stragglersim::experiments

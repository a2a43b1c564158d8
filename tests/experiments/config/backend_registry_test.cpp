// The backend table: the built-in rows, their traits and keys as the config reader applies
// them, and the "expected" lists the errors build from the rows. A backend registered from
// outside is run end to end in tests/experiments/run_output_backend_test.cpp.
#include "experiments/config/backend_registry.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "sim/backends/mpi_session.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json config() {
  return testing::config_with_data(
      {{"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 120}, {"features", 4}});
}

std::vector<std::string> key_names(const BackendRow& row) {
  std::vector<std::string> names;
  for (const auto& key : row.keys) {
    names.push_back(key.name);
  }
  return names;
}

}  // namespace

TEST_CASE("backends: the built-in rows in order with their traits and keys",
          "[experiments][config][backends]") {
  const auto rows = backend_factories();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].name == "simulated");
  CHECK(rows[1].name == "threads");
  CHECK(rows[2].name == "mpi");
  CHECK(key_names(rows[0]).empty());
  CHECK(key_names(rows[1]) == std::vector<std::string>{"seconds_per_unit", "timeout", "faults"});
  CHECK(key_names(rows[2]) ==
        std::vector<std::string>{"seconds_per_unit", "timeout", "faults", "inject", "allreduce"});
  CHECK(rows[2].keys[4].default_value == "schedule");
  CHECK(rows[1].keys[0].default_value == "0.01");
  CHECK(rows[1].keys[1].default_value == "5");
  // Only the simulated clock takes delay-only runs and shares the cores of a sweep.
  CHECK(rows[0].traits.runs_delay_only);
  CHECK(rows[0].traits.shares_cores);
  CHECK_FALSE(rows[0].traits.real_time);
  for (const auto& row : {rows[1], rows[2]}) {
    INFO(row.name);
    CHECK(row.traits.real_time);
    CHECK_FALSE(row.traits.shares_cores);
    CHECK_FALSE(row.traits.runs_delay_only);
    CHECK(row.traits.mpi == (row.name == "mpi"));
  }
  CHECK(rows[0].unavailable.empty());
  CHECK(rows[1].unavailable.empty());
  CHECK(rows[2].unavailable.empty() == sim::mpi_compiled_in());
  CHECK(find_backend("threads")->name == "threads");
  CHECK_FALSE(find_backend("thread").has_value());
}

TEST_CASE("backends: the expected lists of the errors come from the rows",
          "[experiments][config][backends]") {
  const auto rows = backend_factories();
  CHECK(quoted_names(rows, [](const BackendRow&) { return true; }) ==
        "\"simulated\", \"threads\" or \"mpi\"");
  CHECK(quoted_names(rows, [](const BackendRow& r) { return !r.traits.mpi; }) ==
        "\"simulated\" or \"threads\"");
  CHECK(quoted_names(rows, [](const BackendRow& r) { return r.traits.runs_delay_only; }) ==
        "\"simulated\"");
  CHECK(quoted_names(rows, [](const BackendRow&) { return false; }).empty());
  // The network check asks the row's real_time trait.
  auto c = config();
  c["backend"] = {{"kind", "threads"}};
  c["network"] = {{"latency", 0.1}};
  CHECK(testing::plan_error(c, ".") ==
        "cfg.json:/network: a network model applies to the simulated clock only (the threads "
        "backend's messages take their real time); got \"threads\"; expected backend "
        "\"simulated\", or no \"network\" block");
  // The options' own validate(): timeout in (0, 3600] seconds.
  c.erase("network");
  c["backend"]["timeout"] = 4000;
  CHECK(testing::plan_error(c, ".") ==
        "cfg.json:/backend/timeout: out of range; got 4000; expected a number in (0, 3600] "
        "seconds");
  c["backend"]["timeout"] = 0;
  CHECK(testing::plan_error(c, ".") ==
        "cfg.json:/backend/timeout: out of range; got 0; expected a number in (0, 3600] seconds");
}

TEST_CASE("backends: list documents every row, an unavailable one with its reason",
          "[experiments][config][backends]") {
  const auto docs = backend_docs();
  REQUIRE(docs.size() == 3);
  CHECK(docs[0].description == "simulated clock: delays drawn from the delay model (default)");
  const std::string mpi = "one MPI rank per worker and a master rank (mpirun -np workers+1)";
  CHECK(docs[2].description ==
        (sim::mpi_compiled_in() ? mpi
                                : mpi + "; not compiled in (build with Open MPI: libopenmpi-dev, "
                                        "cmake -DSTRAGGLERSIM_WITH_MPI=ON)"));
}

TEST_CASE("backends: a registered row's requirements refuse another block at its key",
          "[experiments][config][backends][requirements]") {
  // As an aggregation row will refuse a code: the simulated clock's factory, accepting only
  // uncoded runs, reported at /code/kind with the code's value.
  BackendRow row = *find_backend("simulated");
  row.name = "uncoded_only";
  row.requirements = {
      .codes = OneOf{{"uncoded"},
                     {.why = "it sums one gradient per worker", .at = ReportAt::kConflict}}};
  register_backend(row);
  auto c = config();
  c["backend"] = {{"kind", "uncoded_only"}};
  const std::string refused = testing::plan_error(c, ".");
  c["code"] = {{"kind", "uncoded"}};
  const std::string accepted = testing::plan_error(c, ".");
  unregister_backend("uncoded_only");
  CHECK(refused ==
        "cfg.json:/code/kind: the uncoded_only backend needs the uncoded code (it sums one "
        "gradient per worker); got \"frc\"; expected code kind uncoded");
  CHECK(accepted == "no error");
}

}  // namespace stragglersim::experiments

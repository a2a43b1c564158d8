// The "backend": {"kind": "mpi", ...} section of a config: its keys (those of the threads backend
// plus inject), and the exact error when the program was built without Open MPI. Running it
// needs mpirun: tests/mpi/mpi_backend_test.py (CTest label mpi).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/config/config_error.h"
#include "experiments/config/run_plan.h"
#include "sim/backends/mpi_session.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

nlohmann::json mpi_config() {
  auto c = testing::small_logistic_config("m");
  c["stragglers"] = "drain";
  c["backend"] = nlohmann::json::parse(R"({"kind": "mpi", "inject": false, "timeout": 2.5,
    "faults": [{"worker": 2, "kind": "hang", "from_iteration": 4}]})");
  return c;
}

std::string mpi_plan_error(const nlohmann::json& c) {
  return testing::plan_error(c, testing::scratch_dir("mpi_config_test", "plans"));
}

}  // namespace

TEST_CASE("experiments: an mpi backend config reads the threads keys and inject",
          "[experiments][config][mpi]") {
  if (!sim::mpi_compiled_in()) {
    CHECK(mpi_plan_error(mpi_config()) ==
          "cfg.json:/backend/kind: the mpi backend is not compiled in (build with Open MPI: "
          "libopenmpi-dev, cmake -DSTRAGGLERSIM_WITH_MPI=ON); got \"mpi\"; expected "
          "\"simulated\" or \"threads\"");
    return;
  }
  const RunPlan plan =
      plan_run(mpi_config(), "cfg.json", testing::scratch_dir("mpi_config_test", "p"));
  CHECK(plan.backend.name == "mpi");
  CHECK(plan.backend.traits.mpi);
  CHECK(plan.backend.traits.real_time);
  CHECK(plan.backend.unavailable.empty());
  // Its workers' loop; the backend itself needs mpirun (tests/mpi/mpi_backend_test.py).
  CHECK(plan.backend_setup.run_worker != nullptr);
  CHECK(plan.resolved["backend"] ==
        nlohmann::json::parse(R"({"kind": "mpi", "inject": false, "seconds_per_unit": 0.01,
          "timeout": 2.5, "faults": [{"worker": 2, "kind": "hang", "from_iteration": 4}]})"));
  auto c = mpi_config();
  c["backend"]["inject"] = "yes";
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/backend/inject: wrong type; got \"yes\"; expected true or false");
  c["backend"].erase("inject");
  c["backend"]["injekt"] = true;
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/backend/injekt: unknown key 'injekt'; did you mean 'inject'? valid keys are: "
        "allreduce, faults, inject, kind, "
        "seconds_per_unit, timeout");
  c = mpi_config();
  c["data"] = nullptr;
  c.erase("loss");
  c["optimizer"] = {{"iterations", 10}};
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/backend/kind: the mpi backend computes gradients and needs data; got "
        "\"mpi\"; expected \"simulated\" for a delay-only run (\"data\": null)");
}

}  // namespace stragglersim::experiments

namespace stragglersim::experiments {

TEST_CASE("experiments: the mpi backend's allreduce reduces a collective",
          "[experiments][config][mpi]") {
  if (!sim::mpi_compiled_in()) {
    return;  // the backend is refused first (the case above)
  }
  auto c = mpi_config();
  c["stragglers"] = "cancel";
  c["backend"].erase("faults");
  c["backend"]["allreduce"] = "mpi";
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/backend/allreduce: the mpi backend's allreduce needs a collective aggregation; "
        "got \"mpi\"; expected an \"aggregation\" block naming a collective, or no \"allreduce\" "
        "with the parameter server");
  c["aggregation"] = {{"kind", "ring"}};
  const RunPlan plan = plan_run(c, "cfg.json", testing::scratch_dir("mpi_config_test", "p"));
  REQUIRE(plan.collective);
  CHECK(plan.resolved["backend"]["allreduce"] == "mpi");
  c["backend"]["allreduce"] = "nccl";
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/backend/allreduce: unknown allreduce 'nccl'; valid values are: schedule, mpi");
  c["backend"]["allreduce"] = "schedule";
  c["aggregation"] = {{"kind", "stragglar"}, {"straggler", 1}};
  c["workers"] = 4;
  c["partitions"] = 4;
  CHECK(mpi_plan_error(c) ==
        "cfg.json:/aggregation/kind: the stragglar aggregation needs the simulated clock (the "
        "threads and mpi backends do not run StragglAR); got \"mpi\"; expected a backend on the "
        "simulated clock");
}

}  // namespace stragglersim::experiments

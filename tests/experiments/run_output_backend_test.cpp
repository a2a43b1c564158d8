// A backend added from outside the library, through register_backend (the path the built-in
// rows take too): one class and one row, both in this file. It delegates to the simulated
// clock's own row and counts its iterations; planned and run like any config, it must give the
// simulated backend's trace byte for byte, every iteration passing through it once.

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "experiments/config/backend_registry.h"
#include "experiments/config/run_plan.h"
#include "experiments/run_output.h"
#include "tests/experiments/config/plan_support.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

/// The simulated backend, counting the iterations it runs.
class CountingBackend final : public sim::Backend {
 public:
  CountingBackend(std::unique_ptr<sim::Backend> inner, std::shared_ptr<int> calls)
      : inner_(std::move(inner)), calls_(std::move(calls)) {}
  [[nodiscard]] std::string name() const override { return "counting"; }
  sim::BackendIteration iterate(std::uint64_t iteration,
                                const Eigen::VectorXd& query,
                                const Eigen::MatrixXd* partition_gradients) override {
    ++*calls_;
    return inner_->iterate(iteration, query, partition_gradients);
  }

 private:
  std::unique_ptr<sim::Backend> inner_;
  std::shared_ptr<int> calls_;
};

/// The row: one key of its own ("label", recorded in the summary's config), the simulated
/// clock's traits except that it leaves delay-only runs to "simulated".
BackendRow counting_row(const std::shared_ptr<int>& calls) {
  return {"counting",
          "the simulated clock, counting its iterations",
          {{"label", "toy"}},
          {.real_time = false, .shares_cores = true, .mpi = false, .runs_delay_only = false},
          "",
          [calls](JsonReader& backend, const BackendContext& context) {
            (void)backend.string("label", "toy");
            const BackendSetup inner = find_backend("simulated")->make(backend, context);
            BackendSetup setup;
            setup.make = [inner, calls](const RunPlan& plan, models::WorkerPool* pool) {
              return std::make_unique<CountingBackend>(inner.make(plan, pool), calls);
            };
            return setup;
          }};
}

/// The row registered for one scope.
class Registered {
 public:
  explicit Registered(BackendRow row) : name_(row.name) { register_backend(std::move(row)); }
  ~Registered() { unregister_backend(name_); }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

 private:
  std::string name_;
};

nlohmann::json small_config() {
  auto c = testing::config_with_data(
      {{"source", "synthetic"}, {"generator", "gaussian_mixture"}, {"rows", 240}, {"features", 5}});
  c["optimizer"]["iterations"] = 12;
  return c;
}

}  // namespace

TEST_CASE("backends: a backend registered from outside runs a config like the built-in ones",
          "[experiments][backends]") {
  const auto dir = testing::scratch_dir("run_output_backend", "toy");
  auto calls = std::make_shared<int>(0);
  std::string trace;
  {
    const Registered toy(counting_row(calls));
    auto c = small_config();
    c["backend"] = {{"kind", "counting"}, {"label", "x"}};
    const RunPlan plan = plan_run(c, "cfg.json", dir);
    CHECK(plan.backend.name == "counting");
    CHECK(plan.resolved["backend"] == nlohmann::json({{"kind", "counting"}, {"label", "x"}}));
    const RunOutcome outcome = execute_run(plan, dir / "counting");
    CHECK(outcome.status == "ok");
    CHECK(*calls == 12);
    CHECK(outcome.summary["config"]["backend"]["label"] == "x");
    trace = testing::slurp(dir / "counting" / "trace.csv");

    // Its keys are validated against its row, and its traits apply: no delay-only runs.
    c["backend"] = {{"kind", "counting"}, {"labl", "x"}};
    CHECK(testing::plan_error(c, dir) ==
          "cfg.json:/backend/labl: unknown key 'labl'; did you mean 'label'? valid keys are: "
          "kind, label");
    c["backend"] = {{"kind", "countin"}};
    CHECK(testing::plan_error(c, dir) ==
          "cfg.json:/backend/kind: unknown backend 'countin'; did you mean 'counting'? valid "
          "values are: simulated, threads, mpi, counting");
    auto delay_only = small_config();
    delay_only["data"] = nullptr;
    delay_only.erase("loss");
    delay_only["optimizer"] = {{"iterations", 3}};
    delay_only["backend"] = {{"kind", "counting"}};
    CHECK(testing::plan_error(delay_only, dir) ==
          "cfg.json:/backend/kind: the counting backend computes gradients and needs data; got "
          "\"counting\"; expected \"simulated\" for a delay-only run (\"data\": null)");
    // Listed with its keys beside the built-in rows.
    const auto docs = backend_docs();
    REQUIRE(docs.size() == 4);
    CHECK(docs.back().name == "counting");
    CHECK(docs.back().keys.front().name == "label");
  }
  // Out of scope: gone from the table, so a config naming it is an error again.
  CHECK_FALSE(find_backend("counting").has_value());
  CHECK(backend_factories().size() == 3);
  const RunPlan simulated = plan_run(small_config(), "cfg.json", dir);
  CHECK(simulated.backend.name == "simulated");
  (void)execute_run(simulated, dir / "simulated");
  CHECK(trace == testing::slurp(dir / "simulated" / "trace.csv"));
  CHECK(*calls == 12);
}

}  // namespace stragglersim::experiments

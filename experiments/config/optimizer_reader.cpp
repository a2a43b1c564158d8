#include "experiments/config/optimizer_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>

#include "models/base/random_stream.h"
#include "models/worker_pool.h"

namespace stragglersim::experiments {
namespace {

/// The optional minibatch size "batch" (docs/model.md §2): 1 ≤ batch ≤ the smallest partition's
/// rows, on the simulated clock only (absent: full partition gradients).
void read_batch(JsonReader& opt_reader, RunPlan& plan, bool simulated_backend) {
  if (!opt_reader.has("batch")) {
    return;
  }
  const std::int64_t batch = opt_reader.integer("batch", std::nullopt);
  const Eigen::Index largest = plan.objective->smallest_partition_rows();
  if (batch < 1 || batch > largest) {
    opt_reader.fail_value("batch",
                          "out of range",
                          batch,
                          fmt::format("an integer in [1, {}] (the rows of the smallest of the {} "
                                      "partitions)",
                                      largest,
                                      plan.objective->partitions()));
  }
  if (!simulated_backend) {
    opt_reader.fail_value(
        "batch", "stochastic gradients need the simulated backend", batch, "no batch key");
  }
  plan.batch = static_cast<Eigen::Index>(batch);
}

// β of a convex objective (from `setup` when cached there, else computed and stored), NaN for
// the mlp (no global smoothness bound: the step must be given).
double smoothness_for_step(JsonReader& root,
                           JsonReader& opt_reader,
                           const RunPlan& plan,
                           SetupCache* setup,
                           const std::string& smoothness_key) {
  const bool convex = plan.objective->loss().traits().convex;
  std::optional<double> cached =
      setup != nullptr ? setup->smoothness(smoothness_key) : std::nullopt;
  if (!convex) {
    // The mlp has no global smoothness bound: β is not defined and the step must be given.
    cached = std::numeric_limits<double>::quiet_NaN();
    if (opt_reader.has("step") && opt_reader.raw("step").is_string()) {
      opt_reader.fail_value("step",
                            "\"auto\" (1/beta) needs a smoothness bound, and the mlp (not "
                            "convex) has none",
                            opt_reader.raw("step"),
                            "a number > 0");
    }
  } else if (!cached) {
    models::WorkerPool pool(plan.threads);
    cached = plan.objective->smoothness(&pool);
    if (setup != nullptr) {
      setup->store_smoothness(smoothness_key, *cached);
    }
  }
  const double beta = *cached;
  if (convex && !std::isfinite(beta)) {
    // A value like 1e308 in a data file squares to infinity.
    root.fail("data",
              fmt::format("the data's smoothness beta is not finite (values too large to "
                          "square); got beta = {}; expected data whose squared row norms are "
                          "finite (values below about 1e150)",
                          std::isnan(beta) ? "nan" : "inf"));
  }
  return beta;
}

// The step: a number > 0, or "auto" for 1/β.
double read_step(JsonReader& opt_reader, double beta) {
  if (opt_reader.has("step") && opt_reader.raw("step").is_string()) {
    const auto step = opt_reader.string("step", std::nullopt);
    if (step != "auto") {
      opt_reader.fail_value("step", "unknown step", step, "a number > 0 or \"auto\" (1/beta)");
    }
    if (!(beta > 0.0)) {
      opt_reader.fail_value(
          "step",
          fmt::format("\"auto\" (1/beta) needs beta > 0; the data has beta = {}", beta),
          step,
          "a number > 0");
    }
    return 1.0 / beta;
  }
  return opt_reader.positive("step", std::nullopt);
}

/// The optional "schedule" object (docs/model.md §2 "Step schedules"): kind constant (default),
/// inverse_t (half_life > 0) or cosine (floor in [0, 1], default 0; its horizon T is the run's
/// iterations).
void read_schedule(JsonReader& opt_reader, RunPlan& plan) {
  if (!opt_reader.has("schedule")) {
    return;
  }
  JsonReader reader = opt_reader.object("schedule");
  const auto kind =
      reader.choice("kind", "step schedule", {"constant", "inverse_t", "cosine"}, "constant");
  sim::StepSchedule& s = plan.schedule;
  if (kind == "inverse_t") {
    s.kind = sim::StepSchedule::Kind::kInverseT;
    s.half_life = reader.positive("half_life", std::nullopt);
  } else if (kind == "cosine") {
    s.kind = sim::StepSchedule::Kind::kCosine;
    s.floor = reader.number("floor", 0.0, 0.0, 1.0);
    s.horizon = std::max<std::uint64_t>(plan.iterations, 1);
  }
  reader.finish();
  opt_reader.merge("schedule", reader);
}

/// optimizer.kind: gd (default), nesterov or erasurehead_agd.
OptimizerKind read_optimizer_kind(JsonReader& opt_reader) {
  const auto kind =
      opt_reader.choice("kind", "optimizer", {"gd", "nesterov", "erasurehead_agd"}, "gd");
  if (kind == "nesterov") {
    return OptimizerKind::kNesterov;
  }
  return kind == "erasurehead_agd" ? OptimizerKind::kErasureHeadAgd : OptimizerKind::kGd;
}

/// The optional "start" object: kind zero (the model's own x₀: zero for the linear models, the
/// seeded initialisation of the mlp) or gaussian (N(0, scale²) per coordinate, scale default 1,
/// drawn from the run's init stream).
void read_initial_point(JsonReader& opt_reader, RunPlan& plan) {
  if (!opt_reader.has("start")) {
    return;
  }
  JsonReader reader = opt_reader.object("start");
  const auto kind = reader.choice("kind", "start", {"zero", "gaussian"}, "zero");
  if (kind == "gaussian") {
    plan.gaussian_start = reader.positive("scale", 1.0);
    if (plan.objective != nullptr && !plan.objective->partial()) {
      RandomEngine engine(derive_seed(plan.seed, static_cast<std::uint64_t>(Stream::kInit)));
      boost::random::normal_distribution<double> normal(0.0, *plan.gaussian_start);
      plan.initial_point.resize(plan.objective->dimension());
      for (double& coordinate : plan.initial_point) {
        coordinate = normal(engine);
      }
    }
  }
  reader.finish();
  opt_reader.merge("start", reader);
}

/// The optional heavy-ball "momentum" in [0, 1) of gradient descent (Nesterov has its own).
void read_momentum(JsonReader& opt_reader, RunPlan& plan) {
  if (!opt_reader.has("momentum")) {
    return;
  }
  if (plan.optimizer != OptimizerKind::kGd) {
    opt_reader.fail_value("momentum",
                          "only gradient descent takes a momentum",
                          opt_reader.raw("momentum"),
                          "no momentum key, or optimizer kind gd");
  }
  const double m = opt_reader.number("momentum", std::nullopt, 0.0);
  if (!(m < 1.0)) {
    opt_reader.fail_value("momentum", "out of range", m, "a number in [0, 1)");
  }
  plan.momentum = m;
}

}  // namespace

/// The optimiser (delay-only runs read only the iteration count), the target loss and the
/// divergence bound.
void read_optimizer(JsonReader& root,
                    RunPlan& plan,
                    bool delay_only,
                    bool simulated_backend,
                    SetupCache* setup,
                    const std::string& smoothness_key) {
  JsonReader opt_reader = root.object("optimizer");
  plan.iterations = static_cast<std::uint64_t>(opt_reader.integer("iterations", std::nullopt, 0));
  if (opt_reader.has("time_budget")) {
    plan.time_budget = opt_reader.positive("time_budget", std::nullopt);
  }
  if (!delay_only && plan.objective->partial()) {
    // An MPI worker takes no step (rank 0 validates the step; β needs the whole set).
    plan.optimizer = read_optimizer_kind(opt_reader);
    if (opt_reader.has("step")) {
      (void)opt_reader.raw("step");
    }
    read_schedule(opt_reader, plan);
    read_momentum(opt_reader, plan);
    read_initial_point(opt_reader, plan);
  } else if (!delay_only) {
    plan.optimizer = read_optimizer_kind(opt_reader);
    const double beta = smoothness_for_step(root, opt_reader, plan, setup, smoothness_key);
    plan.step = read_step(opt_reader, beta);
    plan.smoothness = beta;
    read_schedule(opt_reader, plan);
    read_momentum(opt_reader, plan);
    read_initial_point(opt_reader, plan);
    read_batch(opt_reader, plan, simulated_backend);
  }
  opt_reader.finish();
  root.merge("optimizer", opt_reader);

  root.allow("target_loss");
  if (root.has("target_loss")) {
    plan.target_loss = root.number("target_loss", std::nullopt);
  }
  root.allow("divergence_bound");
  if (root.has("divergence_bound")) {
    plan.divergence_bound = root.number("divergence_bound", std::nullopt);
    if (!(*plan.divergence_bound > 1.0)) {
      root.fail_value("divergence_bound",
                      "out of range",
                      *plan.divergence_bound,
                      "a number > 1 (the loss may rise to that multiple of f(x0))");
    }
  }
}

}  // namespace stragglersim::experiments

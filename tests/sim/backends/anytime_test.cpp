// The anytime rule (Anytime minibatch, docs/model.md §4): counts, weights and times from the
// drawn delays, the estimate as the mean gradient of the rows finished, the limit of a window
// past every delay, unbiasedness under exchangeable workers, thread counts, and the config.

#include <boost/random/normal_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>

#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "models/worker_pool.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"
#include "tests/experiments/config/plan_support.h"

namespace stragglersim::sim {
namespace {

constexpr int kAnytimeWorkers = 6;
constexpr std::uint64_t kSeed = 11;

std::unique_ptr<DelayModel> exponential_delays() {
  return std::make_unique<ShiftedExponentialDelay>(
      kAnytimeWorkers,
      1.0,
      ShiftedExponentialDelay::Options{.shift = 0.5, .rate = 1.0, .tail = TailScaling::kLoad});
}

/// A least-squares objective over `rows` random rows of 3 features, kAnytimeWorkers partitions.
std::shared_ptr<const models::Objective> random_objective(Eigen::Index rows) {
  RandomEngine rng(5);
  boost::random::normal_distribution<double> normal;
  Eigen::MatrixXd a(rows, 3);
  Eigen::VectorXd b(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < 3; ++j) {
      a(i, j) = normal(rng);
    }
    b(i) = normal(rng);
  }
  auto data = std::make_shared<models::Dataset>(std::move(a), std::move(b));
  return std::make_shared<models::Objective>(
      data, models::make_least_squares_loss(), 0.0, kAnytimeWorkers);
}

SimulatedBackend anytime_backend(const std::shared_ptr<const models::Objective>& objective,
                                 double window,
                                 models::WorkerPool* pool = nullptr) {
  const auto code = std::make_shared<codes::UncodedCode>(kAnytimeWorkers);
  auto rule = std::make_shared<AnytimeStopping>(AnytimeStopping::Options{kAnytimeWorkers, window});
  auto cluster = std::make_unique<SimulatedCluster>(
      exponential_delays(), rule, StragglerPolicy::kCancel, kSeed);
  return {objective,
          Scheme{code, rule, DecoderKind::kOptimal},
          std::move(cluster),
          pool,
          std::nullopt,
          kSeed};
}

}  // namespace

TEST_CASE("anytime: counts, weights and times follow the drawn delays", "[sim][anytime]") {
  // 61 rows in 6 partitions (sizes 11, 10, …): a twin cluster waiting for every worker draws
  // the same delays (the rule does not touch the delay stream).
  const auto objective = random_objective(61);
  const double window = 1.4;
  SimulatedBackend backend = anytime_backend(objective, window);
  SimulatedCluster twin(exponential_delays(),
                        std::make_shared<AllStopping>(kAnytimeWorkers),
                        StragglerPolicy::kCancel,
                        kSeed);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(3, 0.3);
  int partial = 0;
  for (std::uint64_t t = 1; t <= 200; ++t) {
    const BackendIteration it = backend.iterate(t, x, nullptr);
    const std::vector<double>& delays = twin.next_iteration().delays;
    std::vector<Eigen::Index> done(kAnytimeWorkers);
    std::int64_t total = 0;
    double longest = 0.0;
    for (int i = 0; i < kAnytimeWorkers; ++i) {
      const auto rows = models::partition_rows(61, kAnytimeWorkers, i).size();
      const double x_i = delays[static_cast<std::size_t>(i)];
      done[static_cast<std::size_t>(i)] =
          x_i <= window
              ? rows
              : static_cast<Eigen::Index>(std::floor(static_cast<double>(rows) * (window / x_i)));
      total += done[static_cast<std::size_t>(i)];
      longest = std::max(longest, std::min(window, x_i));
      partial += done[static_cast<std::size_t>(i)] < rows ? 1 : 0;
    }
    REQUIRE(it.rows_used == total);
    REQUIRE(it.iteration_time == longest);
    REQUIRE(it.heard.size() == static_cast<std::size_t>(kAnytimeWorkers));
    for (int i = 0; i < kAnytimeWorkers; ++i) {
      const auto rows = static_cast<double>(models::partition_rows(61, kAnytimeWorkers, i).size());
      const double expected = total == 0 ? 0.0
                                         : static_cast<double>(done[static_cast<std::size_t>(i)]) *
                                               61.0 / (rows * static_cast<double>(total));
      REQUIRE(it.decoding.weights(i) == Approx(expected).epsilon(1e-15));
    }
  }
  // Both branches ran: P(X > 1.4) = e^{-0.9} ≈ 0.41 per worker.
  CHECK(partial > 300);
  CHECK(partial < 200 * kAnytimeWorkers);
}

TEST_CASE("anytime: the estimate is the mean gradient of the rows finished", "[sim][anytime]") {
  // Every row of partition i is (a_i, b_i): any sample of it has the partition's row gradient,
  // so ĝ = (1/Σc) Σ_i c_i (a_iᵀx − b_i) a_i whichever rows were drawn.
  const Eigen::Index rows = 10 * kAnytimeWorkers;
  Eigen::MatrixXd a(rows, 2);
  Eigen::VectorXd b(rows);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const auto i = static_cast<double>(r / 10);
    a.row(r) << 1.0 + i, 2.0 - 0.5 * i;
    b(r) = 0.25 * i - 1.0;
  }
  auto data = std::make_shared<models::Dataset>(a, b);
  const auto objective = std::make_shared<models::Objective>(
      data, models::make_least_squares_loss(), 0.0, kAnytimeWorkers);
  SimulatedBackend backend = anytime_backend(objective, 1.2);
  const Eigen::VectorXd x = Eigen::Vector2d(0.7, -0.2);
  for (std::uint64_t t = 1; t <= 50; ++t) {
    const BackendIteration it = backend.iterate(t, x, nullptr);
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(2);
    double total = 0.0;
    for (int i = 0; i < kAnytimeWorkers; ++i) {
      // c_i from the weight: w_i = c_i·m/(|P_i|·Σc) with |P_i| = 10 and m = 60.
      const double c = it.decoding.weights(i) * 10.0 * static_cast<double>(*it.rows_used) / 60.0;
      REQUIRE(c == Approx(std::round(c)).margin(1e-9));
      const Eigen::VectorXd row = a.row(10 * i).transpose();
      expected += std::round(c) * (row.dot(x) - b(10 * i)) * row;
      total += std::round(c);
    }
    REQUIRE(total == static_cast<double>(*it.rows_used));
    if (total > 0.0) {
      expected /= total;
    }
    REQUIRE((it.estimate - expected).norm() <= 1e-13 * (1.0 + expected.norm()));
  }
}

TEST_CASE("anytime: a window past every delay is uncoded all to the bit", "[sim][anytime]") {
  const auto objective = random_objective(120);
  const auto code = std::make_shared<codes::UncodedCode>(kAnytimeWorkers);
  auto train_with = [&](std::shared_ptr<const StoppingRule> rule) {
    auto cluster = std::make_unique<SimulatedCluster>(
        exponential_delays(), rule, StragglerPolicy::kCancel, kSeed);
    SimulatedBackend backend(objective,
                             Scheme{code, std::move(rule), DecoderKind::kOptimal},
                             std::move(cluster),
                             nullptr,
                             std::nullopt,
                             kSeed);
    GradientDescent gd(Eigen::VectorXd::Zero(3), 0.3);
    std::vector<TraceRow> rows;
    train(*objective, nullptr, gd, backend, TrainingOptions{30}, [&](const TraceRow& row) {
      rows.push_back(row);
    });
    return rows;
  };
  const auto anytime = train_with(
      std::make_shared<AnytimeStopping>(AnytimeStopping::Options{kAnytimeWorkers, 1e300}));
  const auto all = train_with(std::make_shared<AllStopping>(kAnytimeWorkers));
  REQUIRE(anytime.size() == all.size());
  for (std::size_t t = 0; t < all.size(); ++t) {
    REQUIRE(anytime[t].loss == all[t].loss);
    REQUIRE(anytime[t].grad_norm == all[t].grad_norm);
    REQUIRE(anytime[t].time == all[t].time);
    REQUIRE(anytime[t].decoding_error == 0.0);
    if (t > 0) {
      REQUIRE(anytime[t].rows_used == 120);
    }
  }
}

TEST_CASE("anytime: the estimate is unbiased for exchangeable workers", "[sim][anytime]") {
  // Equal partitions and i.i.d. delays: E[c_i/Σc] = 1/n, so E[ĝ] = ∇f(x). The mean over 4 000
  // iterations is within 4 standard errors of it, coordinate by coordinate.
  const auto objective = random_objective(120);
  SimulatedBackend backend = anytime_backend(objective, 0.9);
  const Eigen::VectorXd x = Eigen::Vector3d(0.4, -0.3, 0.2);
  const Eigen::VectorXd truth = objective->gradient(x);
  constexpr int kDraws = 4000;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(3);
  Eigen::VectorXd squares = Eigen::VectorXd::Zero(3);
  for (std::uint64_t t = 1; t <= kDraws; ++t) {
    const BackendIteration it = backend.iterate(t, x, nullptr);
    REQUIRE(*it.rows_used > 0);
    sum += it.estimate;
    squares += it.estimate.cwiseAbs2();
  }
  const Eigen::VectorXd mean = sum / kDraws;
  const Eigen::VectorXd variance = (squares / kDraws - mean.cwiseAbs2()) * kDraws / (kDraws - 1);
  for (Eigen::Index j = 0; j < 3; ++j) {
    const double se = std::sqrt(variance(j) / kDraws);
    INFO("coordinate " << j << ": mean " << mean(j) << ", truth " << truth(j) << ", se " << se);
    CHECK(se > 0.0);
    CHECK(std::abs(mean(j) - truth(j)) < 4.0 * se);
  }
}

TEST_CASE("anytime: the same bytes for every thread count", "[sim][anytime]") {
  const auto objective = random_objective(600);
  SimulatedBackend serial = anytime_backend(objective, 1.0);
  models::WorkerPool pool(3);
  SimulatedBackend threaded = anytime_backend(objective, 1.0, &pool);
  const Eigen::VectorXd x = Eigen::Vector3d(0.1, 0.2, -0.1);
  for (std::uint64_t t = 1; t <= 40; ++t) {
    const BackendIteration a = serial.iterate(t, x, nullptr);
    const BackendIteration b = threaded.iterate(t, x, nullptr);
    REQUIRE(a.estimate == b.estimate);
    REQUIRE(a.rows_used == b.rows_used);
  }
}

TEST_CASE("anytime: the config plans it or refuses it at its pointer", "[sim][anytime]") {
  const auto dir = std::filesystem::temp_directory_path() / "stragglersim_anytime_test";
  std::filesystem::create_directories(dir);
  auto anytime_config = [] {
    auto c = testing::small_logistic_config("anytime");
    c["code"] = {{"kind", "uncoded"}};
    c["stopping"] = {{"rule", "anytime"}, {"window", 1.5}};
    return c;
  };
  const experiments::RunPlan plan = experiments::plan_run(anytime_config(), "cfg.json", dir);
  CHECK(plan.scheme.rule->compute_window() == 1.5);
  CHECK(plan.scheme.rule->name() == "anytime");

  struct Case {
    const char* pointer;
    nlohmann::json value;
    std::string message;
  };
  const std::string needs = "cfg.json:/stopping/rule: the anytime rule needs ";
  const std::vector<Case> cases = {
      {"/stopping/window",
       0,
       "cfg.json:/stopping/window: out of range; got 0; expected a number > 0"},
      {"/code",
       {{"kind", "frc"}, {"d", 2}},
       needs + "the uncoded code; got \"frc\"; expected code kind uncoded"},
      {"/optimizer/batch",
       5,
       needs + "no optimizer.batch (the window sets each worker's sample); got 5; expected no "
               "batch key"},
      {"/stragglers",
       "finish",
       needs + "no straggler policy (every worker sends); got \"finish\"; expected stragglers "
               "absent or cancel"},
      {"/rescale",
       "empirical",
       needs + "no rescale (it weights by counts itself); got \"empirical\"; expected rescale "
               "absent or none"},
      {"/backend",
       {{"kind", "threads"}},
       needs + "the simulated clock; got \"threads\"; expected a backend on the simulated clock"},
  };
  for (const auto& c : cases) {
    auto config = anytime_config();
    config[nlohmann::json::json_pointer(c.pointer)] = c.value;
    INFO(c.pointer);
    CHECK(testing::plan_error(config, dir) == c.message);
  }
  // A delay-only run has no rows to count.
  auto delay_only = anytime_config();
  delay_only["data"] = nullptr;
  delay_only.erase("loss");
  delay_only["optimizer"] = {{"iterations", 5}};
  CHECK(testing::plan_error(delay_only, dir) ==
        needs +
            "data (its workers' rows are what it counts); got \"\\\"data\\\": null\"; "
            "expected a data object");
}

}  // namespace stragglersim::sim

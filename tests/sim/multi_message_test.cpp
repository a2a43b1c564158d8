#include "sim/multi_message.h"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "models/loss_model.h"
#include "models/objective.h"
#include "models/synthetic_data.h"
#include "sim/backends/simulated_backend.h"
#include "sim/delays/delay_model.h"
#include "sim/simulated_cluster.h"
#include "tests/sim/table_delay.h"

namespace stragglersim::sim {
namespace {

std::shared_ptr<MultiMessageStopping> multi_message(std::shared_ptr<const codes::GradientCode> code,
                                                    std::optional<double> after = std::nullopt) {
  return std::make_shared<MultiMessageStopping>(
      MultiMessageStopping::Options{.code = std::move(code), .after = after});
}

}  // namespace

TEST_CASE("sim: multi-message orders spread each group's starts over its block",
          "[sim][multi_message]") {
  using Orders = std::vector<std::vector<int>>;
  struct Case {
    const char* name;
    std::shared_ptr<const codes::GradientCode> code;
    Orders expected;
  };
  const std::vector<Case> cases = {
      {"uncoded n=3", std::make_shared<codes::UncodedCode>(3), {{0}, {1}, {2}}},
      {"frc n=4 d=2",
       std::make_shared<codes::FractionalRepetitionCode>(4, 2),
       {{0, 1}, {1, 0}, {2, 3}, {3, 2}}},
      {"frc n=3 d=3",
       std::make_shared<codes::FractionalRepetitionCode>(3, 3),
       {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}},
      {"cyclic repetition n=4 s=1",
       std::make_shared<codes::CyclicRepetitionCode>(
           codes::CyclicRepetitionCode::Options{.workers = 4, .s = 1}),
       {{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
      // Equal factors: the FRC of k = 2n partitions, blocks of four, starts 0 and 2.
      {"proportional n=4 k=8 d=2",
       std::make_shared<codes::ProportionalCode>(codes::ProportionalCode::Options{
           .workers = 4, .partitions = 8, .d = 2, .factors = {1.0, 1.0, 1.0, 1.0}}),
       {{0, 1, 2, 3}, {2, 3, 0, 1}, {4, 5, 6, 7}, {6, 7, 4, 5}}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(partition_orders(*c.code) == c.expected);
  }
}

TEST_CASE("sim: a multi-message iteration stops when every partition is in",
          "[sim][multi_message]") {
  // FRC n=4 d=2: worker 0 sends 0 at T0/2 then 1 at T0; worker 1 sends 1 at T1/2 then 0 at T1.
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(4, 2);
  struct Case {
    const char* name;
    std::vector<double> delays;
    std::optional<double> after;
    double stop;
    std::vector<int> received;
    std::vector<int> heard;
  };
  const std::vector<Case> cases = {
      // Group 0: partition 0 at min(2/2, 3) = 1, partition 1 at min(2, 3/2) = 1.5. Group 1:
      // partition 2 at min(8/2, 1) = 1 (worker 3's second), 3 at 0.5.
      {"partial work counts", {2.0, 3.0, 8.0, 1.0}, std::nullopt, 1.5, {3, 0, 2, 1}, {3, 0, 1}},
      {"a deadline before the last partition", {2.0, 3.0, 8.0, 1.0}, 1.2, 1.2, {3, 0, 2}, {3, 0}},
      {"a straggler whose partner finishes everything",
       {10.0, 1.0, 1.0, 1.0},
       std::nullopt,
       1.0,
       {1, 2, 3, 0},
       {1, 2, 3}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    SimulatedCluster cluster(
        std::make_unique<testing::TableDelay>(std::vector<std::vector<double>>{c.delays}),
        multi_message(code, c.after),
        StragglerPolicy::kCancel,
        1);
    const IterationTiming& it = cluster.next_iteration();
    CHECK(it.iteration_time == c.stop);
    CHECK(it.received == c.received);
    CHECK(it.heard == c.heard);
    CHECK(it.arrivals == c.delays);  // each worker's last message
  }
}

TEST_CASE("sim: multi-message without a deadline decodes the uncoded gradient to the bit",
          "[sim][multi_message]") {
  models::LinearRegressionOptions data;
  data.rows = 240;
  data.features = 7;
  constexpr int n = 6;
  const auto objective = std::make_shared<const models::Objective>(
      std::make_shared<const models::Dataset>(models::make_linear_regression(data)),
      models::make_least_squares_loss(),
      0.0,
      n);
  const auto uncoded = std::make_shared<codes::UncodedCode>(n);
  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(n, 3);
  const auto delays = [] {
    return std::make_unique<ShiftedExponentialDelay>(
        int{n}, 3.0, ShiftedExponentialDelay::Options{});
  };
  SimulatedBackend reference(
      objective,
      {uncoded, std::make_shared<AllStopping>(n)},
      std::make_unique<SimulatedCluster>(
          delays(), std::make_shared<AllStopping>(n), StragglerPolicy::kCancel, 2));
  SimulatedBackend multi(objective,
                         {frc, multi_message(frc)},
                         std::make_unique<SimulatedCluster>(
                             delays(), multi_message(frc), StragglerPolicy::kCancel, 2));
  SimulatedBackend deadline(objective,
                            {frc, multi_message(frc, 3.2)},
                            std::make_unique<SimulatedCluster>(
                                delays(), multi_message(frc, 3.2), StragglerPolicy::kCancel, 2));
  Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(7, -1.0, 1.0);
  int partial = 0;
  for (std::uint64_t t = 1; t <= 50; ++t) {
    const BackendIteration a = reference.iterate(t, x, nullptr);
    const BackendIteration b = multi.iterate(t, x, nullptr);
    REQUIRE(b.decoding.exact);
    REQUIRE(b.decoding.partitions_covered == n);
    CHECK((a.estimate.array() == b.estimate.array()).all());
    // With a deadline: Σ of the partitions received, each partition's gradient once.
    const BackendIteration c = deadline.iterate(t, x, nullptr);
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(7);
    Eigen::VectorXd g(7);
    for (int j = 0; j < n; ++j) {
      if (c.decoding.alpha(j) != 0.0) {
        REQUIRE(c.decoding.alpha(j) == 1.0);
        objective->partition_gradient(j, x, g);
        expected += g;
      }
    }
    partial += c.decoding.exact ? 0 : 1;
    CHECK((c.estimate - expected).norm() <= 1e-12 * (1.0 + expected.norm()));
  }
  CHECK(partial > 0);  // the deadline did cut some iterations
}

TEST_CASE("sim: multi-message options are validated", "[sim][multi_message]") {
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(4, 2);
  CHECK(MultiMessageStopping::Options{.code = nullptr, .after = std::nullopt}.validate()->field ==
        "code");
  CHECK(MultiMessageStopping::Options{.code = code, .after = 0.0}.validate()->field == "after");
  CHECK(MultiMessageStopping::Options{.code = code, .after = -1.0}.validate()->field == "after");
  CHECK_FALSE(MultiMessageStopping::Options{.code = code, .after = 0.5}.validate());
  CHECK_FALSE(MultiMessageStopping::Options{.code = code, .after = std::nullopt}.validate());
}

}  // namespace stragglersim::sim

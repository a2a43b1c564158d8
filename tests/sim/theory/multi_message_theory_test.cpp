#include "sim/theory/multi_message_theory.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_code.h"
#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "sim/delays/delay_model.h"
#include "sim/delays/trace_delay.h"
#include "sim/multi_message.h"
#include "sim/simulated_cluster.h"
#include "tests/sim/table_delay.h"

namespace stragglersim::sim {

TEST_CASE("theory: multi-message coverage of a group of two is the hand-derived sum",
          "[theory][multi_message]") {
  // FRC n=2 d=2 (orders {0,1}, {1,0}), T ~ Exp(1) (shift 0). With a = F(t), b = F(2t): a
  // worker has N = 2 messages in with probability a, N = 1 with b − a, N = 0 with 1 − b, and
  // the group is uncovered exactly for (N0, N1) ∈ {(0,0), (0,1), (1,0)}:
  //   P(Z ≤ t) = 1 − (1 − b)² − 2(1 − b)(b − a).
  const codes::FractionalRepetitionCode code(2, 2);
  const auto orders = partition_orders(code);
  const ShiftedExponentialDelay delay(std::vector<double>{1.0, 1.0},
                                      {.shift = 0.0, .rate = 1.0, .tail = TailScaling::kNone});
  for (const double t : {0.05, 0.3, 0.7, 1.0, 2.5, 6.0}) {
    INFO("t = " << t);
    const double a = -std::expm1(-t);
    const double b = -std::expm1(-2.0 * t);
    const double uncovered = (1.0 - b) * (1.0 - b) + 2.0 * (1.0 - b) * (b - a);
    const StopProbability p = multi_message_stop_probability(orders, delay, 0.0, t);
    CHECK(p.stopped == Approx(1.0 - uncovered).epsilon(1e-13));
    CHECK(p.waiting == Approx(uncovered).epsilon(1e-12));
    // A latency c moves the whole distribution by c.
    const StopProbability shifted = multi_message_stop_probability(orders, delay, 0.4, t + 0.4);
    CHECK(shifted.stopped == Approx(p.stopped).epsilon(1e-12));
  }
  CHECK(multi_message_stop_probability(orders, delay, 0.4, 0.3).stopped == 0.0);
}

TEST_CASE("theory: multi-message uncoded is the maximum of the workers",
          "[theory][multi_message]") {
  // One partition per worker: Z = max_i T_i, E[Z] = shift + H_n / λ for i.i.d. shifted
  // exponentials; with a deadline τ, E[min(τ, Z)] = ∫_0^τ P(Z > t) dt in closed form for n = 1.
  const codes::UncodedCode code(5);
  const auto orders = partition_orders(code);
  const ShiftedExponentialDelay delay(std::vector<double>(5, 1.0),
                                      {.shift = 0.5, .rate = 2.0, .tail = TailScaling::kNone});
  const IterationTimePrediction p = predict_multi_message_time(orders, delay, {});
  CHECK(p.mean == Approx(0.5 + harmonic_number(5) / 2.0).epsilon(1e-8));
  CHECK(p.sd == Approx(std::sqrt(exponential_order_statistic_variance(5, 5)) / 2.0).epsilon(1e-7));
  CHECK(p.method == "numerical");
  CHECK(std::isnan(p.q));

  const codes::UncodedCode one(1);
  const ShiftedExponentialDelay single(std::vector<double>{1.0},
                                       {.shift = 0.5, .rate = 2.0, .tail = TailScaling::kNone});
  // E[min(τ, Z)] = 0.5 + (1 − e^{−2(τ − 0.5)})/2.
  const double tau = 1.25;
  MultiMessageTheoryOptions options;
  options.deadline = tau;
  const auto capped = predict_multi_message_time(partition_orders(one), single, options);
  CHECK(capped.mean == Approx(0.5 + (-std::expm1(-2.0 * (tau - 0.5))) / 2.0).epsilon(1e-9));
}

TEST_CASE("theory: multi-message under discrete marginals is the sum over every draw",
          "[theory][multi_message]") {
  // Four workers drawing independently from pools of 2, 3, 4 and 2 times (bootstrap): E[Z] and
  // sd(Z) of FRC d = 2 against all 48 draws, each weighted by the product of its atoms'
  // probabilities (read from the model's CDF), Z from the row formula.
  DelayTrace pools;
  pools.workers = 4;
  pools.per_worker = {{1.0, 2.0}, {0.5, 1.5, 2.5}, {2.25, 0.75, 1.75, 3.5}, {1.25, 2.75}};
  const TraceDelay delay(
      std::vector<double>(4, 2.0), pools, {.mode = TraceDelay::Mode::kBootstrap});
  const codes::FractionalRepetitionCode code(4, 2);
  const auto orders = partition_orders(code);
  for (const std::optional<double> after : {std::optional<double>(), std::optional<double>(2.6)}) {
    for (const double shift : {0.0, 0.3}) {
      double mean = 0.0;
      double square = 0.0;
      std::vector<double> row(4);
      std::function<void(std::size_t, double)> visit = [&](std::size_t i, double p) {
        if (i == 4) {
          const double z = multi_message_row_stop(orders, row, shift, after);
          mean += p * z;
          square += p * z * z;
          return;
        }
        const auto atoms = delay.atoms(static_cast<int>(i));
        double below = 0.0;
        for (const double a : atoms) {
          const double at = delay.cdf(static_cast<int>(i), a);
          row[i] = a;
          visit(i + 1, p * (at - below));
          below = at;
        }
      };
      visit(0, 1.0);
      MultiMessageTheoryOptions options;
      options.shift = shift;
      options.deadline = after;
      const IterationTimePrediction prediction = predict_multi_message_time(orders, delay, options);
      INFO("after " << after.value_or(-1.0) << ", shift " << shift);
      CHECK(prediction.mean == Approx(mean).epsilon(1e-12));
      CHECK(prediction.sd == Approx(std::sqrt(square - mean * mean)).epsilon(1e-9));
    }
  }
}

TEST_CASE("theory: multi-message over trace rows averages each row's stop",
          "[theory][multi_message]") {
  const codes::FractionalRepetitionCode code(4, 2);
  const auto orders = partition_orders(code);
  // Rows: (2, 3, 8, 1) stops at 1.5 (worked in multi_message_test.cpp); (1, 1, 1, 1) at 0.5+…:
  // every worker's first message at 0.5 covers both partitions of its group.
  CHECK(multi_message_row_stop(orders, std::vector<double>{2, 3, 8, 1}, 0.0, std::nullopt) == 1.5);
  CHECK(multi_message_row_stop(orders, std::vector<double>{1, 1, 1, 1}, 0.0, std::nullopt) == 0.5);
  CHECK(multi_message_row_stop(orders, std::vector<double>{1, 1, 1, 1}, 0.5, 0.75) == 0.75);
}

TEST_CASE("sim: multi-message stops agree with the row formula under every policy",
          "[sim][multi_message]") {
  // 300 random iterations of a cyclic code and of a proportional code: the engine's stop equals
  // min(after, max_j min arrival) of the row, with a latency; drain counts the last message.
  const std::vector<std::shared_ptr<const codes::GradientCode>> codes = {
      std::make_shared<codes::CyclicRepetitionCode>(
          codes::CyclicRepetitionCode::Options{.workers = 6, .s = 2}),
      std::make_shared<codes::ProportionalCode>(codes::ProportionalCode::Options{
          .workers = 6, .partitions = 9, .d = 2, .factors = {1, 2, 1, 3, 1, 1}})};
  RandomEngine rng(7);
  for (const auto& code : codes) {
    for (const std::optional<double> after :
         {std::optional<double>(), std::optional<double>(2.5)}) {
      std::vector<std::vector<double>> table(300, std::vector<double>(6));
      for (auto& row : table) {
        for (double& x : row) {
          x = 0.5 + 3.0 * std::generate_canonical<double, 53>(rng);
        }
      }
      NetworkOptions network;
      network.latency = 0.25;
      SimulatedCluster drain(std::make_unique<testing::TableDelay>(table),
                             std::make_shared<MultiMessageStopping>(
                                 MultiMessageStopping::Options{.code = code, .after = after}),
                             StragglerPolicy::kDrain,
                             1,
                             network);
      const auto orders = partition_orders(*code);
      for (const auto& row : table) {
        const IterationTiming& it = drain.next_iteration();
        REQUIRE(it.iteration_time == multi_message_row_stop(orders, row, 0.25, after));
        CHECK(it.wall_time == *std::max_element(row.begin(), row.end()) + 0.25);
      }
    }
  }
}

}  // namespace stragglersim::sim

// RealMaster, the master shared by the threaded and MPI backends, driven by a scripted transport
// that delivers every worker's message in the order of its drawn delay (the simulated arrival
// order under cancel and drain), one message per receive, after a stale message of the previous
// iteration. No real waiting is involved (except the timeout case), so everything is asserted
// exactly: heard sets and stop times equal a SimulatedCluster's with the same seed, the estimate
// equals Σ a_i y_i computed here, stale messages are dropped and counted, drain consumes every
// message, and an unsatisfied rule throws BackendTimeout with its exact message.

#include "sim/backends/real_master.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <numeric>
#include <thread>

#include "codes/fractional_repetition_code.h"
#include "codes/uncoded_code.h"
#include "sim/backends/collective_program.h"
#include "sim/delays/delay_model.h"

namespace stragglersim::sim {
namespace {

constexpr Eigen::Index kDimension = 3;

/// y_i(x) = (i + 1)·x + e_{i mod d}: distinct per worker and per query.
Eigen::VectorXd message_of(int worker, const Eigen::VectorXd& x) {
  Eigen::VectorXd y = static_cast<double>(worker + 1) * x;
  y(worker % kDimension) += 1.0;
  return y;
}

class ScriptedTransport final : public MasterTransport {
 public:
  Clock::time_point broadcast(std::uint64_t iteration,
                              const Eigen::VectorXd& x,
                              std::span<const double> delays) override {
    const Clock::time_point now = Clock::now();
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(delays.size()); ++i) {
      if (std::isfinite(delays[static_cast<std::size_t>(i)])) {
        order.push_back(i);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return delays[static_cast<std::size_t>(a)] < delays[static_cast<std::size_t>(b)];
    });
    left_over = pending_.size();
    pending_.clear();
    if (iteration > 1) {
      pending_.push_back(WorkerMessage{iteration - 1, 0, now, message_of(0, x)});
    }
    for (const int i : order) {
      pending_.push_back(WorkerMessage{iteration, i, now, message_of(i, x)});
    }
    return now;
  }
  void receive(Clock::time_point wake, std::vector<WorkerMessage>& out) override {
    if (pending_.empty()) {
      std::this_thread::sleep_until(wake);
      return;
    }
    out.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  void announce(std::uint64_t /*iteration*/, const Eigen::VectorXd& /*weights*/) override {
    FAIL("the parameter server announces nothing");
  }
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }
  std::size_t left_over = 0;  ///< messages not taken before the latest broadcast

 private:
  std::deque<WorkerMessage> pending_;
};

Scheme frc_scheme(int n, int d, int r) {
  Scheme s;
  s.code = std::make_shared<codes::FractionalRepetitionCode>(n, d);
  s.rule = std::make_shared<FirstRStopping>(r);
  s.decoder = DecoderKind::kOptimal;
  return s;
}

std::unique_ptr<DelayModel> delays_for(const Scheme& s) {
  return std::make_unique<ShiftedExponentialDelay>(
      s.code->loads(),
      ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad});
}

/// The collective's side of a scripted run: workers notice in the order of their drawn delays
/// (no payload); on the announcement every worker's v_i = a_i·y_i is reduced by the schedule's
/// reference semantics (collectives::execute) and every worker but `lost` reports, with
/// compute_seconds = its delay and collective_seconds = 0.5 + its index (scripted values the
/// record must carry), worker 0 with column 0.
class ScriptedCollective final : public MasterTransport {
 public:
  ScriptedCollective(std::shared_ptr<const collectives::Schedule> schedule, int lost = -1)
      : schedule_(std::move(schedule)), lost_(lost) {}
  Clock::time_point broadcast(std::uint64_t iteration,
                              const Eigen::VectorXd& x,
                              std::span<const double> delays) override {
    x_ = x;
    delays_.assign(delays.begin(), delays.end());
    std::vector<int> order(delays.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return delays[static_cast<std::size_t>(a)] < delays[static_cast<std::size_t>(b)];
    });
    pending_.clear();
    const Clock::time_point now = Clock::now();
    for (const int i : order) {
      WorkerMessage m;
      m.iteration = iteration;
      m.worker = i;
      m.delivered = now;
      m.kind = MessageKind::kNotice;
      pending_.push_back(std::move(m));
    }
    return now;
  }
  void receive(Clock::time_point wake, std::vector<WorkerMessage>& out) override {
    if (pending_.empty()) {
      std::this_thread::sleep_until(wake);
      return;
    }
    out.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  void announce(std::uint64_t iteration, const Eigen::VectorXd& weights) override {
    const int n = schedule_->ranks;
    Eigen::MatrixXd buffers(kDimension, n);
    for (int i = 0; i < n; ++i) {
      buffers.col(i) = contribution(weights(i), message_of(i, x_), kDimension);
    }
    collectives::execute(*schedule_, buffers);
    reduced = buffers.col(0);
    pending_.clear();  // the notices not taken before the stop are dropped here
    for (int i = n - 1; i >= 0; --i) {
      if (i == lost_) {
        continue;
      }
      WorkerMessage m;
      m.iteration = iteration;
      m.worker = i;
      m.delivered = Clock::now();
      m.kind = MessageKind::kDone;
      m.compute_seconds = delays_[static_cast<std::size_t>(i)];
      m.collective_seconds = 0.5 + static_cast<double>(i);
      if (i == 0) {
        m.y = reduced;
      }
      pending_.push_back(std::move(m));
    }
  }
  Eigen::VectorXd reduced;  ///< the latest announcement's reduced vector

 private:
  std::shared_ptr<const collectives::Schedule> schedule_;
  int lost_;
  Eigen::VectorXd x_;
  std::vector<double> delays_;
  std::deque<WorkerMessage> pending_;
};

CollectiveAggregation scripted_aggregation(collectives::CollectiveKind kind, int n) {
  CollectiveAggregation c;
  c.options.kind = kind;
  c.options.link.latency = 0.25;
  c.schedule = std::make_shared<const collectives::Schedule>(
      collectives::build_schedule(c.options, n, kDimension));
  c.bytes_per_element = 8.0;
  return c;
}

}  // namespace

TEST_CASE("real master: heard sets times and estimates equal the simulated cluster's",
          "[sim][real_master]") {
  const auto policy = GENERATE(StragglerPolicy::kCancel, StragglerPolicy::kDrain);
  const Scheme scheme = frc_scheme(8, 2, 4);
  ThreadedOptions options;
  options.policy = policy;
  RealMaster master(scheme, kDimension, delays_for(scheme), 17, options);
  SimulatedCluster cluster(delays_for(scheme), scheme.rule, policy, 17);
  ScriptedTransport transport;
  Eigen::VectorXd x(kDimension);
  for (std::uint64_t t = 1; t <= 40; ++t) {
    x << 0.5 * static_cast<double>(t), -1.0, 2.0 / static_cast<double>(t);
    const BackendIteration it = master.iterate(t, x, transport);
    const IterationTiming& timing = cluster.next_iteration();
    const ThreadedIterationRecord& record = master.records().back();
    CHECK(it.heard == timing.heard);
    CHECK(record.same_set);
    CHECK(it.iteration_time == timing.iteration_time);
    CHECK(it.wall_time == timing.wall_time);
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(kDimension);
    const codes::Decoding decoding = scheme.decode(timing.heard, t);
    for (const int i : timing.heard) {
      expected += decoding.weights(i) * message_of(i, x);
    }
    CHECK((it.estimate - expected).norm() <= 1e-12 * expected.norm());
    // The stale message of iteration t - 1 comes first: dropped, never heard. Under drain the
    // master took every message of t - 1 before returning, under cancel the 4 unheard ones
    // were left behind.
    CHECK(record.late_dropped == (t > 1 ? 1 : 0));
    if (t > 1) {
      CHECK(transport.left_over == (policy == StragglerPolicy::kDrain ? 0U : 4U));
    }
    CHECK(record.real_stop_seconds <= record.real_seconds);
  }
}

TEST_CASE("real master: an unsatisfied rule throws the timeout with its exact message",
          "[sim][real_master]") {
  Scheme scheme;
  scheme.code = std::make_shared<codes::UncodedCode>(4);
  scheme.rule = std::make_shared<AllStopping>(4);
  ThreadedOptions options;
  options.timeout = 0.05;
  options.faults = {WorkerFault{2, FaultKind::kHang, 1}};
  RealMaster master(scheme, kDimension, delays_for(scheme), 3, options);
  ScriptedTransport transport;
  const Eigen::VectorXd x = Eigen::VectorXd::Ones(kDimension);
  CHECK_THROWS_WITH(master.iterate(1, x, transport),
                    "iteration 1: timeout: the all rule was not satisfied 0.05 s after the "
                    "broadcast; heard 3 of 4 workers; not heard: 2");
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {

TEST_CASE("real master: a collective hears the simulated sets and returns the reduced vector",
          "[sim][real_master][collectives]") {
  const auto kind =
      GENERATE(collectives::CollectiveKind::kRing, collectives::CollectiveKind::kTree);
  const int r = GENERATE(4, 8);  // first_r with r = 4, and all 8
  Scheme scheme = frc_scheme(8, 2, r);
  if (r == 8) {
    scheme.rule = std::make_shared<AllStopping>(8);
  }
  const CollectiveAggregation aggregation = scripted_aggregation(kind, 8);
  ThreadedOptions options;
  options.collective = aggregation;
  RealMaster master(scheme, kDimension, delays_for(scheme), 23, options);
  SimulatedCluster cluster(delays_for(scheme),
                           scheme.rule,
                           StragglerPolicy::kCancel,
                           23,
                           NetworkOptions{},
                           std::nullopt,
                           aggregation);
  ScriptedCollective transport(aggregation.schedule);
  Eigen::VectorXd x(kDimension);
  for (std::uint64_t t = 1; t <= 20; ++t) {
    x << 0.25 * static_cast<double>(t), 1.0, -3.0 / static_cast<double>(t);
    const BackendIteration it = master.iterate(t, x, transport);
    const IterationTiming& timing = cluster.next_iteration();
    const ThreadedIterationRecord& record = master.records().back();
    CHECK(it.heard == timing.heard);
    CHECK(record.same_set);
    CHECK(it.iteration_time == timing.iteration_time);
    // The estimate is worker 0's reduced vector, bit for bit, and the parameter server's
    // Σ a_i y_i up to the summation order.
    CHECK(it.estimate == transport.reduced);
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(kDimension);
    const codes::Decoding decoding = scheme.decode(timing.heard, t);
    for (const int i : timing.heard) {
      expected += decoding.weights(i) * message_of(i, x);
    }
    CHECK((it.estimate - expected).norm() <= 1e-12 * expected.norm());
    REQUIRE(record.compute_seconds.size() == 8);
    REQUIRE(record.collective_seconds.size() == 8);
    for (std::size_t i = 0; i < 8; ++i) {
      CHECK(record.compute_seconds[i] == timing.delays[i]);
      CHECK(record.collective_seconds[i] == 0.5 + static_cast<double>(i));
    }
    CHECK(record.real_rule_stop_seconds <= record.real_stop_seconds);
    CHECK(record.real_stop_seconds <= record.real_seconds);
  }
}

TEST_CASE("real master: a collective a worker never completes throws the timeout message",
          "[sim][real_master][collectives]") {
  Scheme scheme;
  scheme.code = std::make_shared<codes::UncodedCode>(4);
  scheme.rule = std::make_shared<AllStopping>(4);
  ThreadedOptions options;
  options.timeout = 0.05;
  options.collective = scripted_aggregation(collectives::CollectiveKind::kRing, 4);
  RealMaster master(scheme, kDimension, delays_for(scheme), 3, options);
  ScriptedCollective transport(options.collective->schedule, 2);
  CHECK_THROWS_WITH(master.iterate(1, Eigen::VectorXd::Ones(kDimension), transport),
                    "iteration 1: timeout: the ring collective was not complete 0.05 s after the "
                    "broadcast; 3 of 4 workers completed it; not completed: 2");
}

}  // namespace stragglersim::sim

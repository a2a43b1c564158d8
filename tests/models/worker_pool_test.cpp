#include "models/worker_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "models/objective.h"
#include "models/synthetic_data.h"

namespace stragglersim::models {

TEST_CASE("models: a worker pool runs every task exactly once, run after run",
          "[models][threads]") {
  for (const int threads : {1, 2, 3, 5}) {
    WorkerPool pool(threads);
    CHECK(pool.threads() == threads);
    for (const int count : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> calls(static_cast<std::size_t>(count));
      pool.run(count, [&](int i) { calls[static_cast<std::size_t>(i)].fetch_add(1); });
      for (const auto& c : calls) {
        CHECK(c.load() == 1);
      }
    }
  }
}

TEST_CASE("models: a worker pool's first run already uses every thread", "[models][threads]") {
  // Each of the two tasks waits until both have started: that happens only if the helper takes
  // one. A helper that missed the first run (it read the run's generation as already seen when
  // it first took the lock) left both to the caller, one after the other; the wait's bound
  // makes that a failure instead of a hang.
  for (int attempt = 0; attempt < 20; ++attempt) {
    WorkerPool pool(2);
    std::atomic<int> started{0};
    std::atomic<int> met{0};
    pool.run(2, [&](int /*i*/) {
      started.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (started.load() < 2 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      met.fetch_add(started.load() == 2 ? 1 : 0);
    });
    REQUIRE(met.load() == 2);
  }
}

TEST_CASE("models: a worker pool rethrows a task's exception after every task ended",
          "[models][threads]") {
  WorkerPool pool(3);
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH(pool.run(20,
                             [&](int i) {
                               ran.fetch_add(1);
                               if (i == 4) {
                                 throw std::runtime_error("task 4 failed");
                               }
                             }),
                    "task 4 failed");
  CHECK(ran.load() == 20);
  // The pool is usable again.
  std::atomic<int> again{0};
  pool.run(5, [&](int /*i*/) { again.fetch_add(1); });
  CHECK(again.load() == 5);
}

TEST_CASE("models: pooled objective passes give the serial bytes", "[models][threads]") {
  const auto data = std::make_shared<Dataset>(make_gaussian_mixture({503, 7, 1.5, 3}));
  const Objective f(data, make_logistic_loss(), 1e-3, 13);
  Eigen::VectorXd x(7);
  x << 0.3, -0.2, 0.1, 0.05, -0.4, 0.2, 0.0;
  Eigen::MatrixXd serial;
  const double serial_value = f.evaluate(x, &serial);
  const double serial_beta = f.smoothness();
  // The serial partition gradients are the ones partition_gradient computes one at a time.
  Eigen::VectorXd one(7);
  for (int j = 0; j < 13; ++j) {
    f.partition_gradient(j, x, one);
    CHECK(serial.col(j) == one);
  }
  for (const int threads : {2, 3}) {
    WorkerPool pool(threads);
    Eigen::MatrixXd pooled;
    CHECK(f.evaluate(x, &pooled, &pool) == serial_value);
    CHECK(pooled == serial);
    CHECK(f.smoothness(&pool) == serial_beta);
    Eigen::MatrixXd some;
    f.partition_gradients({12, 0, 5}, x, some, &pool);
    CHECK(some.col(0) == serial.col(12));
    CHECK(some.col(1) == serial.col(0));
    CHECK(some.col(2) == serial.col(5));
  }
}

}  // namespace stragglersim::models

#include "sim/theory/update_time_theory.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/asynchronous_cluster.h"
#include "sim/simulated_cluster.h"

namespace stragglersim::sim {
namespace {

struct Estimate {
  double mean = 0.0;
  double se = 0.0;
};

/// Mean time per update over `batches` batch means of 500 updates each.
Estimate simulate(UpdateDiscipline discipline, int n, int k, double shift, int batches) {
  const ShiftedExponentialDelay::Options o{.shift = shift, .rate = 2.0};
  std::unique_ptr<SimulatedCluster> sync;
  std::unique_ptr<AsynchronousCluster> async;
  if (discipline == UpdateDiscipline::kKSync) {
    sync = std::make_unique<SimulatedCluster>(std::make_unique<ShiftedExponentialDelay>(n, 1.0, o),
                                              std::make_shared<FirstRStopping>(k),
                                              StragglerPolicy::kCancel,
                                              77);
  } else {
    const UpdateMode mode = discipline == UpdateDiscipline::kKBatchSync ? UpdateMode::kKBatchSync
                            : discipline == UpdateDiscipline::kKAsync   ? UpdateMode::kKAsync
                                                                        : UpdateMode::kKBatchAsync;
    async = std::make_unique<AsynchronousCluster>(
        std::make_unique<ShiftedExponentialDelay>(n, 1.0, o), mode, k, 77);
  }
  double sum = 0.0;
  double sum_sq = 0.0;
  for (int b = 0; b < batches; ++b) {
    double batch = 0.0;
    for (int u = 0; u < 500; ++u) {
      batch += sync ? sync->next_iteration().iteration_time : async->next_update().update_time;
    }
    batch /= 500.0;
    sum += batch;
    sum_sq += batch * batch;
  }
  const double nb = batches;
  const double mean = sum / nb;
  return {mean, std::sqrt((sum_sq / nb - mean * mean) / (nb - 1.0))};
}

}  // namespace

TEST_CASE("theory: time per update of each discipline matches a seeded simulation to 4 s.e.",
          "[sim][theory][async]") {
  const int n = 6;
  for (const auto discipline : {UpdateDiscipline::kKSync,
                                UpdateDiscipline::kKBatchSync,
                                UpdateDiscipline::kKAsync,
                                UpdateDiscipline::kKBatchAsync}) {
    for (const int k : {1, 4}) {
      for (const double shift : {0.0, 0.4}) {
        const UpdateTimePrediction p = predict_update_time(discipline, n, k, shift, 2.0);
        const Estimate e = simulate(discipline, n, k, shift, 60);
        INFO(fmt::format("{} k={} shift={} theory {} sim {} se {}",
                         p.formula,
                         k,
                         shift,
                         p.expected,
                         e.mean,
                         e.se));
        if (p.upper_bound) {
          CHECK(e.mean <= p.expected + 4.0 * e.se);
          // K-async with a shift: strictly better than the bound unless K = n (then every update
          // waits for fresh workers); K = 1 with a shift is far from it.
          if (k == 1) {
            CHECK(e.mean < p.expected - 4.0 * e.se);
          }
        } else {
          CHECK(std::abs(e.mean - p.expected) <= 4.0 * e.se);
        }
      }
    }
  }
}

TEST_CASE("theory: K-batch-sync's integral reduces to K/(n mu) as the shift vanishes",
          "[sim][theory][async][heavy]") {
  // Δ = 10⁻⁹ runs the numerical path; the exponential answer K/(nμ) is exact at Δ = 0 and the
  // mean moves by at most about ⌈K/n⌉·Δ.
  for (const int k : {1, 3, 5}) {
    const double numeric =
        predict_update_time(UpdateDiscipline::kKBatchSync, 5, k, 1e-9, 1.5).expected;
    CHECK(numeric == Approx(k / (5.0 * 1.5)).epsilon(1e-7));
  }
  // A large shift: n workers each finish their first gradient at Δ + Exp(μ), so with K ≤ n and
  // Δ ≫ 1/μ the K-th push is the K-th of the first computations: E[X_{K:n}].
  const double big = predict_update_time(UpdateDiscipline::kKBatchSync, 5, 3, 50.0, 1.0).expected;
  CHECK(big == Approx(50.0 + 1.0 / 5 + 1.0 / 4 + 1.0 / 3).epsilon(1e-9));
}

TEST_CASE("theory: the closed forms of the update time", "[sim][theory][async]") {
  // n = 4, K = 2, μ = 2: H_4 − H_2 = 1/3 + 1/4.
  CHECK(predict_update_time(UpdateDiscipline::kKSync, 4, 2, 1.0, 2.0).expected ==
        Approx(1.0 + (1.0 / 3 + 1.0 / 4) / 2.0));
  CHECK(predict_update_time(UpdateDiscipline::kKAsync, 4, 2, 0.0, 2.0).expected ==
        Approx((1.0 / 3 + 1.0 / 4) / 2.0));
  CHECK_FALSE(predict_update_time(UpdateDiscipline::kKAsync, 4, 2, 0.0, 2.0).upper_bound);
  CHECK(predict_update_time(UpdateDiscipline::kKAsync, 4, 2, 0.5, 2.0).upper_bound);
  CHECK(predict_update_time(UpdateDiscipline::kKBatchAsync, 4, 2, 0.5, 2.0).expected ==
        Approx(2.0 * (0.5 + 0.5) / 4.0));
  CHECK(predict_update_time(UpdateDiscipline::kKBatchSync, 4, 2, 0.0, 2.0).expected ==
        Approx(2.0 / 8.0));
  const ShiftedExponentialDelay delays(4, 1.0, {.shift = 0.5, .rate = 2.0});
  CHECK(predict_update_time(UpdateDiscipline::kKSync, 2, delays)->expected ==
        Approx(predict_update_time(UpdateDiscipline::kKSync, 4, 2, 0.5, 2.0).expected));
}

}  // namespace stragglersim::sim

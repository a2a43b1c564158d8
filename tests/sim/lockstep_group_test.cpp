// The lock-step group: members on their own threads get exactly the bytes of their own
// evaluate and score_test_set; a pass waits for every member still running and serves them all;
// a member that leaves early stops being waited for.

#include "sim/lockstep_group.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "models/loss_model.h"
#include "models/synthetic_data.h"

namespace stragglersim::sim {
namespace {

/// Logistic regression on a Gaussian mixture of 203 rows × 9 features, 5 partitions.
std::shared_ptr<const models::Objective> lockstep_objective(std::uint64_t seed, Eigen::Index rows) {
  models::GaussianMixtureOptions options;
  options.rows = rows;
  options.features = 9;
  options.seed = seed;
  auto data = std::make_shared<models::Dataset>(models::make_gaussian_mixture(options));
  return std::make_shared<const models::Objective>(
      std::move(data),
      std::shared_ptr<const models::LossModel>(models::make_logistic_loss()),
      1e-3,
      5);
}

bool same_bytes(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

}  // namespace

TEST_CASE("lockstep group: each member gets its own evaluate's bytes and passes follow the longest",
          "[sim][lockstep][threads]") {
  const auto train = lockstep_objective(3, 203);
  const auto test = lockstep_objective(4, 61);
  for (const int threads : {1, 2}) {
    models::WorkerPool pool(threads);
    LockstepGroup group(train, test, &pool);
    // Member m runs 3 + 2m evaluations (and scores) at iterates of its own.
    constexpr int kMembers = 5;
    std::vector<std::vector<double>> losses(kMembers);
    std::vector<std::vector<Eigen::MatrixXd>> gradients(kMembers);
    std::vector<std::vector<models::TestScores>> scores(kMembers);
    const auto iterate = [&](int m, int t) {
      return Eigen::VectorXd::LinSpaced(train->dimension(), 0.1 * m - 0.3, 0.05 * t);
    };
    for (int m = 0; m < kMembers; ++m) {
      group.join();
    }
    std::vector<std::thread> members;
    for (int m = 0; m < kMembers; ++m) {
      members.emplace_back([&, m] {
        for (int t = 0; t < 3 + 2 * m; ++t) {
          const Eigen::VectorXd x = iterate(m, t);
          Eigen::MatrixXd g;
          losses[static_cast<std::size_t>(m)].push_back(group.evaluate(x, &g));
          gradients[static_cast<std::size_t>(m)].push_back(g);
          scores[static_cast<std::size_t>(m)].push_back(*group.score(x));
        }
        group.leave();
      });
    }
    for (auto& member : members) {
      member.join();
    }
    for (int m = 0; m < kMembers; ++m) {
      for (int t = 0; t < 3 + 2 * m; ++t) {
        const Eigen::VectorXd x = iterate(m, t);
        Eigen::MatrixXd g;
        const double loss = train->evaluate(x, &g);
        const auto s = models::score_test_set(*test, x);
        const auto mi = static_cast<std::size_t>(m);
        const auto ti = static_cast<std::size_t>(t);
        CHECK(std::memcmp(&losses[mi][ti], &loss, sizeof loss) == 0);
        CHECK(same_bytes(gradients[mi][ti], g));
        CHECK(std::memcmp(&scores[mi][ti].loss, &s->loss, sizeof(double)) == 0);
        CHECK(std::memcmp(&scores[mi][ti].metric, &s->metric, sizeof(double)) == 0);
        CHECK(scores[mi][ti].auc == s->auc);
      }
    }
    // 3 + 5 + 7 + 9 + 11 = 35 evaluations in as many passes as the longest member's 11.
    const auto statistics = group.statistics();
    CHECK(statistics.requests == 35);
    CHECK(statistics.passes == 11);
    CHECK(statistics.longest == 11);
    CHECK(statistics.largest == kMembers);
    CHECK(statistics.test_requests == 35);
    CHECK(statistics.test_passes == 11);
    // Dense rows: each pass reads the training and the test set once.
    CHECK(statistics.bytes == 11 * (train->data().stored_bytes() + test->data().stored_bytes()));
  }
}

TEST_CASE("lockstep group: a lone member's passes run at once", "[sim][lockstep]") {
  const auto train = lockstep_objective(3, 50);
  LockstepGroup group(train, nullptr, nullptr);
  group.join();
  Eigen::MatrixXd g;
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(train->dimension(), 0.2);
  Eigen::MatrixXd alone;
  CHECK(group.evaluate(x, &g) == train->evaluate(x, &alone));
  CHECK(same_bytes(g, alone));
  group.leave();
  CHECK(group.statistics().passes == 1);
}

}  // namespace stragglersim::sim

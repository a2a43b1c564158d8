#include "models/metrics.h"

#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "models/loss_model.h"
#include "models/objective.h"
#include "models/synthetic_data.h"
#include "models/worker_pool.h"

namespace {

using stragglersim::models::Dataset;
using stragglersim::models::DenseRows;
using stragglersim::models::Objective;
using stragglersim::models::roc_auc;

// The definition itself: over all (positive, negative) pairs, 1 for a win, ½ for a tie.
double pairwise_auc(const Eigen::VectorXd& s, const Eigen::VectorXd& b) {
  double credit = 0.0;
  double pairs = 0.0;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    if (b[i] <= 0.0) continue;
    for (Eigen::Index j = 0; j < s.size(); ++j) {
      if (b[j] > 0.0) continue;
      pairs += 1.0;
      credit += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
    }
  }
  return credit / pairs;
}

}  // namespace

TEST_CASE("models: auc equals the pairwise count with ties given half credit",
          "[models][metrics]") {
  // Hand-checked: positives {3, 2, 2}, negatives {2, 1}: pairs (3,2) (3,1) (2,1) (2,1) win,
  // (2,2) (2,2) tie: (4 + 2·½) / 6.
  CHECK(roc_auc(Eigen::Vector<double, 5>(3, 2, 2, 2, 1),
                Eigen::Vector<double, 5>(1, 1, 1, -1, -1)) == Approx(5.0 / 6.0).epsilon(1e-15));
  boost::random::mt19937_64 engine(11);
  for (const int levels : {2, 5, 1000}) {
    // Scores drawn from few levels force many ties; 1000 levels nearly none. They straddle zero,
    // which is written as +0.0 or −0.0 (equal, with different bits), and 3000 scores take the
    // sort past its insertion-sort cut-off.
    boost::random::uniform_int_distribution<int> score(0, levels - 1);
    boost::random::uniform_int_distribution<int> coin(0, 1);
    for (const Eigen::Index m : {2, 7, 300, 3000}) {
      Eigen::VectorXd s(m);
      Eigen::VectorXd b(m);
      for (Eigen::Index i = 0; i < m; ++i) {
        s[i] = (score(engine) - levels / 2) * 0.25;
        if (s[i] == 0.0 && coin(engine) == 1) {
          s[i] = -0.0;
        }
        b[i] = coin(engine) == 1 ? 1.0 : -1.0;
      }
      b[0] = 1.0;
      b[1] = -1.0;
      CAPTURE(levels, m);
      CHECK(roc_auc(s, b) == Approx(pairwise_auc(s, b)).epsilon(1e-14));
    }
  }
}

TEST_CASE(
    "models: auc is 1 for a perfect ranking and 0.5 for constant scores and NaN with one class",
    "[models][metrics]") {
  const Eigen::Vector4d b(-1, -1, 1, 1);
  CHECK(roc_auc(Eigen::Vector4d(0.1, 0.2, 0.3, 0.4), b) == 1.0);
  CHECK(roc_auc(Eigen::Vector4d(0.4, 0.3, 0.2, 0.1), b) == 0.0);
  CHECK(roc_auc(Eigen::Vector4d::Zero(), b) == 0.5);
  CHECK(std::isnan(roc_auc(Eigen::Vector4d(1, 2, 3, 4), Eigen::Vector4d::Ones())));
  // Labels 0/1 work as well as ±1 (positive means > 0).
  CHECK(roc_auc(Eigen::Vector4d(0.1, 0.2, 0.3, 0.4), Eigen::Vector4d(0, 0, 1, 1)) == 1.0);
}

TEST_CASE("models: test auc is reported for logistic and not for least squares",
          "[models][metrics]") {
  DenseRows a(4, 2);
  a << 1, 0, 0, 1, 1, 1, -1, 0;
  auto data = std::make_shared<Dataset>(Dataset{a, Eigen::Vector4d(1, -1, 1, -1)});
  const Eigen::Vector2d x(1.0, -0.5);
  const Objective logistic(data, stragglersim::models::make_logistic_loss(), 0.0, 1);
  const Objective squares(data, stragglersim::models::make_least_squares_loss(), 0.0, 1);
  // Margins (1, −0.5, 0.5, −1): positives 1 and 0.5 beat both negatives.
  REQUIRE(stragglersim::models::test_auc(logistic, x).has_value());
  CHECK(*stragglersim::models::test_auc(logistic, x) == 1.0);
  CHECK_FALSE(stragglersim::models::test_auc(squares, x).has_value());
  CHECK(stragglersim::models::margins(*data, x) == Eigen::Vector4d(1.0, -0.5, 0.5, -1.0));
}

TEST_CASE("models: a test set's scores from one pass equal value, metric and auc computed apart",
          "[models][metrics]") {
  using stragglersim::models::kScoreChunkRows;
  using stragglersim::models::score_test_set;
  using stragglersim::models::TestScores;
  using stragglersim::models::WorkerPool;
  // Three chunks, the last one partial; dense and sparse storage; both scalar-margin losses.
  const Eigen::Index m = 2 * kScoreChunkRows + 1001;
  const Eigen::Index p = 12;
  const Dataset dense = stragglersim::models::make_gaussian_mixture({m, p, 1.0, 5});
  const auto dense_data = std::make_shared<const Dataset>(dense);
  const auto sparse_data = std::make_shared<const Dataset>(
      Dataset{stragglersim::models::SparseRows(std::get<DenseRows>(dense.features).sparseView()),
              dense.labels});
  const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(p, -0.7, 0.9);
  for (const auto& data : {dense_data, sparse_data}) {
    for (const bool logistic : {true, false}) {
      const Objective f(data,
                        logistic ? stragglersim::models::make_logistic_loss()
                                 : stragglersim::models::make_least_squares_loss(),
                        0.01,
                        3);
      CAPTURE(data == sparse_data, logistic);
      const std::optional<TestScores> one = score_test_set(f, x);
      REQUIRE(one.has_value());
      // The losses summed in row order: the same bytes as the objective's own pass.
      CHECK(one->loss == f.loss().accumulate_value(*data, {0, m}, x) / static_cast<double>(m));
      CHECK(one->metric == Approx(f.loss().metric(*data, x)).epsilon(1e-14));
      CHECK(one->auc.has_value() == logistic);
      if (logistic) {
        CHECK(
            *one->auc ==
            Approx(roc_auc(stragglersim::models::margins(*data, x), data->labels)).epsilon(1e-12));
      }
      for (const int threads : {2, 3}) {
        WorkerPool pool(threads);
        const auto many = score_test_set(f, x, &pool);
        REQUIRE(many.has_value());
        CHECK(many->loss == one->loss);
        CHECK(many->metric == one->metric);
        CHECK(many->auc == one->auc);
      }
      // A margin that overflows is reported, not scored.
      CHECK_FALSE(score_test_set(f, Eigen::VectorXd::Constant(p, 1e308)).has_value());
    }
  }
}

TEST_CASE("metrics: score_test_set_many gives score_test_set's bytes for every x and thread count",
          "[models][metrics]") {
  using stragglersim::models::make_gaussian_mixture;
  using stragglersim::models::score_test_set;
  using stragglersim::models::score_test_set_many;
  using stragglersim::models::SparseRows;
  using stragglersim::models::WorkerPool;
  // 8 300 rows: two score chunks, the second partial; a third of the features zeroed for the
  // sparse copy's sake.
  stragglersim::models::GaussianMixtureOptions options;
  options.rows = 8300;
  options.features = 7;
  options.seed = 12;
  Dataset dense_data = make_gaussian_mixture(options);
  auto& a = std::get<DenseRows>(dense_data.features);
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    a(i, i % 7) = 0.0;
  }
  const auto dense = std::make_shared<Dataset>(dense_data);
  const auto sparse =
      std::make_shared<Dataset>(Dataset{SparseRows(a.sparseView()), dense_data.labels});
  for (const auto& make :
       {stragglersim::models::make_logistic_loss, stragglersim::models::make_least_squares_loss}) {
    const std::shared_ptr<const stragglersim::models::LossModel> loss = make();
    for (const auto& data : {dense, sparse}) {
      const Objective f(data, loss, 0.0, 3);
      for (const int threads : {1, 2}) {
        WorkerPool pool(threads);
        for (const std::size_t columns : {1, 2, 9}) {
          std::vector<Eigen::VectorXd> points;
          std::vector<const Eigen::VectorXd*> xs;
          for (std::size_t s = 0; s < columns; ++s) {
            points.push_back(Eigen::VectorXd::LinSpaced(7, -0.2 * static_cast<double>(s), 0.3));
          }
          for (const auto& x : points) {
            xs.push_back(&x);
          }
          // One x of the batch overflows its margins: nullopt for it alone.
          if (columns > 2) {
            points[1] = Eigen::VectorXd::Constant(7, 1e308);
          }
          const auto many = score_test_set_many(f, xs, &pool);
          REQUIRE(many.size() == columns);
          for (std::size_t s = 0; s < columns; ++s) {
            INFO(loss->name() << (data->is_sparse() ? ", sparse" : ", dense") << ", threads "
                              << threads << ", S = " << columns << ", x " << s);
            const auto one = score_test_set(f, points[s]);
            REQUIRE(one.has_value() == many[s].has_value());
            if (one) {
              CHECK(std::memcmp(&one->loss, &many[s]->loss, sizeof(double)) == 0);
              CHECK(std::memcmp(&one->metric, &many[s]->metric, sizeof(double)) == 0);
              CHECK(one->auc == many[s]->auc);
            }
          }
        }
      }
    }
  }
}

#include "models/softmax_network.h"

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "models/base/random_stream.h"
#include "models/dataset.h"
#include "models/objective.h"
#include "models/worker_pool.h"

namespace stragglersim::models {
namespace {

// m rows of p N(0, 1) features, labels uniform in 0 … classes − 1, every row's label drawn
// after its features (seeded).
Dataset random_dataset(Eigen::Index m, Eigen::Index p, int classes, std::uint64_t seed) {
  RandomEngine rng(seed);
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_int_distribution<int> label(0, classes - 1);
  DenseRows a(m, p);
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index j = 0; j < p; ++j) {
      a(i, j) = normal(rng);
    }
    b[i] = label(rng);
  }
  return Dataset{a, b};
}

// A point with every coordinate N(0, scale²) (seeded): generic, so no relu sits at its kink.
Eigen::VectorXd random_point(Eigen::Index size, double scale, std::uint64_t seed) {
  RandomEngine rng(seed);
  boost::random::normal_distribution<double> normal(0.0, scale);
  Eigen::VectorXd x(size);
  for (auto& v : x) {
    v = normal(rng);
  }
  return x;
}

// Independent reference of the softmax regression loss: plain loops over rows and classes,
// W(j, c) = x[c·p + j], ℓ = log Σ_c exp(s_c) − s_y (no max shift needed at these scores).
double plain_softmax_loss(const Dataset& data, const Eigen::VectorXd& x, int classes) {
  const auto& a = std::get<DenseRows>(data.features);
  const Eigen::Index p = a.cols();
  double total = 0.0;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    std::vector<double> s(static_cast<std::size_t>(classes), 0.0);
    double normaliser = 0.0;
    for (int c = 0; c < classes; ++c) {
      for (Eigen::Index j = 0; j < p; ++j) {
        s[static_cast<std::size_t>(c)] += a(i, j) * x[c * p + j];
      }
      normaliser += std::exp(s[static_cast<std::size_t>(c)]);
    }
    total += std::log(normaliser) - s[static_cast<std::size_t>(data.labels[i])];
  }
  return total;
}

struct Block {
  Eigen::Index begin;
  Eigen::Index size;
};

// The parameter blocks (W_l, then c_l with biases) of a network over p features.
std::vector<Block> parameter_blocks(const SoftmaxNetworkOptions& o, Eigen::Index p) {
  const auto widths = layer_widths(o, p);
  std::vector<Block> out;
  Eigen::Index at = 0;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    out.push_back({at, widths[l - 1] * widths[l]});
    at += widths[l - 1] * widths[l];
    if (o.bias) {
      out.push_back({at, widths[l]});
      at += widths[l];
    }
  }
  return out;
}

// Worst relative error over the parameter blocks of the analytic gradient of (1/m) Σ ℓ against
// central differences with step h (error h²·|f'''| + ε|f|/h, about 1e-10 at h = 1e-5).
double worst_block_error(const LossModel& loss,
                         const Dataset& data,
                         const Eigen::VectorXd& x,
                         const std::vector<Block>& blocks) {
  const RowRange all{0, data.rows()};
  const auto m = static_cast<double>(data.rows());
  Eigen::VectorXd g = Eigen::VectorXd::Zero(x.size());
  loss.accumulate(data, all, x, g);
  g /= m;
  Eigen::VectorXd fd(x.size());
  const double h = 1e-5;
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    Eigen::VectorXd up = x;
    Eigen::VectorXd down = x;
    up[k] += h;
    down[k] -= h;
    fd[k] = (loss.accumulate_value(data, all, up) - loss.accumulate_value(data, all, down)) /
            (2.0 * h * m);
  }
  double worst = 0.0;
  for (const Block& b : blocks) {
    const double scale = fd.segment(b.begin, b.size).norm();
    REQUIRE(scale > 1e-6);  // a block with no gradient would test nothing
    worst =
        std::max(worst, (g.segment(b.begin, b.size) - fd.segment(b.begin, b.size)).norm() / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE(
    "models: softmax regression loss equals a plain loop and its gradient central "
    "differences",
    "[models][softmax]") {
  const int classes = 4;
  const Dataset data = random_dataset(23, 5, classes, 3);
  const auto loss = make_softmax_loss(classes);
  CHECK(loss->name() == "softmax");
  CHECK(loss->parameter_count(5) == 20);
  CHECK_FALSE(loss->traits().scalar_margin);
  CHECK(loss->traits().convex);
  CHECK(loss->traits().classes == classes);
  CHECK(loss->curvature_bound() == 0.5);
  const Eigen::VectorXd x = random_point(20, 0.5, 9);
  const double plain = plain_softmax_loss(data, x, classes);
  CHECK(loss->accumulate_value(data, RowRange{0, 23}, x) == Approx(plain).epsilon(1e-13));
  // At zero every class has probability 1/C.
  CHECK(loss->accumulate_value(data, RowRange{0, 23}, Eigen::VectorXd::Zero(20)) ==
        Approx(23.0 * std::log(4.0)).epsilon(1e-14));
  SoftmaxNetworkOptions o;
  o.classes = classes;
  CHECK(worst_block_error(*loss, data, x, parameter_blocks(o, 5)) <= 1e-6);
}

TEST_CASE("models: sparse features give the dense softmax loss and gradient", "[models][softmax]") {
  const Dataset dense = random_dataset(17, 6, 3, 21);
  const SparseRows sparse = std::get<DenseRows>(dense.features).sparseView();
  const Dataset sp{sparse, dense.labels};
  SoftmaxNetworkOptions o;
  o.classes = 3;
  o.hidden = {4};
  o.bias = true;
  const auto net = make_softmax_network(o);
  const Eigen::VectorXd x = random_point(net->parameter_count(6), 0.7, 4);
  Eigen::VectorXd g_dense = Eigen::VectorXd::Zero(x.size());
  Eigen::VectorXd g_sparse = Eigen::VectorXd::Zero(x.size());
  const RowRange rows{2, 15};
  const double f_dense = net->accumulate(dense, rows, x, g_dense);
  const double f_sparse = net->accumulate(sp, rows, x, g_sparse);
  CHECK(f_sparse == Approx(f_dense).epsilon(1e-14));
  CHECK((g_sparse - g_dense).norm() <= 1e-13 * g_dense.norm());
}

TEST_CASE("models: mlp gradients of every layer equal central differences", "[models][mlp]") {
  const Dataset data = random_dataset(19, 4, 3, 8);
  for (const Activation act : {Activation::kRelu, Activation::kTanh}) {
    SoftmaxNetworkOptions o;
    o.classes = 3;
    o.hidden = {5, 3};
    o.activation = act;
    o.bias = true;
    const auto net = make_softmax_network(o);
    CHECK(net->name() == "mlp");
    CHECK_FALSE(net->traits().convex);
    // (4·5 + 5) + (5·3 + 3) + (3·3 + 3)
    REQUIRE(net->parameter_count(4) == 55);
    const Eigen::VectorXd x = random_point(55, 0.8, act == Activation::kRelu ? 1 : 2);
    INFO("activation " << (act == Activation::kRelu ? "relu" : "tanh"));
    CHECK(worst_block_error(*net, data, x, parameter_blocks(o, 4)) <= 1e-6);
  }
}

TEST_CASE("models: a partition chunked over many rows sums like its pieces", "[models][mlp]") {
  // 2500 rows span three of the network's 1024-row chunks: the pass over [0, 2500) equals the
  // sum of the passes over [0, 1024), [1024, 2048), [2048, 2500) (the chunks it is made of).
  const Dataset data = random_dataset(2500, 3, 4, 12);
  SoftmaxNetworkOptions o;
  o.classes = 4;
  o.hidden = {6};
  o.activation = Activation::kTanh;
  o.bias = true;
  const auto net = make_softmax_network(o);
  const Eigen::VectorXd x = network_initial_point(o, 3, 77);
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(x.size());
  const double f_whole = net->accumulate(data, RowRange{0, 2500}, x, whole);
  Eigen::VectorXd pieces = Eigen::VectorXd::Zero(x.size());
  double f_pieces = 0.0;
  for (const RowRange r : {RowRange{0, 1024}, RowRange{1024, 2048}, RowRange{2048, 2500}}) {
    f_pieces += net->accumulate(data, r, x, pieces);
  }
  CHECK(f_whole == f_pieces);
  CHECK(whole == pieces);
}

TEST_CASE("models: softmax objective is the same bytes for every thread count",
          "[models][softmax]") {
  auto data = std::make_shared<Dataset>(random_dataset(120, 7, 5, 31));
  SoftmaxNetworkOptions o;
  o.classes = 5;
  o.hidden = {8};
  o.bias = true;
  const std::shared_ptr<const LossModel> net = make_softmax_network(o);
  const Objective f(data, net, 1e-3, 6);
  const Eigen::VectorXd x = network_initial_point(o, 7, 5);
  Eigen::MatrixXd serial;
  Eigen::MatrixXd parallel;
  WorkerPool pool(3);
  const double v1 = f.evaluate(x, &serial);
  const double v3 = f.evaluate(x, &parallel, &pool);
  CHECK(v1 == v3);
  CHECK(serial == parallel);
  CHECK(f.dimension() == net->parameter_count(7));
  CHECK_FALSE(f.pl_constant().has_value());
  CHECK(std::isnan(f.smoothness()));
}

TEST_CASE("models: mlp initial weights follow He and Glorot variances", "[models][mlp]") {
  for (const Activation act : {Activation::kRelu, Activation::kTanh}) {
    SoftmaxNetworkOptions o;
    o.classes = 10;
    o.hidden = {200};
    o.activation = act;
    o.bias = true;
    const Eigen::Index p = 300;
    const Eigen::VectorXd x = network_initial_point(o, p, 13);
    REQUIRE(x.size() == 300 * 200 + 200 + 200 * 10 + 10);
    const Eigen::VectorXd w1 = x.head(300 * 200);
    const double expected = act == Activation::kRelu ? 2.0 / 300.0 : 2.0 / (300.0 + 200.0);
    // The sample variance of n normals has standard error σ²·sqrt(2/n).
    const auto n = static_cast<double>(w1.size());
    const double variance = w1.squaredNorm() / n;
    CHECK(std::abs(variance - expected) <= 4.0 * expected * std::sqrt(2.0 / n));
    CHECK(std::abs(w1.mean()) <= 4.0 * std::sqrt(expected / n));
    CHECK(x.segment(300 * 200, 200).isZero(0.0));  // biases start at zero
    CHECK(network_initial_point(o, p, 13) == x);
    CHECK(network_initial_point(o, p, 14) != x);
  }
  SoftmaxNetworkOptions softmax;
  softmax.classes = 3;
  CHECK(network_initial_point(softmax, 4, 13).isZero(0.0));
}

TEST_CASE("models: softmax predictions and confusion counts", "[models][softmax]") {
  // Two features, three classes: W's columns score class c by feature c (class 2 by neither).
  DenseRows a(5, 2);
  a << 1.0, 0.0,   //
      0.0, 2.0,    //
      -1.0, -1.0,  //
      3.0, 1.0,    //
      0.0, 0.0;
  Eigen::VectorXd b(5);
  b << 0.0, 1.0, 2.0, 1.0, 2.0;
  const Dataset data{a, b};
  const auto loss = make_softmax_loss(3);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(6);
  x[0] = 1.0;  // W(0, 0)
  x[3] = 1.0;  // W(1, 1)
  // Scores: (1, 0, 0) → 0; (0, 2, 0) → 1; (−1, −1, 0) → 2; (3, 1, 0) → 0; (0, 0, 0) → 0 (tie).
  const std::vector<int> predicted = loss->predict(data, x);
  CHECK(predicted == std::vector<int>{0, 1, 2, 0, 0});
  CHECK(loss->metric(data, x) == Approx(3.0 / 5.0));
  const auto counts = confusion_counts(data.labels, predicted, 3);
  Eigen::Matrix<std::int64_t, 3, 3> expected;
  expected << 1, 0, 0,  //
      1, 1, 0,          //
      1, 0, 1;
  CHECK(counts == expected);
}

TEST_CASE("models: softmax network options name the violated field", "[models][mlp]") {
  SoftmaxNetworkOptions o;
  o.classes = 1;
  REQUIRE(o.validate());
  CHECK(o.validate()->field == "classes");
  o.classes = 3;
  o.hidden = {4, 0};
  REQUIRE(o.validate());
  CHECK(o.validate()->field == "hidden");
  CHECK(o.validate()->index == 1);
  o.hidden = {4};
  CHECK_FALSE(o.validate());
}

}  // namespace stragglersim::models

#include "models/objective.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "models/base/data_traffic.h"
#include "models/softmax_network.h"
#include "models/synthetic_data.h"
#include "models/worker_pool.h"

namespace {

using stragglersim::models::Dataset;
using stragglersim::models::DenseRows;
using stragglersim::models::largest_gram_eigenvalue;
using stragglersim::models::LossModel;
using stragglersim::models::make_least_squares_loss;
using stragglersim::models::make_logistic_loss;
using stragglersim::models::Objective;
using stragglersim::models::SparseRows;
using stragglersim::models::WorkerPool;

std::shared_ptr<const LossModel> objective_loss(const std::string& name) {
  return name == "logistic" ? std::shared_ptr<const LossModel>(make_logistic_loss())
                            : std::shared_ptr<const LossModel>(make_least_squares_loss());
}

Eigen::VectorXd gaussian_vector(Eigen::Index n, std::uint64_t seed, double scale = 1.0) {
  boost::random::mt19937_64 engine(seed);
  boost::random::normal_distribution<double> normal(0.0, scale);
  Eigen::VectorXd v(n);
  for (Eigen::Index i = 0; i < n; ++i) v[i] = normal(engine);
  return v;
}

// Dense data with about 60% of the entries zeroed, so the sparse copy is genuinely sparse.
Dataset thinned_mixture(Eigen::Index m, Eigen::Index p, std::uint64_t seed) {
  Dataset data = stragglersim::models::make_gaussian_mixture({m, p, 1.0, seed});
  auto& a = std::get<DenseRows>(data.features);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index k = 0; k < p; ++k) {
      if ((i * 7 + k * 3) % 5 < 3) a(i, k) = 0.0;
    }
  }
  return data;
}

std::shared_ptr<const Dataset> as_sparse(const Dataset& dense) {
  return std::make_shared<const Dataset>(
      Dataset{SparseRows(std::get<DenseRows>(dense.features).sparseView()), dense.labels});
}

// Largest absolute component error of the gradient against central differences of f.
double finite_difference_error(const Objective& f,
                               const Eigen::VectorXd& x,
                               const Eigen::VectorXd& gradient,
                               double h) {
  double worst = 0.0;
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    Eigen::VectorXd plus = x;
    Eigen::VectorXd minus = x;
    plus[k] += h;
    minus[k] -= h;
    const double fd = (f.value(plus) - f.value(minus)) / (2.0 * h);
    worst = std::max(worst, std::abs(fd - gradient[k]));
  }
  return worst;
}

double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).norm() / std::max(1.0, b.norm());
}

// The losses evaluate_many is checked on: the two scalar-margin losses (their own multi-vector
// pass) and the softmax models (the default, one accumulate per column).
const char* const kManyLosses[] = {"least_squares", "logistic", "softmax", "mlp"};

std::shared_ptr<const LossModel> many_loss(const std::string& name) {
  if (name == "softmax") return stragglersim::models::make_softmax_loss(3);
  if (name == "mlp") {
    stragglersim::models::SoftmaxNetworkOptions o;
    o.classes = 3;
    o.hidden = {5};
    o.bias = true;
    o.activation = stragglersim::models::Activation::kTanh;
    return stragglersim::models::make_softmax_network(o);
  }
  return objective_loss(name);
}

// m rows of p features, about half of them zero, and labels the loss accepts: real (least
// squares), ±1 (logistic), classes 0 … 2 (softmax, mlp). Dense or its sparse copy.
std::shared_ptr<const Dataset> many_data(
    Eigen::Index m, Eigen::Index p, const std::string& loss, bool sparse, std::uint64_t seed) {
  const Eigen::VectorXd values = gaussian_vector(m * p + m, seed);
  DenseRows a(m, p);
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index k = 0; k < p; ++k) {
      a(i, k) = (i + 2 * k) % 7 < 3 ? 0.0 : values[i * p + k];
    }
    const double label = values[m * p + i];
    b[i] = loss == "least_squares" ? label
           : loss == "logistic"    ? (label >= 0.0 ? 1.0 : -1.0)
                                   : static_cast<double>(i % 3);
  }
  if (sparse) return std::make_shared<const Dataset>(Dataset{SparseRows(a.sparseView()), b});
  return std::make_shared<const Dataset>(Dataset{a, b});
}

bool same_bytes(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

bool same_bytes(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("models: objective gradient agrees with central differences", "[models][objective]") {
  const double l2 = 0.05;
  const Dataset dense = thinned_mixture(37, 6, 11);
  const auto dense_ptr = std::make_shared<const Dataset>(dense);
  const auto sparse_ptr = as_sparse(dense);
  const Eigen::VectorXd x = gaussian_vector(6, 5, 0.7);
  // h balances truncation h²·|f'''|/6 against roundoff ε·|f|/h; the tolerance keeps both terms
  // with a factor 100 (|f'''| ≤ max_i ‖a_i‖³ is O(10) here).
  const double h = 1e-4;
  for (const std::string name : {"logistic", "least_squares"}) {
    for (const auto& data : {dense_ptr, sparse_ptr}) {
      INFO(name << (data->is_sparse() ? " sparse" : " dense"));
      const Objective f(data, objective_loss(name), l2, 4);
      const Eigen::VectorXd g = f.gradient(x);
      const double tolerance =
          100.0 * (h * h + std::numeric_limits<double>::epsilon() * std::abs(f.value(x)) / h) *
          std::max(1.0, g.lpNorm<Eigen::Infinity>());
      CHECK(finite_difference_error(f, x, g, h) <= tolerance);
      // The check can fail: forgetting the regulariser's λ₂x is detected.
      CHECK(finite_difference_error(f, x, g - l2 * x, h) > tolerance);
    }
  }
}

TEST_CASE("models: partition gradients sum to the gradient minus the regulariser",
          "[models][objective]") {
  const auto data = std::make_shared<const Dataset>(
      stragglersim::models::make_linear_regression({103, 7, 0.3, 4}));
  const Eigen::VectorXd x = gaussian_vector(7, 9);
  for (const std::string name : {"logistic", "least_squares"}) {
    INFO(name);
    const Objective f(data, objective_loss(name), 0.1, 6);
    Eigen::MatrixXd partition_gradients;
    const double value = f.evaluate(x, &partition_gradients);
    REQUIRE(partition_gradients.rows() == 7);
    REQUIRE(partition_gradients.cols() == 6);
    const Eigen::VectorXd g = f.gradient(x);
    CHECK(relative_difference(partition_gradients.rowwise().sum() + 0.1 * x, g) <= 1e-13);
    CHECK(value == Approx(f.value(x)).epsilon(1e-14));
    for (int j = 0; j < 6; ++j) {
      Eigen::VectorXd column(7);
      f.partition_gradient(j, x, column);
      CHECK(relative_difference(column, partition_gradients.col(j)) <= 1e-14);
    }
  }
}

TEST_CASE("models: fused evaluate equals a naive two-pass computation", "[models][objective]") {
  const Dataset dense = thinned_mixture(61, 5, 21);
  const auto& a = std::get<DenseRows>(dense.features);
  const auto data = std::make_shared<const Dataset>(dense);
  const Eigen::VectorXd x = gaussian_vector(5, 3);
  const double l2 = 0.02;
  const int k = 5;
  for (const std::string name : {"logistic", "least_squares"}) {
    INFO(name);
    const Objective f(data, objective_loss(name), l2, k);
    Eigen::MatrixXd partition_gradients;
    const double value = f.evaluate(x, &partition_gradients);

    // Naive: margins by a matrix-vector product, losses by the textbook formulas.
    const Eigen::VectorXd z = a * x;
    const Eigen::ArrayXd b = dense.labels.array();
    const bool logistic = name == "logistic";
    const Eigen::ArrayXd losses = logistic ? Eigen::ArrayXd((1.0 + (-b * z.array()).exp()).log())
                                           : Eigen::ArrayXd(0.5 * (z.array() - b).square());
    const Eigen::ArrayXd slopes = logistic ? Eigen::ArrayXd(-b / (1.0 + (b * z.array()).exp()))
                                           : Eigen::ArrayXd(z.array() - b);
    const double m = 61.0;
    CHECK(value == Approx(losses.sum() / m + 0.5 * l2 * x.squaredNorm()).epsilon(1e-13));
    for (int j = 0; j < k; ++j) {
      const auto rows = f.partition(j);
      const Eigen::VectorXd expected = a.middleRows(rows.begin, rows.size()).transpose() *
                                       slopes.segment(rows.begin, rows.size()).matrix() / m;
      CHECK(relative_difference(partition_gradients.col(j), expected) <= 1e-13);
    }
  }
}

TEST_CASE("models: every pass adds the bytes it reads to the process's data traffic",
          "[models][objective]") {
  using stragglersim::models::data_bytes_read;
  const Dataset dense = thinned_mixture(61, 5, 21);
  const Eigen::VectorXd x = gaussian_vector(5, 3);
  const int k = 5;
  for (const bool sparse : {false, true}) {
    const auto data = sparse ? as_sparse(dense) : std::make_shared<const Dataset>(dense);
    const Objective f(data, objective_loss("logistic"), 0.01, k);
    std::int64_t partitions = 0;  // a pass over all partitions reads each partition's rows
    for (int j = 0; j < k; ++j) partitions += data->stored_bytes(f.partition(j));
    INFO((sparse ? "sparse" : "dense") << ", one pass over every partition: " << partitions);
    const auto read_by = [&](const auto& action) {
      const std::int64_t before = data_bytes_read();
      action();
      return data_bytes_read() - before;
    };
    Eigen::MatrixXd gradients;
    CHECK(read_by([&] { (void)f.evaluate(x, &gradients); }) == partitions);
    CHECK(read_by([&] { (void)f.evaluate(x, nullptr); }) == data->stored_bytes());
    CHECK(read_by([&] { (void)f.value(x); }) == data->stored_bytes());
    CHECK(read_by([&] { (void)f.gradient(x); }) == data->stored_bytes());
    CHECK(read_by([&] {
            f.partition_gradients({1, 3}, x, gradients);
          }) == data->stored_bytes(f.partition(1)) + data->stored_bytes(f.partition(3)));
    CHECK(read_by([&] { (void)f.loss().metric(*data, x); }) == data->stored_bytes());
    // Power iteration: at least two passes; dense ones are whole passes (sparse chunks each
    // read one more row offset).
    const std::int64_t power = read_by([&] { (void)f.smoothness(); });
    CHECK(power >= 2 * data->stored_bytes());
    CHECK((sparse || power % data->stored_bytes() == 0));
  }
}

TEST_CASE("models: sparse and dense storage give the same numbers", "[models][objective]") {
  const Dataset dense = thinned_mixture(203, 9, 8);
  const auto dense_ptr = std::make_shared<const Dataset>(dense);
  const auto sparse_ptr = as_sparse(dense);
  REQUIRE(sparse_ptr->stored_entries() < dense_ptr->stored_entries());
  const Eigen::VectorXd x = gaussian_vector(9, 17);
  for (const std::string name : {"logistic", "least_squares"}) {
    INFO(name);
    const Objective f_dense(dense_ptr, objective_loss(name), 0.01, 7);
    const Objective f_sparse(sparse_ptr, objective_loss(name), 0.01, 7);
    Eigen::MatrixXd g_dense;
    Eigen::MatrixXd g_sparse;
    const double v_dense = f_dense.evaluate(x, &g_dense);
    const double v_sparse = f_sparse.evaluate(x, &g_sparse);
    CHECK(std::abs(v_dense - v_sparse) <= 1e-12 * std::abs(v_dense));
    CHECK(relative_difference(g_sparse, g_dense) <= 1e-12);
    CHECK(std::abs(f_dense.smoothness() - f_sparse.smoothness()) <= 1e-12 * f_dense.smoothness());
    if (name == "least_squares") {
      CHECK(*f_sparse.pl_constant() == Approx(*f_dense.pl_constant()).epsilon(1e-10));
    }
  }
}

TEST_CASE("models: Lanczos finds top eigenvalues that power iteration is slow to separate",
          "[models][objective]") {
  // AᵀA/m = Q diag(λ) Qᵀ (a random rotation Q) with λ₂ = (1 − gap) λ₁. Power iteration's error
  // falls as (1 − gap)^{2k}: 1e-10 takes ~1150 steps at gap 1e-2 and ~10⁸ at 1e-7. Lanczos: the
  // twins are exact once the Krylov space is the whole space (p ≤ 64 vectors), and a 1e-2 gap
  // converges across restarts of the 64-vector basis (p = 300) in a few hundred passes.
  struct Case {
    Eigen::Index p;
    double gap;
    std::int64_t most_passes;
  };
  for (const Case c : {Case{20, 1e-7, 21}, Case{60, 1e-7, 61}, Case{300, 1e-2, 400}}) {
    INFO("p = " << c.p << ", gap " << c.gap);
    const Eigen::Index m = 2 * c.p;
    Eigen::VectorXd lambda(c.p);
    for (Eigen::Index i = 0; i < c.p; ++i) {
      lambda[i] = 0.9 * std::pow(0.97, static_cast<double>(i));
    }
    lambda[0] = 1.0;
    lambda[1] = 1.0 - c.gap;
    Eigen::MatrixXd gaussian(c.p, c.p);
    const Eigen::VectorXd draws = gaussian_vector(c.p * c.p, 17);
    for (Eigen::Index i = 0; i < c.p * c.p; ++i) gaussian(i % c.p, i / c.p) = draws[i];
    const Eigen::MatrixXd rotation = Eigen::HouseholderQR<Eigen::MatrixXd>(gaussian).householderQ();
    // A = √m [diag(√λ) Qᵀ; 0]: AᵀA/m = Q diag(λ) Qᵀ.
    DenseRows a = DenseRows::Zero(m, c.p);
    a.topRows(c.p) =
        std::sqrt(static_cast<double>(m)) * lambda.cwiseSqrt().asDiagonal() * rotation.transpose();
    const Dataset data(a, Eigen::VectorXd::Ones(m));
    const std::int64_t before = stragglersim::models::data_bytes_read();
    const double top = largest_gram_eigenvalue(data);
    const std::int64_t passes =
        (stragglersim::models::data_bytes_read() - before) / data.stored_bytes();
    CHECK(std::abs(top - 1.0) <= 1e-10);
    CHECK(top <= 1.0 + 1e-14);  // a Rayleigh quotient: never above λ₁ beyond rounding
    CHECK(passes <= c.most_passes);
  }
}

TEST_CASE("models: Lanczos matches a dense eigensolver", "[models][objective]") {
  for (const std::uint64_t seed : {1U, 2U, 3U}) {
    const Dataset dense = thinned_mixture(80, 12, seed);
    const auto& a = std::get<DenseRows>(dense.features);
    const Eigen::MatrixXd gram = a.transpose() * a / 80.0;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(gram);
    const double expected = solver.eigenvalues().maxCoeff();
    CHECK(largest_gram_eigenvalue(dense) == Approx(expected).epsilon(1e-8));
    CHECK(largest_gram_eigenvalue(*as_sparse(dense)) == Approx(expected).epsilon(1e-8));

    const auto ptr = std::make_shared<const Dataset>(dense);
    CHECK(Objective(ptr, make_logistic_loss(), 0.3, 2).smoothness() ==
          Approx(0.25 * expected + 0.3).epsilon(1e-8));
    CHECK(Objective(ptr, make_least_squares_loss(), 0.3, 2).smoothness() ==
          Approx(expected + 0.3).epsilon(1e-8));
  }
}

TEST_CASE("models: least squares PL constant is the smallest non-zero Gram eigenvalue",
          "[models][objective][pl]") {
  SECTION("m < p: only m eigenvalues of AᵀA/m are non-zero") {
    const auto data = std::make_shared<const Dataset>(
        stragglersim::models::make_linear_regression({15, 40, 0.1, 6}));
    const auto& a = std::get<DenseRows>(data->features);
    const Eigen::MatrixXd gram = a.transpose() * a / 15.0;  // 40 × 40, rank 15
    const Eigen::VectorXd eigenvalues =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram).eigenvalues();
    REQUIRE(eigenvalues[24] < 1e-12 * eigenvalues[39]);
    const double expected = eigenvalues[25];
    const Objective f(data, make_least_squares_loss(), 0.0, 3);
    REQUIRE(f.pl_constant().has_value());
    CHECK(*f.pl_constant() == Approx(expected).epsilon(1e-9));
    CHECK(*Objective(data, make_least_squares_loss(), 0.2, 3).pl_constant() ==
          Approx(expected + 0.2).epsilon(1e-9));
    CHECK(*Objective(as_sparse(*data), make_least_squares_loss(), 0.0, 3).pl_constant() ==
          Approx(expected).epsilon(1e-9));
  }
  SECTION("rank-deficient with m > p: a repeated column") {
    Dataset data = stragglersim::models::make_linear_regression({50, 4, 0.1, 2});
    auto& a = std::get<DenseRows>(data.features);
    a.col(3) = a.col(1);
    const Eigen::MatrixXd gram = a.transpose() * a / 50.0;
    const Eigen::VectorXd eigenvalues =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram).eigenvalues();
    const Objective f(std::make_shared<const Dataset>(data), make_least_squares_loss(), 0.0, 1);
    CHECK(*f.pl_constant() == Approx(eigenvalues[1]).epsilon(1e-9));
  }
  SECTION("the PL inequality ½‖∇f‖² ≥ μ(f − f*) holds and is tight along the weakest direction") {
    const Dataset data = stragglersim::models::make_linear_regression({30, 8, 0.5, 13});
    const auto& a = std::get<DenseRows>(data.features);
    const auto ptr = std::make_shared<const Dataset>(data);
    const Objective f(ptr, make_least_squares_loss(), 0.0, 3);
    const double mu = *f.pl_constant();
    const Eigen::VectorXd x_star = a.colPivHouseholderQr().solve(data.labels);
    const double f_star = f.value(x_star);
    for (const std::uint64_t seed : {1U, 2U, 3U, 4U}) {
      const Eigen::VectorXd x = gaussian_vector(8, seed);
      CHECK(0.5 * f.gradient(x).squaredNorm() >= mu * (f.value(x) - f_star) * (1.0 - 1e-12));
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(a.transpose() * a / 30.0);
    const Eigen::VectorXd weakest = x_star + solver.eigenvectors().col(0);
    CHECK(0.5 * f.gradient(weakest).squaredNorm() ==
          Approx(mu * (f.value(weakest) - f_star)).epsilon(1e-8));
  }
}

TEST_CASE("models: logistic PL constant is the regulariser", "[models][objective][pl]") {
  const auto data =
      std::make_shared<const Dataset>(stragglersim::models::make_gaussian_mixture({40, 3, 1.0, 1}));
  CHECK(Objective(data, make_logistic_loss(), 0.25, 2).pl_constant() == 0.25);
  CHECK_FALSE(Objective(data, make_logistic_loss(), 0.0, 2).pl_constant().has_value());
}

TEST_CASE("models: pl_constant refuses Gram matrices above 5000 x 5000",
          "[models][objective][pl]") {
  const auto data =
      std::make_shared<const Dataset>(Dataset{SparseRows(5001, 5001), Eigen::VectorXd::Zero(5001)});
  const Objective f(data, make_least_squares_loss(), 0.0, 1);
  CHECK_THROWS_AS(f.pl_constant(), std::invalid_argument);
  CHECK_THROWS_WITH(f.pl_constant(),
                    "pl_constant: the Gram matrix would be 5001 x 5001; dense eigendecomposition "
                    "is limited to min(rows, features) <= 5000");
}

TEST_CASE("models: objective rejects illegal arguments", "[models][objective]") {
  const auto data =
      std::make_shared<const Dataset>(stragglersim::models::make_gaussian_mixture({10, 3, 1.0, 1}));
  const auto loss = objective_loss("logistic");
  CHECK_THROWS_AS(Objective(data, loss, 0.0, 0), std::logic_error);
  CHECK_THROWS_AS(Objective(data, loss, 0.0, 11), std::logic_error);
  CHECK_THROWS_AS(Objective(data, loss, -1.0, 2), std::logic_error);
  CHECK_THROWS_AS(Objective(nullptr, loss, 0.0, 2), std::logic_error);
  CHECK_THROWS_AS(Objective(data, nullptr, 0.0, 2), std::logic_error);
  const Objective f(data, loss, 0.0, 10);
  CHECK_THROWS_AS(f.value(Eigen::VectorXd::Zero(4)), std::logic_error);
  Eigen::VectorXd out(3);
  CHECK_THROWS_AS(f.partition_gradient(10, Eigen::VectorXd::Zero(3), out), std::logic_error);
}

TEST_CASE("models: minibatch gradients sample every subset of a partition equally often",
          "[models][objective][batch]") {
  // Least squares with row r = e_{r mod 5}, label 0: at x = 1 each row's gradient is its own
  // unit vector, so a minibatch gradient shows which rows it summed.
  const Eigen::Index m = 20;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(m, 5);
  for (Eigen::Index r = 0; r < m; ++r) a(r, r % 5) = 1.0;
  const auto data =
      std::make_shared<const Dataset>(Dataset{DenseRows(a), Eigen::VectorXd::Zero(m)});
  const Objective f(data, make_least_squares_loss(), 0.0, 4);
  REQUIRE(f.smallest_partition_rows() == 5);
  const Eigen::VectorXd x = Eigen::VectorXd::Ones(5);
  std::map<int, int> subsets;
  const int draws = 20000;
  Eigen::VectorXd g(5);
  for (int draw = 0; draw < draws; ++draw) {
    f.partition_minibatch_gradient(
        1, x, 2, stragglersim::models::minibatch_seed(3, static_cast<std::uint64_t>(draw), 1), g);
    int mask = 0;
    int kept = 0;
    for (int k = 0; k < 5; ++k) {
      if (g[k] != 0.0) {
        REQUIRE(g[k] == Approx(5.0 / (2.0 * 20.0)));  // |P_j| / (b·m)
        mask |= 1 << k;
        kept += 1;
      }
    }
    REQUIRE(kept == 2);
    subsets[mask] += 1;
  }
  REQUIRE(subsets.size() == 10);  // all C(5, 2) subsets occur
  const double se = std::sqrt(draws * 0.1 * 0.9);
  for (const auto& [mask, count] : subsets) {
    INFO("subset " << mask);
    CHECK(std::abs(count - 0.1 * draws) <= 4.0 * se);
  }
  // The whole partition is the full partition gradient; the seed decides the sample.
  Eigen::VectorXd full(5);
  f.partition_gradient(2, x, full);
  f.partition_minibatch_gradient(2, x, 5, 99, g);
  CHECK((g - full).norm() <= 1e-15 * full.norm());
  Eigen::VectorXd again(5);
  f.partition_minibatch_gradient(1, x, 2, 12345, g);
  f.partition_minibatch_gradient(1, x, 2, 12345, again);
  CHECK(g == again);
}

TEST_CASE("models: evaluate_many is evaluate's bytes for every column, loss, data kind and pool",
          "[models][objective][many]") {
  // Every S the kernels treat differently (1: evaluate itself; odd: a one-column tile; 16, 17:
  // many tiles; 17, 33: sparse column groups of unequal widths, which share one sum buffer), p
  // below, at and past the eight-wide vectors, rows that end in partial blocks of four (dense) and
  // of 32 (sparse), partitions that split the blocks unevenly.
  WorkerPool one(1);
  WorkerPool two(2);
  const Eigen::Index m = 103;
  int cases = 0;
  for (const std::string loss_name : kManyLosses) {
    const auto loss = many_loss(loss_name);
    for (const Eigen::Index p : {1, 7, 13, 54}) {
      for (const bool sparse : {false, true}) {
        const auto data = many_data(m, p, loss_name, sparse, 100 + static_cast<std::uint64_t>(p));
        const Eigen::Index n = loss->parameter_count(p);
        std::vector<Eigen::VectorXd> points;
        for (int s = 0; s < 33; ++s) {
          // Column 0 is zero (the logistic weights and margins at a tie), the rest generic.
          points.push_back(s == 0 ? Eigen::VectorXd::Zero(n)
                                  : gaussian_vector(n, 1000 + static_cast<std::uint64_t>(s), 0.6));
        }
        for (const int k : {1, 3, 7}) {
          const Objective f(data, loss, 0.03, k);
          std::vector<double> single;
          std::vector<Eigen::MatrixXd> single_gradients(points.size());
          for (std::size_t s = 0; s < points.size(); ++s) {
            single.push_back(f.evaluate(points[s], &single_gradients[s]));
          }
          for (WorkerPool* pool : {static_cast<WorkerPool*>(nullptr), &one, &two}) {
            for (const std::size_t columns : {1, 2, 3, 4, 5, 8, 16, 17, 33}) {
              INFO(loss_name << ", p = " << p << (sparse ? ", sparse" : ", dense") << ", k = " << k
                             << ", threads " << (pool == nullptr ? 0 : pool->threads())
                             << ", S = " << columns);
              std::vector<const Eigen::VectorXd*> xs;
              std::vector<Eigen::MatrixXd> gradients(columns);
              std::vector<Eigen::MatrixXd*> outs;
              // Columns taken from the end for odd S, so every point is met at several s.
              for (std::size_t s = 0; s < columns; ++s) {
                xs.push_back(&points[columns % 2 == 1 ? points.size() - 1 - s : s]);
                outs.push_back(&gradients[s]);
              }
              const std::vector<double> values = f.evaluate_many(xs, outs, pool);
              REQUIRE(values.size() == columns);
              bool all_same = true;
              for (std::size_t s = 0; s < columns; ++s) {
                const std::size_t at = columns % 2 == 1 ? points.size() - 1 - s : s;
                all_same = all_same && same_bytes(values[s], single[at]) &&
                           same_bytes(gradients[s], single_gradients[at]);
              }
              CHECK(all_same);
              ++cases;
            }
          }
        }
      }
    }
  }
  CHECK(cases == 4 * 4 * 2 * 3 * 3 * 9);
}

/// m rows of `per_row` non-zeros each over p features (row i's at (37 i + t p / per_row) mod p),
/// labels ±1: the Amazon-like shape in small when a partition's non-zeros are fewer than p.
std::shared_ptr<const Dataset> wide_sparse_data(Eigen::Index m, Eigen::Index p, int per_row) {
  const Eigen::VectorXd values = gaussian_vector(m * per_row + m, 17);
  std::vector<Eigen::Triplet<double, std::int64_t>> entries;
  Eigen::VectorXd b(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (int t = 0; t < per_row; ++t) {
      entries.emplace_back(i, (i * 37 + t * (p / per_row)) % p, values[i * per_row + t]);
    }
    b[i] = values[m * per_row + i] >= 0.0 ? 1.0 : -1.0;
  }
  SparseRows a(m, p);
  a.setFromTriplets(entries.begin(), entries.end());
  return std::make_shared<const Dataset>(Dataset{std::move(a), b});
}

TEST_CASE("models: the passes on wide sparse data are the plain computation's bytes",
          "[models][objective][many]") {
  // Partitions whose rows touch few of the features (the Amazon-like shape): the multi-vector
  // passes zero, and read back, only the touched ones, and evaluate divides only those by m.
  // p = 2000 with 3 non-zeros per row (a partition touches under a fifth), and p = 100 with 6
  // (fewer non-zeros than features, more than half touched: every feature is taken). Column 0
  // is zero: least squares weights of exactly zero.
  WorkerPool two(2);
  const Eigen::Index m = 103;
  int cases = 0;
  for (const auto& [p, per_row] : {std::pair<Eigen::Index, int>{2000, 3}, {100, 6}}) {
    const auto data = wide_sparse_data(m, p, per_row);
    for (const std::string loss_name : {"logistic", "least_squares"}) {
      const auto loss = many_loss(loss_name);
      std::vector<Eigen::VectorXd> points;
      for (int s = 0; s < 17; ++s) {
        points.push_back(s == 0 ? Eigen::VectorXd::Zero(p)
                                : gaussian_vector(p, 300 + static_cast<std::uint64_t>(s), 0.6));
      }
      for (const int k : {3, 7}) {
        const Objective f(data, loss, 0.03, k);
        std::vector<double> single;
        std::vector<Eigen::MatrixXd> single_gradients(points.size());
        bool plain = true;
        for (std::size_t s = 0; s < points.size(); ++s) {
          // Into a matrix of another shape holding other values, then into its own again.
          single_gradients[s] = Eigen::MatrixXd::Constant(p, k + 1, 7.0);
          single.push_back(f.evaluate(points[s], &single_gradients[s]));
          // The plain computation: each ∇F_j from a zero vector, the whole of it divided by m.
          double loss_sum = 0.0;
          Eigen::MatrixXd expected(p, k);
          for (int j = 0; j < k; ++j) {
            Eigen::VectorXd column = Eigen::VectorXd::Zero(p);
            loss_sum += loss->accumulate(*data, f.partition(j), points[s], column);
            expected.col(j) = column / static_cast<double>(m);
          }
          const double value =
              loss_sum / static_cast<double>(m) + 0.5 * 0.03 * points[s].squaredNorm();
          plain = plain && same_bytes(single.back(), value) &&
                  same_bytes(single_gradients[s], expected) &&
                  same_bytes(f.evaluate(points[s], &single_gradients[s], &two), value) &&
                  same_bytes(single_gradients[s], expected);
        }
        CHECK(plain);
        for (WorkerPool* pool : {static_cast<WorkerPool*>(nullptr), &two}) {
          INFO(loss_name << ", p = " << p << ", k = " << k << (pool ? ", pool" : ""));
          std::vector<const Eigen::VectorXd*> xs;
          // Outputs of the right size holding another pass's values: every entry is written.
          std::vector<Eigen::MatrixXd> gradients(points.size(),
                                                 Eigen::MatrixXd::Constant(p, k, 7.0));
          std::vector<Eigen::MatrixXd*> outs;
          for (std::size_t s = 0; s < points.size(); ++s) {
            xs.push_back(&points[s]);
            outs.push_back(&gradients[s]);
          }
          const std::vector<double> many = f.evaluate_many(xs, outs, pool);
          bool all_same = true;
          for (std::size_t s = 0; s < points.size(); ++s) {
            all_same = all_same && same_bytes(many[s], single[s]) &&
                       same_bytes(gradients[s], single_gradients[s]);
          }
          CHECK(all_same);
          // Every point on partition 1 (two column groups at 17 tasks) and one on the others.
          std::vector<Eigen::VectorXd> task_outs(points.size() + static_cast<std::size_t>(k),
                                                 Eigen::VectorXd::Constant(p, 7.0));
          std::vector<Objective::PartitionTask> tasks;
          for (std::size_t s = 0; s < points.size(); ++s) {
            tasks.push_back({1, &points[s], &task_outs[s]});
          }
          for (int j = 0; j < k; ++j) {
            tasks.push_back(
                {j, &points[3], &task_outs[points.size() + static_cast<std::size_t>(j)]});
          }
          f.partition_gradients_many(tasks, pool);
          bool tasks_same = true;
          for (std::size_t t = 0; t < tasks.size(); ++t) {
            Eigen::VectorXd expected(p);
            f.partition_gradient(tasks[t].partition, *tasks[t].x, expected);
            tasks_same = tasks_same && same_bytes(task_outs[t], expected);
          }
          CHECK(tasks_same);
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 2 * 2 * 2 * 2);
}

TEST_CASE("models: partition_gradients_many is partition_gradient's bytes for every task",
          "[models][objective][many]") {
  // Tasks on 7 partitions: none on some, one on others, up to 17 on one (two sparse column
  // groups), the same x twice on one partition, in an order that is not the partitions'.
  WorkerPool two(2);
  const Eigen::Index m = 103;
  int cases = 0;
  for (const std::string loss_name : kManyLosses) {
    for (const bool sparse : {false, true}) {
      const auto data = many_data(m, 13, loss_name, sparse, 31);
      const auto loss = many_loss(loss_name);
      const Objective f(data, loss, 0.03, 7);
      const Eigen::Index n = f.dimension();
      std::vector<Eigen::VectorXd> points;
      for (int s = 0; s < 5; ++s) {
        points.push_back(gaussian_vector(n, 70 + static_cast<std::uint64_t>(s), 0.6));
      }
      std::vector<std::pair<int, int>> wanted;  // (partition, point)
      for (int t = 0; t < 17; ++t) {
        wanted.emplace_back(4, t % 5);
      }
      for (const auto& extra :
           {std::pair{6, 1}, std::pair{0, 3}, std::pair{2, 2}, std::pair{2, 2}}) {
        wanted.push_back(extra);
      }
      for (WorkerPool* pool : {static_cast<WorkerPool*>(nullptr), &two}) {
        INFO(loss_name << (sparse ? ", sparse" : ", dense") << (pool ? ", pool" : ""));
        std::vector<Eigen::VectorXd> outs(wanted.size());
        std::vector<Objective::PartitionTask> tasks;
        for (std::size_t t = 0; t < wanted.size(); ++t) {
          tasks.push_back(
              {wanted[t].first, &points[static_cast<std::size_t>(wanted[t].second)], &outs[t]});
        }
        f.partition_gradients_many(tasks, pool);
        bool all_same = true;
        for (std::size_t t = 0; t < wanted.size(); ++t) {
          Eigen::VectorXd expected(n);
          f.partition_gradient(
              wanted[t].first, points[static_cast<std::size_t>(wanted[t].second)], expected);
          all_same = all_same && same_bytes(outs[t], expected);
        }
        CHECK(all_same);
        ++cases;
      }
    }
  }
  CHECK(cases == 4 * 2 * 2);
}

TEST_CASE(
    "models: evaluate_many reads the data once for the linear losses (sparse: per group of 16 x), "
    "once per x otherwise",
    "[models][objective][many]") {
  using stragglersim::models::data_bytes_read;
  for (const std::string loss_name : kManyLosses) {
    for (const bool sparse : {false, true}) {
      const auto data = many_data(61, 9, loss_name, sparse, 5);
      const auto loss = many_loss(loss_name);
      const Objective f(data, loss, 0.01, 5);
      std::int64_t pass = 0;
      for (int j = 0; j < 5; ++j) pass += data->stored_bytes(f.partition(j));
      const Eigen::Index n = loss->parameter_count(9);
      for (const std::size_t columns : {1, 4, 16, 17}) {
        INFO(loss_name << (sparse ? ", sparse" : ", dense") << ", S = " << columns);
        std::vector<Eigen::VectorXd> points(columns, gaussian_vector(n, 3));
        std::vector<Eigen::MatrixXd> gradients(columns);
        std::vector<const Eigen::VectorXd*> xs;
        std::vector<Eigen::MatrixXd*> outs;
        for (std::size_t s = 0; s < columns; ++s) {
          xs.push_back(&points[s]);
          outs.push_back(&gradients[s]);
        }
        const std::int64_t before = data_bytes_read();
        (void)f.evaluate_many(xs, outs);
        // Sparse rows are walked once per group of at most kSparseWidest (16) columns.
        const auto walks = static_cast<std::int64_t>(sparse ? (columns + 15) / 16 : 1);
        const std::int64_t passes =
            loss->traits().scalar_margin ? walks : static_cast<std::int64_t>(columns);
        CHECK(data_bytes_read() - before == passes * pass);
      }
    }
  }
}

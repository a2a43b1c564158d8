#include "sim/training_loop.h"

#include <fmt/format.h>

#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "codes/cyclic_mds_code.h"
#include "codes/cyclic_repetition_code.h"
#include "codes/fractional_repetition_code.h"
#include "codes/proportional_cyclic_code.h"
#include "codes/uncoded_code.h"
#include "models/base/random_stream.h"
#include "models/libsvm_reader.h"
#include "models/softmax_network.h"
#include "sim/backends/simulated_backend.h"
#include "tests/test_support.h"

namespace stragglersim::sim {
namespace {

/// Writes a small logistic LIBSVM file (labels ±1, about half the features zero) and returns
/// its path.
std::filesystem::path write_libsvm(int rows, int features, std::uint64_t seed) {
  // A folder of this process's own: test cases run as parallel processes, and several of them
  // write the file of one seed.
  const auto path =
      stragglersim::testing::scratch_dir("training_loop_test", fmt::format("data_{}", seed)) /
      "data.svm";
  std::ofstream out(path);
  RandomEngine rng(seed);
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_real_distribution<double> unit;
  for (int i = 0; i < rows; ++i) {
    const int label = unit(rng) < 0.5 ? -1 : 1;
    out << (label > 0 ? "+1" : "-1");
    for (int j = 1; j <= features; ++j) {
      if (unit(rng) < 0.5) {
        out << fmt::format(" {}:{:.6f}", j, normal(rng) + 0.4 * label);
      }
    }
    out << "\n";
  }
  return path;
}

struct Run {
  std::vector<TraceRow> rows;
};

Run train_scheme(const std::shared_ptr<const models::Objective>& objective,
                 Scheme scheme,
                 double step,
                 int iterations,
                 std::uint64_t seed,
                 bool nesterov = false,
                 const Eigen::VectorXd* x0 = nullptr) {
  auto cluster = std::make_unique<SimulatedCluster>(
      std::make_unique<ShiftedExponentialDelay>(
          scheme.code->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      scheme.rule,
      StragglerPolicy::kCancel,
      seed);
  SimulatedBackend backend(objective, scheme, std::move(cluster));
  std::unique_ptr<Optimizer> opt;
  Eigen::VectorXd start =
      x0 != nullptr ? *x0 : Eigen::VectorXd(Eigen::VectorXd::Zero(objective->dimension()));
  if (nesterov) {
    opt = std::make_unique<Nesterov>(std::move(start), step);
  } else {
    opt = std::make_unique<GradientDescent>(std::move(start), step);
  }
  Run run;
  train(*objective,
        nullptr,
        *opt,
        backend,
        TrainingOptions{static_cast<std::uint64_t>(iterations)},
        [&](const TraceRow& row) { run.rows.push_back(row); });
  return run;
}

}  // namespace

TEST_CASE("sim: uncoded GD on a LIBSVM file equals plain full-batch GD to 1e-10",
          "[sim][training]") {
  const int m = 300;
  const int p = 12;
  const int n = 6;
  const double l2 = 1e-3;
  const double step = 0.8;
  const int iterations = 60;
  auto data =
      std::make_shared<models::Dataset>(models::read_libsvm(write_libsvm(m, p, 17).string()));
  REQUIRE(data->rows() == m);
  std::shared_ptr<const models::LossModel> loss = models::make_logistic_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, l2, n);

  // The independent computation: a direct Eigen loop over the whole data matrix.
  const Eigen::MatrixXd a = std::get<models::DenseRows>(data->features);
  const Eigen::VectorXd& b = data->labels;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  std::vector<double> reference;
  for (int t = 0; t <= iterations; ++t) {
    const Eigen::ArrayXd margin = b.array() * (a * x).array();
    const double f = (1.0 + (-margin).exp()).log().mean() + 0.5 * l2 * x.squaredNorm();
    reference.push_back(f);
    const Eigen::ArrayXd sigma = 1.0 / (1.0 + margin.exp());  // σ(−b aᵀx)
    const Eigen::VectorXd g = -(a.transpose() * (b.array() * sigma).matrix()) / m + l2 * x;
    x -= step * g;
  }

  const auto uncoded = std::make_shared<codes::UncodedCode>(n);
  Scheme plain{uncoded, std::make_shared<AllStopping>(n), DecoderKind::kExact};
  const Run run = train_scheme(objective, plain, step, iterations, 3);
  REQUIRE(run.rows.size() == static_cast<std::size_t>(iterations + 1));
  for (int t = 0; t <= iterations; ++t) {
    INFO("iteration " << t);
    CHECK(std::abs(run.rows[static_cast<std::size_t>(t)].loss -
                   reference[static_cast<std::size_t>(t)]) <=
          1e-10 * std::abs(reference[static_cast<std::size_t>(t)]));
  }
  CHECK(run.rows.back().loss < 0.9 * run.rows.front().loss);

  // Exact FRC: the same losses, only the times differ.
  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(n, 2);
  Scheme exact{frc, std::make_shared<DecodableStopping>(frc), DecoderKind::kExact};
  const Run coded = train_scheme(objective, exact, step, iterations, 3);
  bool some_time_differs = false;
  for (std::size_t t = 0; t < run.rows.size(); ++t) {
    CHECK(coded.rows[t].loss == Approx(run.rows[t].loss).epsilon(1e-13));
    CHECK(coded.rows[t].decoding_error == 0.0);
    some_time_differs = some_time_differs || coded.rows[t].time != run.rows[t].time;
  }
  CHECK(some_time_differs);
}

TEST_CASE("sim: exact codes train the mlp like uncoded to 1e-12 per iteration",
          "[sim][training][mlp]") {
  // 60 rows of 5 features, 3 classes; an mlp 5 -> 6 (tanh) -> 3, 6 partitions.
  const int n = 6;
  RandomEngine rng(23);
  boost::random::normal_distribution<double> normal;
  models::DenseRows a(60, 5);
  Eigen::VectorXd b(60);
  for (Eigen::Index i = 0; i < 60; ++i) {
    b[i] = static_cast<double>(i % 3);
    for (Eigen::Index j = 0; j < 5; ++j) {
      a(i, j) = normal(rng) + (j == i % 3 ? 1.0 : 0.0);
    }
  }
  auto data = std::make_shared<models::Dataset>(a, b);
  models::SoftmaxNetworkOptions o;
  o.classes = 3;
  o.hidden = {6};
  o.activation = models::Activation::kTanh;
  o.bias = true;
  std::shared_ptr<const models::LossModel> net = models::make_softmax_network(o);
  auto objective = std::make_shared<models::Objective>(data, net, 1e-3, n);
  const Eigen::VectorXd x0 = net->initial_point(5, 99);
  const int iterations = 30;
  const auto uncoded = std::make_shared<codes::UncodedCode>(n);
  Scheme plain{uncoded, std::make_shared<AllStopping>(n), DecoderKind::kExact};
  const Run reference = train_scheme(objective, plain, 0.5, iterations, 3, false, &x0);
  REQUIRE(reference.rows.size() == static_cast<std::size_t>(iterations + 1));
  CHECK(reference.rows.back().loss < 0.8 * reference.rows.front().loss);

  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(n, 2);
  const auto crc = std::make_shared<codes::CyclicRepetitionCode>(n, 2, 7);
  const auto mds = std::make_shared<codes::CyclicMdsCode>(n, 1);
  // Unequal loads (3, 3, 6, 2, 1, 3 of the 18 copies), exact from any 4 workers.
  const auto proportional_crc =
      std::make_shared<codes::ProportionalCyclicCode>(codes::ProportionalCyclicCode::Options{
          .workers = n, .s = 2, .factors = {1.0, 1.0, 0.5, 2.0, 3.0, 1.0}, .seed = 4});
  for (const std::shared_ptr<const codes::GradientCode>& code :
       std::vector<std::shared_ptr<const codes::GradientCode>>{frc, crc, mds, proportional_crc}) {
    Scheme exact{code, std::make_shared<DecodableStopping>(code), DecoderKind::kExact};
    const Run coded = train_scheme(objective, exact, 0.5, iterations, 3, false, &x0);
    REQUIRE(coded.rows.size() == reference.rows.size());
    for (std::size_t t = 0; t < coded.rows.size(); ++t) {
      INFO(code->name() << " iteration " << t);
      CHECK(std::abs(coded.rows[t].loss - reference.rows[t].loss) <=
            1e-12 * std::abs(reference.rows[t].loss));
    }
  }
}

TEST_CASE("sim: ErasureHead trains with an inexact gradient and reports its error",
          "[sim][training]") {
  const int n = 8;
  auto data =
      std::make_shared<models::Dataset>(models::read_libsvm(write_libsvm(400, 10, 5).string()));
  std::shared_ptr<const models::LossModel> loss = models::make_logistic_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 0.0, n);
  const auto frc = std::make_shared<codes::FractionalRepetitionCode>(n, 2);
  Scheme eh{frc, std::make_shared<FirstRStopping>(3), DecoderKind::kOptimal};
  const Run run = train_scheme(objective, eh, 1.0, 80, 11);
  double erased = 0.0;
  for (std::size_t t = 1; t < run.rows.size(); ++t) {
    const auto& row = run.rows[t];
    CHECK(row.workers_heard == 3);
    // Each erased group of two partitions adds 2 to ‖α − 1‖².
    CHECK(row.decoding_error == Approx(static_cast<double>(n - row.partitions_covered)));
    CHECK(row.partitions_covered % 2 == 0);
    erased += row.decoding_error;
  }
  CHECK(erased > 0.0);
  CHECK(run.rows.back().loss < 0.8 * run.rows.front().loss);
}

TEST_CASE("sim: the gradient error column is the error of the estimate the step used",
          "[sim][training]") {
  // Every row is (a = 1, b = 2), so every partition has the same gradient (1/m)·(x − 2)·rows:
  // an estimate from c of k partitions is (c/k)∇F and, with λ₂ added exactly,
  // ‖ĝ − ∇f‖ = (1 − c/k)‖∇F(x)‖ = (1 − c/k)·|x − 2| at the query point x = x_{t−1}.
  const int n = 10;
  auto data = std::make_shared<models::Dataset>(Eigen::MatrixXd::Ones(100, 1),
                                                Eigen::VectorXd::Constant(100, 2.0));
  std::shared_ptr<const models::LossModel> loss = models::make_least_squares_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 0.5, n);
  const auto code = std::make_shared<codes::UncodedCode>(n);
  Scheme scheme{code, std::make_shared<FirstRStopping>(4), DecoderKind::kOptimal};
  const Run run = train_scheme(objective, scheme, 0.5, 12, 3);
  CHECK_FALSE(run.rows[0].gradient_error);
  for (std::size_t t = 1; t < run.rows.size(); ++t) {
    const auto& row = run.rows[t];
    // f(x) = ½(x − 2)² + ¼x²: ∇F = x − 2, ∇f = 1.5x − 2 < 0 on the run (x rises from 0 towards
    // 0.4·2/0.9 < 4/3), so the previous row's ‖∇f‖ gives x_{t−1} = (2 − ‖∇f‖)/1.5.
    const double grad_f = run.rows[t - 1].grad_norm;
    const double x_prev = (2.0 - grad_f) / 1.5;
    REQUIRE(row.gradient_error);
    REQUIRE(row.gradient_error_relative);
    CHECK(row.partitions_covered == 4);
    const double fraction = 1.0 - row.partitions_covered / static_cast<double>(n);
    CHECK(*row.gradient_error == Approx(fraction * (2.0 - x_prev)).epsilon(1e-10));
    CHECK(*row.gradient_error_relative == Approx(*row.gradient_error / grad_f).epsilon(1e-12));
  }
  // Nesterov does not compute ∇f at its query point: the column stays empty.
  const Run nesterov = train_scheme(objective, scheme, 0.5, 3, 3, true);
  CHECK_FALSE(nesterov.rows[2].gradient_error);
}

TEST_CASE("sim: Nesterov matches an independent accelerated loop", "[sim][training]") {
  const int n = 4;
  auto data =
      std::make_shared<models::Dataset>(models::read_libsvm(write_libsvm(200, 6, 9).string()));
  std::shared_ptr<const models::LossModel> loss = models::make_least_squares_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 0.01, n);
  const double step = 1.0 / objective->smoothness();
  const auto uncoded = std::make_shared<codes::UncodedCode>(n);
  Scheme plain{uncoded, std::make_shared<AllStopping>(n), DecoderKind::kExact};
  const Run run = train_scheme(objective, plain, step, 40, 1, /*nesterov=*/true);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(objective->dimension());
  Eigen::VectorXd y = x;
  for (int t = 0; t < 40; ++t) {
    CHECK(run.rows[static_cast<std::size_t>(t)].loss == Approx(objective->value(x)).epsilon(1e-12));
    const Eigen::VectorXd prev = x;
    x = y - step * objective->gradient(y);
    y = x + (static_cast<double>(t) / (t + 3.0)) * (x - prev);
  }
}

TEST_CASE("sim: a diverging step is reported and not written", "[sim][training]") {
  const int n = 4;
  auto data =
      std::make_shared<models::Dataset>(models::read_libsvm(write_libsvm(100, 6, 2).string()));
  std::shared_ptr<const models::LossModel> loss = models::make_least_squares_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 0.0, n);
  const auto uncoded = std::make_shared<codes::UncodedCode>(n);
  Scheme plain{uncoded, std::make_shared<AllStopping>(n), DecoderKind::kExact};
  std::vector<TraceRow> rows;
  auto cluster = std::make_unique<SimulatedCluster>(
      std::make_unique<ShiftedExponentialDelay>(
          uncoded->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      plain.rule,
      StragglerPolicy::kCancel,
      1);
  SimulatedBackend backend(objective, plain, std::move(cluster));
  GradientDescent gd(Eigen::VectorXd::Zero(objective->dimension()), 1e3 / objective->smoothness());
  CHECK_THROWS_AS(train(*objective,
                        nullptr,
                        gd,
                        backend,
                        TrainingOptions{5000},
                        [&](const TraceRow& r) { rows.push_back(r); }),
                  NumericalError);
  REQUIRE_FALSE(rows.empty());
  for (const auto& r : rows) {
    CHECK(std::isfinite(r.loss));
  }
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {
namespace {

/// Every worker takes `seconds` in every iteration: zero spread.
class ConstantDelay final : public DelayModel {
 public:
  ConstantDelay(int workers, double seconds) : workers_(workers), seconds_(seconds) {}
  [[nodiscard]] std::string name() const override { return "constant"; }
  [[nodiscard]] int workers() const override { return workers_; }
  void sample(std::uint64_t /*iteration*/, RandomEngine& /*rng*/, std::span<double> out) override {
    std::fill(out.begin(), out.end(), seconds_);
  }
  [[nodiscard]] double cdf(int /*worker*/, double t) const override {
    return t >= seconds_ ? 1.0 : 0.0;
  }
  [[nodiscard]] double mean(int /*worker*/) const override { return seconds_; }
  [[nodiscard]] double variance(int /*worker*/) const override { return 0.0; }
  [[nodiscard]] double lower_bound(int /*worker*/) const override { return seconds_; }

 private:
  int workers_;
  double seconds_;
};

std::shared_ptr<const models::Objective> small_logistic(int n) {
  auto data =
      std::make_shared<models::Dataset>(models::read_libsvm(write_libsvm(240, 8, 23).string()));
  return std::make_shared<models::Objective>(data, models::make_logistic_loss(), 1e-3, n);
}

std::unique_ptr<DelayModel> spread_delays(int n) {
  return std::make_unique<ShiftedExponentialDelay>(
      n, 1.0, ShiftedExponentialDelay::Options{.shift = 0.2, .rate = 1.0});
}

Run train_sync(const std::shared_ptr<const models::Objective>& objective,
               std::unique_ptr<DelayModel> delays,
               std::shared_ptr<const StoppingRule> rule,
               int iterations,
               std::optional<MinibatchOptions> minibatch = std::nullopt,
               models::WorkerPool* pool = nullptr) {
  const int n = delays->workers();
  Scheme scheme{std::make_shared<codes::UncodedCode>(n), rule, DecoderKind::kOptimal};
  auto cluster =
      std::make_unique<SimulatedCluster>(std::move(delays), rule, StragglerPolicy::kCancel, 5);
  SimulatedBackend backend(objective, scheme, std::move(cluster), pool, minibatch);
  GradientDescent gd(Eigen::VectorXd::Zero(objective->dimension()), 0.7);
  Run run;
  train(*objective,
        nullptr,
        gd,
        backend,
        TrainingOptions{static_cast<std::uint64_t>(iterations), pool},
        [&](const TraceRow& row) { run.rows.push_back(row); });
  return run;
}

Run train_async(const std::shared_ptr<const models::Objective>& objective,
                std::unique_ptr<DelayModel> delays,
                UpdateMode mode,
                int k,
                int iterations,
                AsynchronousOptions options = {}) {
  const int n = delays->workers();
  const codes::UncodedCode code(n);
  AsynchronousCluster cluster(std::move(delays), mode, k, 5);
  GradientDescent gd(Eigen::VectorXd::Zero(objective->dimension()), 0.7);
  options.run.iterations = static_cast<std::uint64_t>(iterations);
  Run run;
  train_asynchronous(*objective, nullptr, code, gd, cluster, options, [&](const TraceRow& row) {
    run.rows.push_back(row);
  });
  return run;
}

}  // namespace

TEST_CASE("sim: K-sync with K = n is uncoded GD bit for bit", "[sim][training][async]") {
  const int n = 4;
  const auto objective = small_logistic(n);
  const Run all = train_sync(objective, spread_delays(n), std::make_shared<AllStopping>(n), 30);
  const Run k_sync =
      train_sync(objective, spread_delays(n), std::make_shared<FirstRStopping>(n), 30);
  REQUIRE(all.rows.size() == k_sync.rows.size());
  for (std::size_t t = 0; t < all.rows.size(); ++t) {
    REQUIRE(all.rows[t].loss == k_sync.rows[t].loss);
    REQUIRE(all.rows[t].time == k_sync.rows[t].time);
  }
}

TEST_CASE("sim: K-async with K = n equals synchronous GD bit for bit", "[sim][training][async]") {
  const int n = 4;
  const auto objective = small_logistic(n);
  // Zero spread: every worker takes 0.25 s, every update is a synchronous step.
  const Run sync = train_sync(
      objective, std::make_unique<ConstantDelay>(n, 0.25), std::make_shared<AllStopping>(n), 30);
  const Run async =
      train_async(objective, std::make_unique<ConstantDelay>(n, 0.25), UpdateMode::kKAsync, n, 30);
  REQUIRE(sync.rows.size() == async.rows.size());
  for (std::size_t t = 0; t < sync.rows.size(); ++t) {
    REQUIRE(sync.rows[t].loss == async.rows[t].loss);
    REQUIRE(sync.rows[t].time == async.rows[t].time);
    REQUIRE(sync.rows[t].gradient_error == async.rows[t].gradient_error);
    if (t > 0) {
      REQUIRE(async.rows[t].staleness_max == 0.0);
      REQUIRE(async.rows[t].decoding_error == 0.0);
    }
  }
  // Random delays: K = n still waits for everyone, at the same times.
  const Run sync_spread =
      train_sync(objective, spread_delays(n), std::make_shared<AllStopping>(n), 30);
  const Run async_spread = train_async(objective, spread_delays(n), UpdateMode::kKAsync, n, 30);
  for (std::size_t t = 0; t < sync_spread.rows.size(); ++t) {
    REQUIRE(sync_spread.rows[t].loss == async_spread.rows[t].loss);
    REQUIRE(sync_spread.rows[t].time == async_spread.rows[t].time);
  }
}

TEST_CASE("sim: asynchronous SGD records its staleness and still descends",
          "[sim][training][async]") {
  const int n = 6;
  const auto objective = small_logistic(n);
  for (const UpdateMode mode :
       {UpdateMode::kKBatchSync, UpdateMode::kKAsync, UpdateMode::kKBatchAsync}) {
    const Run run = train_async(objective, spread_delays(n), mode, 1, 120);
    double largest = 0.0;
    for (std::size_t t = 1; t < run.rows.size(); ++t) {
      const TraceRow& row = run.rows[t];
      REQUIRE(row.staleness_mean.has_value());
      REQUIRE(*row.staleness_mean >= 0.0);
      REQUIRE(*row.staleness_max >= *row.staleness_mean);
      REQUIRE(row.workers_heard == 1);
      // One gradient scaled by n/K = 6: α has one entry 6, the others 0.
      REQUIRE(row.decoding_error == Approx(25.0 + 5.0));
      largest = std::max(largest, *row.staleness_max);
    }
    CHECK(run.rows.back().loss < 0.9 * run.rows.front().loss);
    CHECK((mode == UpdateMode::kKBatchSync ? largest == 0.0 : largest > 0.0));
  }
}

TEST_CASE("sim: the inverse staleness step changes only stale updates", "[sim][training][async]") {
  const int n = 4;
  const auto objective = small_logistic(n);
  AsynchronousOptions inverse;
  inverse.staleness_step = StalenessStep::kInverse;
  // K-batch-sync never uses a stale gradient: the same bytes with either step.
  const Run a = train_async(objective, spread_delays(n), UpdateMode::kKBatchSync, 2, 40);
  const Run b = train_async(objective, spread_delays(n), UpdateMode::kKBatchSync, 2, 40, inverse);
  for (std::size_t t = 0; t < a.rows.size(); ++t) {
    REQUIRE(a.rows[t].loss == b.rows[t].loss);
  }
  // K-async: the first update whose gradient is stale is where the losses part.
  const Run c = train_async(objective, spread_delays(n), UpdateMode::kKAsync, 1, 40);
  const Run d = train_async(objective, spread_delays(n), UpdateMode::kKAsync, 1, 40, inverse);
  std::size_t first_stale = 0;
  for (std::size_t t = 1; t < c.rows.size() && first_stale == 0; ++t) {
    if (*c.rows[t].staleness_max > 0.0) {
      first_stale = t;
    }
  }
  REQUIRE(first_stale > 0);
  for (std::size_t t = 0; t < first_stale; ++t) {
    REQUIRE(c.rows[t].loss == d.rows[t].loss);
  }
  CHECK(c.rows[first_stale].loss != d.rows[first_stale].loss);
}

TEST_CASE("sim: minibatch gradients are the same bytes for every thread count",
          "[sim][training][batch]") {
  const int n = 4;
  const auto objective = small_logistic(n);  // 60 rows per partition
  models::WorkerPool serial(1);
  models::WorkerPool three(3);
  const MinibatchOptions batch{10, 21};
  const Run s1 = train_sync(
      objective, spread_delays(n), std::make_shared<FirstRStopping>(3), 25, batch, &serial);
  const Run s3 = train_sync(
      objective, spread_delays(n), std::make_shared<FirstRStopping>(3), 25, batch, &three);
  const Run full = train_sync(objective, spread_delays(n), std::make_shared<FirstRStopping>(3), 25);
  for (std::size_t t = 0; t < s1.rows.size(); ++t) {
    REQUIRE(s1.rows[t].loss == s3.rows[t].loss);
    REQUIRE(s1.rows[t].time == full.rows[t].time);  // sampling draws nothing from the delay stream
  }
  CHECK(s1.rows[5].loss != full.rows[5].loss);
  CHECK(s1.rows.back().loss < 0.9 * s1.rows.front().loss);
  AsynchronousOptions async_batch;
  async_batch.minibatch = batch;
  async_batch.run.pool = &three;
  const Run a3 = train_async(objective, spread_delays(n), UpdateMode::kKAsync, 2, 25, async_batch);
  async_batch.run.pool = &serial;
  const Run a1 = train_async(objective, spread_delays(n), UpdateMode::kKAsync, 2, 25, async_batch);
  for (std::size_t t = 0; t < a1.rows.size(); ++t) {
    REQUIRE(a1.rows[t].loss == a3.rows[t].loss);
  }
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {
namespace {

Run train_time_optimal(const std::shared_ptr<const models::Objective>& objective,
                       std::unique_ptr<DelayModel> delays,
                       const UpdateShape& shape,
                       int iterations,
                       AsynchronousOptions options = {}) {
  const int n = delays->workers();
  const codes::UncodedCode code(n);
  AsynchronousCluster cluster(std::move(delays), shape, 5);
  GradientDescent gd(Eigen::VectorXd::Zero(objective->dimension()), 0.7);
  options.run.iterations = static_cast<std::uint64_t>(iterations);
  Run run;
  train_asynchronous(*objective, nullptr, code, gd, cluster, options, [&](const TraceRow& row) {
    run.rows.push_back(row);
  });
  return run;
}

UpdateShape optimal_method(UpdateMode mode, int k) {
  UpdateShape s;
  s.mode = mode;
  s.k = k;
  return s;
}

}  // namespace

TEST_CASE("sim: Rennala and Malenia with B = n and equal times are synchronous SGD bit for bit",
          "[sim][training][async][time_optimal]") {
  const int n = 4;
  const auto objective = small_logistic(n);  // 60 rows per partition
  const MinibatchOptions batch{10, 21};
  const Run sync = train_sync(objective,
                              std::make_unique<ConstantDelay>(n, 0.25),
                              std::make_shared<AllStopping>(n),
                              30,
                              batch);
  AsynchronousOptions options;
  options.minibatch = batch;
  for (const UpdateMode mode : {UpdateMode::kRennala, UpdateMode::kMalenia}) {
    for (const bool stop : {false, true}) {
      UpdateShape shape = optimal_method(mode, n);
      shape.stop_stale = stop;
      const Run method = train_time_optimal(
          objective, std::make_unique<ConstantDelay>(n, 0.25), shape, 30, options);
      REQUIRE(method.rows.size() == sync.rows.size());
      for (std::size_t t = 0; t < sync.rows.size(); ++t) {
        REQUIRE(method.rows[t].loss == sync.rows[t].loss);
        REQUIRE(method.rows[t].time == sync.rows[t].time);
        REQUIRE(method.rows[t].grad_norm == sync.rows[t].grad_norm);
      }
    }
  }
}

TEST_CASE("sim: Ringmaster without a threshold is K-async with K = 1 bit for bit",
          "[sim][training][async][time_optimal]") {
  const int n = 4;
  const auto objective = small_logistic(n);
  const Run async = train_async(objective, spread_delays(n), UpdateMode::kKAsync, 1, 40);
  const Run ringmaster = train_time_optimal(
      objective, spread_delays(n), optimal_method(UpdateMode::kRingmaster, 1), 40);
  REQUIRE(async.rows.size() == ringmaster.rows.size());
  for (std::size_t t = 0; t < async.rows.size(); ++t) {
    REQUIRE(async.rows[t].loss == ringmaster.rows[t].loss);
    REQUIRE(async.rows[t].time == ringmaster.rows[t].time);
    REQUIRE(async.rows[t].staleness_max == ringmaster.rows[t].staleness_max);
  }
  // A threshold R = 1 uses only fresh gradients and drops the rest.
  UpdateShape fresh = optimal_method(UpdateMode::kRingmaster, 1);
  fresh.max_delay = 1;
  const Run r1 = train_time_optimal(objective, spread_delays(n), fresh, 40);
  for (std::size_t t = 1; t < r1.rows.size(); ++t) {
    REQUIRE(r1.rows[t].staleness_max == 0.0);
  }
  CHECK(r1.rows.back().loss < r1.rows.front().loss);
}

TEST_CASE("sim: shared sampling reads a uniformly drawn partition per computation",
          "[sim][training][async][time_optimal]") {
  const int partitions = 5;
  std::vector<int> counts(partitions, 0);
  const int draws = 20000;
  for (int c = 1; c <= draws; ++c) {
    counts[static_cast<std::size_t>(
        shared_partition(77, c % 3, static_cast<std::uint64_t>(c), partitions))] += 1;
  }
  // Each count is Binomial(draws, 1/5): within 4 standard deviations of draws/5.
  const double sd = std::sqrt(draws * 0.2 * 0.8);
  for (const int count : counts) {
    CHECK(std::abs(count - draws / 5.0) < 4.0 * sd);
  }
  CHECK(shared_partition(77, 1, 9, partitions) == shared_partition(77, 1, 9, partitions));
  // A Rennala run with shared sampling differs from its own-partition run and still descends.
  const int n = 4;
  const auto objective = small_logistic(n);
  UpdateShape own = optimal_method(UpdateMode::kRennala, 3);
  UpdateShape shared = own;
  shared.sampling = Sampling::kShared;
  AsynchronousOptions options;
  options.seed = 12;
  const Run a = train_time_optimal(objective, spread_delays(n), own, 40, options);
  const Run b = train_time_optimal(objective, spread_delays(n), shared, 40, options);
  CHECK(a.rows[10].loss != b.rows[10].loss);
  CHECK(a.rows[10].time == b.rows[10].time);  // sampling draws nothing from the delay stream
  CHECK(b.rows.back().loss < 0.9 * b.rows.front().loss);
}

}  // namespace stragglersim::sim

namespace stragglersim::sim {

TEST_CASE("sim: the simulated backend's fused combination is combine_messages' bytes",
          "[sim][training]") {
  // combine_coded_messages against combine_messages over coded_message's y_i, for codes whose
  // supports have 1 to 5 partitions and values other than 1 (cyclic MDS, cyclic repetition),
  // p on either side of the 512-entry block, weights with zeros, and partition gradients with
  // exact +0 and −0 entries (the sign of a zero sum is part of the bytes).
  std::vector<std::unique_ptr<codes::GradientCode>> all;
  all.push_back(std::make_unique<codes::UncodedCode>(9));
  all.push_back(std::make_unique<codes::FractionalRepetitionCode>(12, 3));
  all.push_back(std::make_unique<codes::CyclicRepetitionCode>(10, 3, 5));
  all.push_back(std::make_unique<codes::CyclicMdsCode>(11, 4));
  boost::random::mt19937_64 engine(41);
  boost::random::normal_distribution<double> normal;
  int cases = 0;
  for (const auto& code : all) {
    for (const Eigen::Index p : {Eigen::Index{1}, Eigen::Index{511}, Eigen::Index{1030}}) {
      Eigen::MatrixXd gradients(p, code->partitions());
      for (Eigen::Index j = 0; j < gradients.cols(); ++j) {
        for (Eigen::Index f = 0; f < p; ++f) {
          const int kind = static_cast<int>((f + 3 * j) % 7);
          gradients(f, j) = kind == 0 ? 0.0 : kind == 1 ? -0.0 : normal(engine);
        }
      }
      const auto gradient = [&](int j) -> Eigen::Ref<const Eigen::VectorXd> {
        return gradients.col(j);
      };
      const Eigen::MatrixXd transposed = gradients.transpose();
      for (int trial = 0; trial < 20; ++trial) {
        codes::Decoding decoding;
        decoding.weights.resize(code->workers());
        for (Eigen::Index i = 0; i < decoding.weights.size(); ++i) {
          decoding.weights(i) =
              (i + trial) % 3 == 0 ? (trial % 2 == 0 ? 0.0 : -0.0) : normal(engine);
        }
        Eigen::VectorXd y(p);
        const Eigen::VectorXd expected = combine_messages(decoding, p, [&](int i) {
          coded_message(*code, i, gradient, y);
          return y;
        });
        const Eigen::VectorXd fused = combine_coded_messages(*code, decoding, p, gradient);
        // A strided expression (a row of the transpose): each Ref holds an evaluated copy.
        const Eigen::VectorXd strided = combine_coded_messages(
            *code, decoding, p, [&](int j) { return transposed.row(j).transpose(); });
        INFO(code->name() << ", p = " << p << ", trial " << trial);
        REQUIRE(fused.size() == p);
        CHECK(std::memcmp(fused.data(), expected.data(), sizeof(double) * p) == 0);
        CHECK(std::memcmp(strided.data(), expected.data(), sizeof(double) * p) == 0);
        ++cases;
      }
    }
  }
  CHECK(cases == 4 * 3 * 20);  // each with both kinds of gradient
}

}  // namespace stragglersim::sim

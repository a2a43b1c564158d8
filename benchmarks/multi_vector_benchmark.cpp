// The multi-vector pass (LossModel::accumulate_many, benchmarks/multi_vector.md): margins and
// gradient sums of S iterates in one pass over the data, against the one-vector pass run S
// times and, for the dense shapes, OpenBLAS's DGEMM on the same products (where the build found
// OpenBLAS). One thread throughout.
//   dense   p = 200 and 1000, 200 MB of rows (beyond every cache), least squares, S = 1 … 32:
//           counter GFLOP/s = 4·p·S flops per row (2p for the dot, 2p for the update)
//   sparse  the covtype shape: 50 000 rows of 15 509 columns, 88 non-zeros per row, logistic,
//           S = 1, 4, 16 and 32: counter column_rows/s = rows × S per second; and a lock-step
//           group's pass (30 partition gradients per iterate) on that shape and on the
//           Amazon-like one (21 000 rows of 241 915 columns, 45 non-zeros per row)

#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <array>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "models/dataset.h"
#include "models/loss_model.h"

#if STRAGGLERSIM_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int threads);
#endif

namespace stragglersim::models {
namespace {

constexpr std::int64_t kDenseBytes = std::int64_t{200} << 20;
constexpr Eigen::Index kSparseRows = 50000;
constexpr Eigen::Index kSparseColumns = 15509;
constexpr int kSparseNonZeros = 88;

/// 200 MB of N(0, 1) rows of p features, labels N(0, 1); built once per p.
const Dataset& dense_data(Eigen::Index p) {
  static std::map<Eigen::Index, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[p];
  if (!slot) {
    const Eigen::Index m = kDenseBytes / (8 * p);
    boost::random::mt19937_64 rng(1);
    boost::random::normal_distribution<double> normal;
    DenseRows a(m, p);
    Eigen::VectorXd b(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      for (Eigen::Index j = 0; j < p; ++j) a(i, j) = normal(rng);
      b[i] = normal(rng);
    }
    slot = std::make_unique<Dataset>(std::move(a), std::move(b));
  }
  return *slot;
}

/// A sparse shape: rows of `non_zeros` entries at uniform columns, N(0, 1) values, labels ±1.
struct SparseShape {
  Eigen::Index rows;
  Eigen::Index columns;
  int non_zeros;
};
/// The covtype shape (index 0) and the Amazon-like one (index 1: 21 000 training rows of 241 915
/// columns, 45 non-zeros per row, the generator's row width).
constexpr std::array<SparseShape, 2> kSparseShapes = {
    {{kSparseRows, kSparseColumns, kSparseNonZeros}, {21000, 241915, 45}}};

/// The data of kSparseShapes[shape]; built once per shape (duplicates summed: a few fewer
/// non-zeros than drawn).
const Dataset& sparse_data(std::size_t shape = 0) {
  static std::map<std::size_t, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[shape];
  if (!slot) {
    const SparseShape& s = kSparseShapes.at(shape);
    boost::random::mt19937_64 rng(2);
    boost::random::normal_distribution<double> normal;
    boost::random::uniform_int_distribution<Eigen::Index> column(0, s.columns - 1);
    std::vector<Eigen::Triplet<double, std::int64_t>> entries;
    entries.reserve(static_cast<std::size_t>(s.rows * s.non_zeros));
    Eigen::VectorXd b(s.rows);
    for (Eigen::Index i = 0; i < s.rows; ++i) {
      for (int k = 0; k < s.non_zeros; ++k) entries.emplace_back(i, column(rng), normal(rng));
      b[i] = normal(rng) >= 0.0 ? 1.0 : -1.0;
    }
    SparseRows a(s.rows, s.columns);
    a.setFromTriplets(entries.begin(), entries.end());
    slot = std::make_unique<Dataset>(std::move(a), std::move(b));
  }
  return *slot;
}

Eigen::MatrixXd iterates(Eigen::Index p, Eigen::Index columns, double scale) {
  boost::random::mt19937_64 rng(3);
  boost::random::normal_distribution<double> normal(0.0, scale);
  Eigen::MatrixXd x(p, columns);
  for (Eigen::Index k = 0; k < x.size(); ++k) x.data()[k] = normal(rng);
  return x;
}

void dense_counters(benchmark::State& state, const Dataset& data, Eigen::Index columns) {
  const double flops = 4.0 * static_cast<double>(data.dimension() * data.rows() * columns);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// The multi-vector pass: range(0) = p, range(1) = S.
void bm_mv_dense_many(benchmark::State& state) {
  const Dataset& data = dense_data(state.range(0));
  const auto loss = make_least_squares_loss();
  const Eigen::MatrixXd x = iterates(data.dimension(), state.range(1), 0.1);
  Eigen::MatrixXd sums(x.rows(), x.cols());
  Eigen::VectorXd losses(x.cols());
  for (auto _ : state) {
    sums.setZero();
    loss->accumulate_many(data, RowRange{0, data.rows()}, x, sums, losses);
    benchmark::DoNotOptimize(sums.data());
  }
  dense_counters(state, data, x.cols());
}

/// The one-vector pass S times.
void bm_mv_dense_single(benchmark::State& state) {
  const Dataset& data = dense_data(state.range(0));
  const auto loss = make_least_squares_loss();
  const Eigen::MatrixXd x = iterates(data.dimension(), state.range(1), 0.1);
  Eigen::VectorXd column;
  Eigen::VectorXd sum(x.rows());
  for (auto _ : state) {
    for (Eigen::Index s = 0; s < x.cols(); ++s) {
      column = x.col(s);
      sum.setZero();
      benchmark::DoNotOptimize(loss->accumulate(data, RowRange{0, data.rows()}, column, sum));
    }
  }
  dense_counters(state, data, x.cols());
}

#if STRAGGLERSIM_HAVE_OPENBLAS
/// Z = A·X (m × S), then G = Aᵀ·(Z − b) (p × S): two DGEMMs, the same flops, the rows read twice.
void bm_mv_dense_dgemm(benchmark::State& state) {
  openblas_set_num_threads(1);
  const Dataset& data = dense_data(state.range(0));
  const auto& a = std::get<DenseRows>(data.features);
  const Eigen::Index m = a.rows();
  const Eigen::Index p = a.cols();
  const Eigen::Index columns = state.range(1);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor x = iterates(p, columns, 0.1);
  RowMajor z(m, columns);
  RowMajor g(p, columns);
  const auto n = static_cast<int>(columns);
  for (auto _ : state) {
    cblas_dgemm(CblasRowMajor,
                CblasNoTrans,
                CblasNoTrans,
                static_cast<int>(m),
                n,
                static_cast<int>(p),
                1.0,
                a.data(),
                static_cast<int>(p),
                x.data(),
                n,
                0.0,
                z.data(),
                n);
    z.colwise() -= data.labels;
    cblas_dgemm(CblasRowMajor,
                CblasTrans,
                CblasNoTrans,
                static_cast<int>(p),
                n,
                static_cast<int>(m),
                1.0,
                a.data(),
                static_cast<int>(p),
                z.data(),
                n,
                0.0,
                g.data(),
                n);
    benchmark::DoNotOptimize(g.data());
  }
  dense_counters(state, data, columns);
}
#endif

void sparse_counters(benchmark::State& state, Eigen::Index columns) {
  state.counters["column_rows/s"] = benchmark::Counter(
      static_cast<double>(kSparseRows * columns), benchmark::Counter::kIsIterationInvariantRate);
}

/// Logistic on the covtype shape: range(0) = S, range(1) = 1 for the multi-vector pass, 0 for
/// the one-vector pass S times.
void bm_mv_sparse(benchmark::State& state) {
  const Dataset& data = sparse_data();
  const auto loss = make_logistic_loss();
  const Eigen::MatrixXd x = iterates(kSparseColumns, state.range(0), 0.05);
  Eigen::MatrixXd sums(x.rows(), x.cols());
  Eigen::VectorXd losses(x.cols());
  Eigen::VectorXd column;
  for (auto _ : state) {
    sums.setZero();
    if (state.range(1) == 1) {
      loss->accumulate_many(data, RowRange{0, data.rows()}, x, sums, losses);
    } else {
      for (Eigen::Index s = 0; s < x.cols(); ++s) {
        column = x.col(s);
        losses[s] = loss->accumulate(data, RowRange{0, data.rows()}, column, sums.col(s));
      }
    }
    benchmark::DoNotOptimize(sums.data());
  }
  sparse_counters(state, x.cols());
}

void dense_shapes(benchmark::internal::Benchmark* b) {
  for (const int p : {200, 1000}) {
    for (const int columns : {1, 4, 8, 16, 32}) b->Args({p, columns});
  }
}

BENCHMARK(bm_mv_dense_many)->Apply(dense_shapes)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_mv_dense_single)->Apply(dense_shapes)->Unit(benchmark::kMillisecond);
#if STRAGGLERSIM_HAVE_OPENBLAS
BENCHMARK(bm_mv_dense_dgemm)->Apply(dense_shapes)->Unit(benchmark::kMillisecond);
#endif
/// What a lock-step group's pass computes (LossModel::accumulate_ranges_many): f and the 30
/// partition gradients ∇F_j of S iterates, range(0) = the shape (kSparseShapes), range(1) = S,
/// range(2) = 1 for the multi-vector pass, 0 for the one-vector pass per partition and iterate.
/// One thread; counter column_rows/s = rows × S per second.
void bm_mv_sparse_partitions(benchmark::State& state) {
  const Dataset& data = sparse_data(static_cast<std::size_t>(state.range(0)));
  const auto loss = make_logistic_loss();
  constexpr int kPartitions = 30;
  std::vector<RowRange> ranges;
  ranges.reserve(kPartitions);
  for (int j = 0; j < kPartitions; ++j) {
    ranges.push_back({data.rows() * j / kPartitions, data.rows() * (j + 1) / kPartitions});
  }
  const Eigen::MatrixXd x = iterates(data.dimension(), state.range(1), 0.05);
  std::vector<Eigen::MatrixXd> gradients(static_cast<std::size_t>(x.cols()),
                                         Eigen::MatrixXd(data.dimension(), kPartitions));
  std::vector<Eigen::MatrixXd*> outputs;
  outputs.reserve(gradients.size());
  for (auto& g : gradients) outputs.push_back(&g);
  Eigen::MatrixXd losses(kPartitions, x.cols());
  Eigen::VectorXd column;
  const auto m = static_cast<double>(data.rows());
  for (auto _ : state) {
    if (state.range(2) == 1) {
      loss->accumulate_ranges_many(data, ranges, x, m, outputs, losses, nullptr);
    } else {
      for (Eigen::Index s = 0; s < x.cols(); ++s) {
        column = x.col(s);
        for (int j = 0; j < kPartitions; ++j) {
          auto out = gradients[static_cast<std::size_t>(s)].col(j);
          out.setZero();
          losses(j, s) = loss->accumulate(data, ranges[static_cast<std::size_t>(j)], column, out);
          out /= m;
        }
      }
    }
    benchmark::DoNotOptimize(gradients.front().data());
  }
  state.counters["column_rows/s"] = benchmark::Counter(
      static_cast<double>(data.rows() * x.cols()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(bm_mv_sparse)
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({4, 1})
    ->Args({16, 0})
    ->Args({16, 1})
    ->Args({32, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_mv_sparse_partitions)
    ->ArgsProduct({{0, 1}, {16}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stragglersim::models

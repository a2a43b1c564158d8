// Gradient replay: one training iteration of the simulated backend (delays, decode, the fused
// loss + partition-gradient pass, the update) against one streaming read of the same arrays
// (the memory-bandwidth floor), on two shapes:
//   dense logistic, m = 50 000, p = 200, n = 32 (FRC d = 2, first 16): an 80 MB matrix;
//   sparse covtype-like logistic, 396 112 × 15 509, 88 non-zeros per row, n = 30 (FRC d = 2,
//   first 15): CSR arrays of 557 MB.
// The argument of the replay and stream-read benchmarks is the thread count (models::WorkerPool).
// The ratios bm_*_iteration/1 ÷ bm_*_stream_read/1 (target ≤ 1.3) and /1 ÷ /2 (target ≥ 1.7) are
// the figures of merit. bm_*_stream_read/1 ÷ /2 is how much the machine's memory bandwidth grows
// with a second core, the bound on /1 ÷ /2 for a pass that runs at its floor.
// benchmarks/peers.py runs them beside numpy and scipy.sparse.

#include <benchmark/benchmark.h>

#include <array>
#include <memory>

#include "codes/fractional_repetition_code.h"
#include "models/synthetic_data.h"
#include "models/tabular_synthetic_data.h"
#include "models/worker_pool.h"
#include "sim/backends/simulated_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::sim {
namespace {

std::shared_ptr<models::Dataset> dense_data() {
  static const auto data =
      std::make_shared<models::Dataset>(models::make_gaussian_mixture({50000, 200, 1.5, 1}));
  return data;
}

std::shared_ptr<models::Dataset> sparse_data() {
  static const auto data = std::make_shared<models::Dataset>(models::make_covtype_like({}));
  return data;
}

// The sum of `count` doubles from `data`, split into kReadChunks tasks on the pool (the argument
// of the stream-read benchmarks is the thread count): the memory floor at that many threads.
constexpr int kReadChunks = 32;
template <class T>
void parallel_read(models::WorkerPool& pool, const T* data, Eigen::Index count) {
  std::array<T, kReadChunks> sums{};
  models::run_tasks(&pool, kReadChunks, [&](int c) {
    const Eigen::Index begin = count * c / kReadChunks;
    const Eigen::Index end = count * (c + 1) / kReadChunks;
    sums[static_cast<std::size_t>(c)] =
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(data + begin, end - begin).sum();
  });
  benchmark::DoNotOptimize(sums);
}

void bm_dense_stream_read(benchmark::State& state) {
  const auto& a = std::get<models::DenseRows>(dense_data()->features);
  models::WorkerPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    parallel_read(pool, a.data(), a.size());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * a.size() * 8);
}

// Reads every array the replay reads: row starts, column indices and values.
void bm_sparse_stream_read(benchmark::State& state) {
  const auto& a = std::get<models::SparseRows>(sparse_data()->features);
  const Eigen::Index nnz = a.nonZeros();
  models::WorkerPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    parallel_read(pool, a.outerIndexPtr(), a.rows() + 1);
    parallel_read(pool, a.innerIndexPtr(), nnz);
    parallel_read(pool, a.valuePtr(), nnz);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          ((a.rows() + 1) * 8 + nnz * 16));
}

// The margins z = Ax alone (Eigen's CSR product, one thread): the same reads as the stream plus
// one gather x[c] per non-zero, without the loss or the scatter of the update. With x larger than
// L1 cache (15 509 doubles here) the gathers, not the stream, set its pace: the floor of the
// replay's access pattern, next to the floor of its bytes.
void bm_sparse_margins(benchmark::State& state) {
  const auto& a = std::get<models::SparseRows>(sparse_data()->features);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(a.cols(), 1e-3);
  Eigen::VectorXd z(a.rows());
  for (auto _ : state) {
    z.noalias() = a * x;
    benchmark::DoNotOptimize(z.data());
  }
}

void replay(benchmark::State& state,
            const std::shared_ptr<models::Dataset>& data,
            int workers,
            int first) {
  models::WorkerPool pool(static_cast<int>(state.range(0)));
  std::shared_ptr<const models::LossModel> loss = models::make_logistic_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 1e-4, workers);
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(workers, 2);
  Scheme scheme{code, std::make_shared<FirstRStopping>(first), DecoderKind::kOptimal};
  auto cluster = std::make_unique<SimulatedCluster>(
      std::make_unique<ShiftedExponentialDelay>(
          code->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      scheme.rule,
      StragglerPolicy::kCancel,
      1);
  SimulatedBackend backend(objective, scheme, std::move(cluster), &pool);
  GradientDescent gd(Eigen::VectorXd::Zero(data->dimension()), 0.1);
  // train() runs the whole loop; run one iteration per benchmark iteration through it, so the
  // measured cost is exactly what a trace row costs (row 0 is paid once per call: subtract it
  // by running 10 iterations and dividing).
  constexpr std::uint64_t kPerCall = 10;
  for (auto _ : state) {
    train(*objective,
          nullptr,
          gd,
          backend,
          TrainingOptions{kPerCall, &pool},
          [](const TraceRow& row) { benchmark::DoNotOptimize(row.loss); });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (kPerCall + 1)));
  state.counters["ms_per_row"] =
      benchmark::Counter(static_cast<double>(state.iterations() * (kPerCall + 1)),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_dense_iteration(benchmark::State& state) { replay(state, dense_data(), 32, 16); }
void bm_sparse_iteration(benchmark::State& state) { replay(state, sparse_data(), 30, 15); }

BENCHMARK(bm_dense_stream_read)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_dense_iteration)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_sparse_stream_read)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_sparse_margins)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_sparse_iteration)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stragglersim::sim

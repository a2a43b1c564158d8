// Gradient replay: one training iteration of the simulated backend (delays, decode, the fused
// loss + partition-gradient pass, the update) on m = 50 000, p = 200, n = 32 dense logistic
// data, against one streaming read of the same 80 MB matrix (the memory-bandwidth floor).
// The ratio bm_gradient_iteration / bm_stream_read is the figure of merit (target <= 1.3).

#include <benchmark/benchmark.h>

#include <memory>

#include "codes/fractional_repetition_code.h"
#include "models/synthetic_data.h"
#include "sim/simulated_backend.h"
#include "sim/training_loop.h"

namespace stragglersim::sim {
namespace {

constexpr Eigen::Index kRows = 50000;
constexpr Eigen::Index kFeatures = 200;
constexpr int kWorkers = 32;

std::shared_ptr<models::Dataset> shared_data() {
  static const auto data =
      std::make_shared<models::Dataset>(models::make_gaussian_mixture({kRows, kFeatures, 1.5, 1}));
  return data;
}

void bm_stream_read(benchmark::State& state) {
  const auto& a = std::get<models::DenseRows>(shared_data()->features);
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.sum());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * a.size() * 8);
}

void bm_gradient_iteration(benchmark::State& state) {
  const auto data = shared_data();
  std::shared_ptr<const models::LossModel> loss = models::make_logistic_loss();
  auto objective = std::make_shared<models::Objective>(data, loss, 1e-4, kWorkers);
  const auto code = std::make_shared<codes::FractionalRepetitionCode>(kWorkers, 2);
  Scheme scheme{code, std::make_shared<FirstRStopping>(16), DecoderKind::kOptimal};
  auto cluster = std::make_unique<SimulatedCluster>(
      std::make_unique<ShiftedExponentialDelay>(
          code->loads(),
          ShiftedExponentialDelay::Options{.shift = 1.0, .rate = 1.0, .tail = TailScaling::kLoad}),
      scheme.rule,
      StragglerPolicy::kCancel,
      1);
  SimulatedBackend backend(objective, scheme, std::move(cluster));
  GradientDescent gd(Eigen::VectorXd::Zero(kFeatures), 0.1);
  // train() runs the whole loop; run one iteration per benchmark iteration through it, so the
  // measured cost is exactly what a trace row costs (row 0 is paid once per call: subtract it
  // by running 10 iterations and dividing).
  constexpr std::uint64_t kPerCall = 10;
  for (auto _ : state) {
    train(*objective, nullptr, gd, backend, TrainingOptions{kPerCall}, [](const TraceRow& row) {
      benchmark::DoNotOptimize(row.loss);
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (kPerCall + 1)));
  state.counters["ms_per_row"] =
      benchmark::Counter(static_cast<double>(state.iterations() * (kPerCall + 1)),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(bm_stream_read)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_gradient_iteration)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stragglersim::sim

// Fitting every delay family (fit/delay_fit.h, fit_delay_models: what `stragglersim fit` runs
// after reading the trace) on `state.range(0)` times of three shapes drawn here with Boost.Random:
//   markov        100 workers, two-state chains (p = 0.05, q = 0.2; 0.7 + Exp(1.9), 3 + Exp(0.5))
//   pareto         20 workers, i.i.d. 0.5 + Pareto(scale 1, shape 2.5)
//   heterogeneous  10 workers, chains (p = 0.03, q = 0.15), a third of the workers 1.6 times
//                  slower
// Real time (the families run on two threads); items_per_second = times per second
// (benchmarks/fit.md, "Time to fit").

#include <benchmark/benchmark.h>

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fit/delay_fit.h"

namespace stragglersim::sim {
namespace {

enum class Shape { kMarkov, kPareto, kHeterogeneous };

/// [worker][iteration] times of `shape`, `rows` in all.
std::vector<std::vector<double>> draw(Shape shape, std::int64_t rows) {
  const std::size_t workers = shape == Shape::kMarkov ? 100 : shape == Shape::kPareto ? 20 : 10;
  const auto iterations = static_cast<std::size_t>(rows) / workers;
  boost::random::mt19937_64 rng(7);
  boost::random::exponential_distribution<double> exp1(1.0);
  boost::random::uniform_01<double> uniform;
  std::vector<std::vector<double>> out(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const double factor = shape == Shape::kHeterogeneous && w < workers / 3 ? 1.6 : 1.0;
    const double to_slow = shape == Shape::kMarkov ? 0.05 : 0.03;
    const double to_normal = shape == Shape::kMarkov ? 0.2 : 0.15;
    bool slow = uniform(rng) < to_slow / (to_slow + to_normal);
    for (std::size_t t = 0; t < iterations; ++t) {
      if (shape == Shape::kPareto) {
        out[w].push_back(0.5 + std::pow(1.0 - uniform(rng), -1.0 / 2.5));
        continue;
      }
      if (t > 0) {
        slow = uniform(rng) < (slow ? 1.0 - to_normal : to_slow);
      }
      const double normal = shape == Shape::kMarkov ? 0.7 + exp1(rng) / 1.9 : 0.5 + exp1(rng) / 1.5;
      const double slowed = shape == Shape::kMarkov ? 3.0 + exp1(rng) / 0.5 : 2.0 + exp1(rng) / 0.7;
      out[w].push_back(factor * (slow ? slowed : normal));
    }
  }
  return out;
}

void run_fit(benchmark::State& state, Shape shape) {
  const auto sequences = draw(shape, state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(fit_delay_models(sequences, true).best);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

void bm_fit_markov(benchmark::State& state) { run_fit(state, Shape::kMarkov); }
void bm_fit_pareto(benchmark::State& state) { run_fit(state, Shape::kPareto); }
void bm_fit_heterogeneous(benchmark::State& state) { run_fit(state, Shape::kHeterogeneous); }

BENCHMARK(bm_fit_markov)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_fit_pareto)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_fit_heterogeneous)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stragglersim::sim

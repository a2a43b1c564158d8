// The test AUC every trace row of a binary loss reports: models::roc_auc (its two classes'
// scores sorted by Boost's pattern-defeating quicksort) against the same statistic with
// std::sort, at the covtype-like test sets' sizes (8 000 scores at 40 000 rows, 79 222 at the
// full 396 112). Reported as items_per_second = scores per second (benchmarks/README.md).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cstdint>
#include <vector>

#include "models/metrics.h"

namespace stragglersim::models {
namespace {

/// Logistic-regression-like test scores: class means ±1, unit spread, fixed seed.
void test_scores(Eigen::Index n, Eigen::VectorXd& scores, Eigen::VectorXd& labels) {
  boost::random::mt19937_64 rng(42);
  boost::random::normal_distribution<double> normal;
  scores.resize(n);
  labels.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    labels[i] = (i % 3 == 0) ? 1.0 : -1.0;
    scores[i] = labels[i] + normal(rng);
  }
}

/// roc_auc's walk over the classes sorted by std::sort (the reference).
double std_sort_auc(const Eigen::VectorXd& scores, const Eigen::VectorXd& labels) {
  std::vector<double> pos;
  std::vector<double> neg;
  for (Eigen::Index i = 0; i < scores.size(); ++i) {
    (labels[i] > 0.0 ? pos : neg).push_back(scores[i]);
  }
  std::sort(pos.begin(), pos.end());
  std::sort(neg.begin(), neg.end());
  std::int64_t below = 0;
  std::int64_t not_above = 0;
  std::int64_t wins_twice = 0;
  const auto negatives = static_cast<std::int64_t>(neg.size());
  for (const double s : pos) {
    while (below < negatives && neg[static_cast<std::size_t>(below)] < s) ++below;
    not_above = std::max(not_above, below);
    while (not_above < negatives && neg[static_cast<std::size_t>(not_above)] <= s) ++not_above;
    wins_twice += below + not_above;
  }
  return static_cast<double>(wins_twice) /
         (2.0 * static_cast<double>(pos.size()) * static_cast<double>(neg.size()));
}

void bm_roc_auc(benchmark::State& state) {
  Eigen::VectorXd scores;
  Eigen::VectorXd labels;
  test_scores(state.range(0), scores, labels);
  if (roc_auc(scores, labels) != std_sort_auc(scores, labels)) {
    state.SkipWithError("roc_auc differs from the std::sort reference");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(roc_auc(scores, labels));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(bm_roc_auc)->Arg(8000)->Arg(79222);

void bm_roc_auc_std_sort(benchmark::State& state) {
  Eigen::VectorXd scores;
  Eigen::VectorXd labels;
  test_scores(state.range(0), scores, labels);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std_sort_auc(scores, labels));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(bm_roc_auc_std_sort)->Arg(8000)->Arg(79222);

}  // namespace
}  // namespace stragglersim::models

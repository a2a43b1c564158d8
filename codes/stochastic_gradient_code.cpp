#include "codes/stochastic_gradient_code.h"

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <numeric>

#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

Eigen::MatrixXd sgc_matrix(int n, int k, int d, std::uint64_t seed) {
  const auto holders = StochasticGradientCode::balanced_assignment(n, k, d, seed);
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n, k);
  for (int j = 0; j < k; ++j) {
    for (const int i : holders[static_cast<std::size_t>(j)]) {
      b(i, j) = 1.0 / d;
    }
  }
  return b;
}

/// Fisher–Yates with Boost draws (std::shuffle's use of the engine is unspecified).
void shuffle(std::vector<int>& v, boost::random::mt19937_64& engine) {
  for (std::size_t t = v.size(); t > 1; --t) {
    boost::random::uniform_int_distribution<std::size_t> pick(0, t - 1);
    std::swap(v[t - 1], v[pick(engine)]);
  }
}

}  // namespace

std::vector<std::vector<int>> StochasticGradientCode::balanced_assignment(int workers,
                                                                          int partitions,
                                                                          int d,
                                                                          std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(workers >= 1 && partitions >= 1, "SGC needs workers, partitions >= 1");
  STRAGGLERSIM_ASSERT(d >= 1 && d <= workers, "SGC needs 1 <= d <= workers");
  boost::random::mt19937_64 engine(seed);
  // Worker i may hold ⌊kd/n⌋ or ⌈kd/n⌉ partitions (the extra ones on a random set of workers).
  std::vector<int> order(static_cast<std::size_t>(workers));
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, engine);
  const int total = partitions * d;
  std::vector<int> capacity(static_cast<std::size_t>(workers), total / workers);
  for (int t = 0; t < total % workers; ++t) {
    ++capacity[static_cast<std::size_t>(order[static_cast<std::size_t>(t)])];
  }
  // Partitions, in a random order, each take the d workers with the most capacity left, ties
  // broken uniformly at random. Taking the largest capacities keeps the remaining degree
  // sequence realisable (Gale–Ryser), so no partition is ever left short, and it spreads every
  // worker's partitions evenly over the others (pair-wise balance).
  std::vector<int> partition_order(static_cast<std::size_t>(partitions));
  std::iota(partition_order.begin(), partition_order.end(), 0);
  shuffle(partition_order, engine);
  std::vector<std::vector<int>> holders(static_cast<std::size_t>(partitions));
  std::vector<int> candidates(static_cast<std::size_t>(workers));
  for (const int j : partition_order) {
    std::iota(candidates.begin(), candidates.end(), 0);
    shuffle(candidates, engine);
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      return capacity[static_cast<std::size_t>(a)] > capacity[static_cast<std::size_t>(b)];
    });
    auto& mine = holders[static_cast<std::size_t>(j)];
    mine.assign(candidates.begin(), candidates.begin() + d);
    for (const int i : mine) {
      int& cap = capacity[static_cast<std::size_t>(i)];
      STRAGGLERSIM_ASSERT(cap > 0, "SGC assignment: capacity exhausted");
      --cap;
    }
  }
  for (auto& h : holders) {
    std::sort(h.begin(), h.end());
  }
  return holders;
}

Validation StochasticGradientCode::Options::validate() const {
  if (auto v = options_check::integer_in_range("d", d, 1, workers)) {
    return v;
  }
  return p ? options_check::in_range("p", *p, 0.0, 0.999999) : std::nullopt;
}

StochasticGradientCode::StochasticGradientCode(const Options& options)
    : StochasticGradientCode(options_check::require_valid(options).workers,
                             options.partitions,
                             options.d,
                             options.seed,
                             options.p) {}

StochasticGradientCode::StochasticGradientCode(int workers,
                                               int partitions,
                                               int d,
                                               std::uint64_t seed,
                                               std::optional<double> straggle_probability)
    : GradientCode(sgc_matrix(workers, partitions, d, seed)), d_(d), p_(straggle_probability) {
  STRAGGLERSIM_ASSERT(!p_ || (*p_ >= 0.0 && *p_ < 1.0), "SGC needs 0 <= p < 1");
}

std::optional<double> StochasticGradientCode::one_step_weight(int heard) const {
  STRAGGLERSIM_ASSERT(heard >= 1, "the one-step weight needs at least one worker heard");
  return p_ ? 1.0 / (1.0 - *p_) : static_cast<double>(workers()) / heard;
}

}  // namespace stragglersim::codes

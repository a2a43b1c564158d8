#include "codes/bernoulli_gradient_code.h"

#include <fmt/format.h>

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

Eigen::MatrixXd bgc_assignment(int n, int k, double d, std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(n >= 1 && k >= 1, "BGC needs workers >= 1 and partitions >= 1");
  STRAGGLERSIM_ASSERT(d > 0.0 && d <= n, "BGC needs 0 < d <= workers");
  boost::random::mt19937_64 engine(seed);
  boost::random::bernoulli_distribution<double> holds(d / n);
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n, k);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      b(i, j) = holds(engine) ? 1.0 : 0.0;
    }
  }
  return b;
}

}  // namespace

Validation BernoulliGradientCode::Options::validate() const {
  if (auto v = options_check::positive("d", d)) {
    return v;
  }
  if (d > workers) {
    return Violation{"d", "out of range", fmt::format("a number in (0, {}]", workers)};
  }
  return std::nullopt;
}

BernoulliGradientCode::BernoulliGradientCode(const Options& options)
    : BernoulliGradientCode(options_check::require_valid(options).workers,
                            options.partitions,
                            options.d,
                            options.seed) {}

BernoulliGradientCode::BernoulliGradientCode(int workers,
                                             int partitions,
                                             double d,
                                             std::uint64_t seed)
    : GradientCode(bgc_assignment(workers, partitions, d, seed), EmptyPartitions::kAllowed),
      d_(d) {}

std::optional<double> BernoulliGradientCode::one_step_weight(int heard) const {
  STRAGGLERSIM_ASSERT(heard >= 1, "the one-step weight needs at least one worker heard");
  return workers() / (d_ * heard);
}

double BernoulliGradientCode::expected_one_step_error(int heard) const {
  STRAGGLERSIM_ASSERT(heard >= 1, "expected one-step error needs at least one worker heard");
  return partitions() * (workers() - d_) / (d_ * heard);
}

}  // namespace stragglersim::codes

#pragma once
// Helpers of the collectives tests (tests/sim/collectives/*_test.cpp).
#include <Eigen/Core>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cstdint>

#include "sim/collectives/collective.h"

namespace stragglersim::sim::collectives::test_support {

/// `elements` × `ranks` contributions, uniform on [−1, 1), from `seed`.
inline Eigen::MatrixXd random_contributions(Eigen::Index elements, int ranks, std::uint32_t seed) {
  boost::random::mt19937 gen(seed);
  boost::random::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Eigen::MatrixXd x(elements, ranks);
  for (Eigen::Index j = 0; j < ranks; ++j) {
    for (Eigen::Index i = 0; i < elements; ++i) {
      x(i, j) = uniform(gen);
    }
  }
  return x;
}

/// Options of `kind` with link (α, B) and intra link (α_in, B_in).
inline CollectiveOptions options_of(CollectiveKind kind,
                                    double alpha,
                                    double bandwidth,
                                    double alpha_in = 0.0,
                                    double bandwidth_in = 1.0) {
  CollectiveOptions o;
  o.kind = kind;
  o.link.latency = alpha;
  o.link.bandwidth = bandwidth;
  o.intra.latency = alpha_in;
  o.intra.bandwidth = bandwidth_in;
  return o;
}

/// Executes `schedule` on `x` and checks nothing: the reduced buffers.
inline Eigen::MatrixXd reduced(const Schedule& schedule, Eigen::MatrixXd x) {
  execute(schedule, x);
  return x;
}

}  // namespace stragglersim::sim::collectives::test_support

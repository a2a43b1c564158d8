#include "codes/cyclic_repetition_code.h"

#include <Eigen/LU>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <vector>

#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

Eigen::MatrixXd crc_assignment(int n, int s, std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(n >= 1 && s >= 0 && s < n, "CRC needs 0 <= s < n");
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(n, n);
  if (s == 0) {
    b.setIdentity();
    return b;
  }
  // H is drawn column by column, row by row, so the stream order is fixed.
  boost::random::mt19937_64 engine(seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd h(s, n);
  for (int j = 0; j + 1 < n; ++j) {
    for (int r = 0; r < s; ++r) {
      h(r, j) = normal(engine);
    }
  }
  h.col(n - 1) = -h.leftCols(n - 1).rowwise().sum();

  Eigen::MatrixXd block(s, s);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < s; ++t) {
      block.col(t) = h.col((i + 1 + t) % n);
    }
    // A generic s × s Gaussian block is invertible; full pivoting keeps the solve as accurate as
    // the block allows.
    const Eigen::VectorXd x = block.fullPivLu().solve(-h.col(i));
    b(i, i) = 1.0;
    for (int t = 0; t < s; ++t) {
      b(i, (i + 1 + t) % n) = x(t);
    }
  }
  return b;
}

}  // namespace

int distinct_workers(std::span<const int> heard, int workers) {
  std::vector<char> seen(static_cast<std::size_t>(workers), 0);
  int count = 0;
  for (const int i : heard) {
    STRAGGLERSIM_ASSERT(i >= 0 && i < workers, "worker out of range");
    char& c = seen[static_cast<std::size_t>(i)];
    count += c == 0 ? 1 : 0;
    c = 1;
  }
  return count;
}

Validation CyclicRepetitionCode::Options::validate() const {
  return options_check::first_of({one_partition_per_worker("crc", workers, partitions),
                                  options_check::integer_in_range("s", s, 0, workers - 1)});
}

CyclicRepetitionCode::CyclicRepetitionCode(const Options& options)
    : CyclicRepetitionCode(options_check::require_valid(options).workers, options.s, options.seed) {
}

CyclicRepetitionCode::CyclicRepetitionCode(int workers, int s, std::uint64_t seed)
    : GradientCode(crc_assignment(workers, s, seed)), s_(s) {}

bool CyclicRepetitionCode::decodable(std::span<const int> heard) const {
  return distinct_workers(heard, workers()) >= workers() - s_;
}

}  // namespace stragglersim::codes

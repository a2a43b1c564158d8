#include "codes/fractional_repetition_code.h"

#include <fmt/format.h>

#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

std::vector<std::vector<int>> frc_supports(int n, int d) {
  STRAGGLERSIM_ASSERT(n >= 1 && d >= 1 && n % d == 0, "FRC needs d | n");
  std::vector<std::vector<int>> supports(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int first = (i / d) * d;
    for (int j = first; j < first + d; ++j) {
      supports[static_cast<std::size_t>(i)].push_back(j);
    }
  }
  return supports;
}

}  // namespace

Validation FractionalRepetitionCode::Options::validate() const {
  if (auto v = one_partition_per_worker("frc", workers, partitions)) {
    return v;
  }
  if (auto v = options_check::integer_in_range("d", d, 1, workers)) {
    return v;
  }
  if (workers % d != 0) {
    return Violation{"d",
                     "replication must divide the workers",
                     fmt::format("a divisor of workers = {}", workers)};
  }
  return std::nullopt;
}

FractionalRepetitionCode::FractionalRepetitionCode(const Options& options)
    : FractionalRepetitionCode(options_check::require_valid(options).workers, options.d) {}

FractionalRepetitionCode::FractionalRepetitionCode(const Options& options, CompactTag /*compact*/)
    : GradientCode(
          Compact{options_check::require_valid(options).workers, options.workers, options.d}),
      d_(options.d) {}

FractionalRepetitionCode::FractionalRepetitionCode(int workers, int d)
    : GradientCode(workers, frc_supports(workers, d)), d_(d) {}

bool FractionalRepetitionCode::decodable(std::span<const int> heard) const {
  std::vector<char> covered(static_cast<std::size_t>(groups()), 0);
  int count = 0;
  for (const int i : heard) {
    char& c = covered[static_cast<std::size_t>(group_of(i))];
    count += c == 0 ? 1 : 0;
    c = 1;
  }
  return count == groups();
}

Decoding FractionalRepetitionCode::decode_optimal(std::span<const int> heard) const {
  // One message per covered group, the first heard: the same estimate as the least-squares
  // decode (α_j ∈ {0, 1}), without a factorisation.
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(workers());
  std::vector<char> covered(static_cast<std::size_t>(groups()), 0);
  for (const int i : heard) {
    char& c = covered[static_cast<std::size_t>(group_of(i))];
    if (c == 0) {
      weights(i) = 1.0;
      c = 1;
    }
  }
  return finish(std::move(weights), 1.0);
}

}  // namespace stragglersim::codes

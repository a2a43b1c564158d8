#include "codes/uncoded_code.h"

#include "models/base/invariant.h"

namespace stragglersim::codes {

namespace {

std::vector<std::vector<int>> identity_supports(int n) {
  STRAGGLERSIM_ASSERT(n >= 1, "uncoded needs at least one worker");
  std::vector<std::vector<int>> supports(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    supports[static_cast<std::size_t>(i)] = {i};
  }
  return supports;
}

}  // namespace

Validation UncodedCode::Options::validate() const {
  if (workers < 1) {
    return Violation{"workers", "out of range", "an integer >= 1"};
  }
  return one_partition_per_worker("uncoded", workers, partitions);
}

UncodedCode::UncodedCode(const Options& options)
    : UncodedCode(options_check::require_valid(options).workers) {}

UncodedCode::UncodedCode(const Options& options, CompactTag /*compact*/)
    : GradientCode(Compact{options_check::require_valid(options).workers, options.workers, 1}) {}

UncodedCode::UncodedCode(int workers) : GradientCode(workers, identity_supports(workers)) {}

bool UncodedCode::decodable(std::span<const int> heard) const {
  return static_cast<int>(heard.size()) == workers();
}

Decoding UncodedCode::decode_optimal(std::span<const int> heard) const {
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(workers());
  for (const int i : heard) {
    weights(i) = 1.0;
  }
  return finish(std::move(weights), 1.0);
}

}  // namespace stragglersim::codes

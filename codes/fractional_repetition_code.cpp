#include "codes/fractional_repetition_code.h"

#include <fmt/format.h>

#include "models/base/invariant.h"

namespace stragglersim::codes {

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

Validation FractionalRepetitionCode::Options::validate() const {
  if (auto v = one_partition_per_worker("frc", workers, partitions)) {
    return v;
  }
  return group_replication(workers, d);
}

FractionalRepetitionCode::FractionalRepetitionCode(const Options& options)
    : FractionalRepetitionCode(options_check::require_valid(options).workers, options.d) {}

FractionalRepetitionCode::FractionalRepetitionCode(const Options& options, CompactTag /*compact*/)
    : GroupCode(Compact{options_check::require_valid(options).workers, options.workers, options.d}),
      d_(options.d) {}

FractionalRepetitionCode::FractionalRepetitionCode(int workers, int d)
    : GroupCode(workers, frc_supports(workers, d)), d_(d) {}

}  // namespace stragglersim::codes

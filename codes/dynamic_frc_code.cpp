#include "codes/dynamic_frc_code.h"

#include "codes/fractional_repetition_code.h"

namespace stragglersim::codes {

Validation DynamicFrcCode::Options::validate() const {
  return options_check::first_of({one_partition_per_worker("dynamic_frc", workers, partitions),
                                  group_replication(workers, d),
                                  options_check::integer_in_range("every", every, 1, 1000000000)});
}

DynamicFrcCode::DynamicFrcCode(const Options& options)
    : GroupCode(options_check::require_valid(options).workers,
                frc_supports(options.workers, options.d)),
      d_(options.d),
      every_(options.every) {}

}  // namespace stragglersim::codes

#include "experiments/config/config_error.h"

#include "models/dataset.h"
#include "sim/scheme.h"

namespace stragglersim::experiments {

int exit_status_of(const std::exception& e) noexcept {
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    return error->exit_status();
  }
  if (dynamic_cast<const sim::NumericalError*>(&e) != nullptr) {
    return kExitNumerical;
  }
  if (dynamic_cast<const models::DataError*>(&e) != nullptr) {
    return kExitBadInput;
  }
  return 1;
}

}  // namespace stragglersim::experiments

#pragma once
// Internal invariants (programming errors, never user mistakes: those are ConfigError in
// experiments/). A failed check throws std::logic_error so tests can observe it.

#include <stdexcept>
#include <string>

#define STRAGGLERSIM_ASSERT(cond, msg)                                 \
  do {                                                                 \
    if (!(cond)) {                                                     \
      throw std::logic_error(std::string("internal error: ") + (msg) + \
                             " [" #cond "] at " __FILE__);             \
    }                                                                  \
  } while (false)

#pragma once
// The exception for user mistakes in configs, command lines and output paths (docs/conventions.md,
// errors). Messages have the shape
//   <file>:<json-pointer>: <problem>; got <value>; expected <constraint or valid values>
// It is an InputError (models/base/error.h): the command line prints "error: <message>" and exits
// with status 2.

#include <exception>
#include <string>

#include "models/base/error.h"

namespace stragglersim::experiments {

class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

/// The exit status for `e`, the one mapping from exceptions to exit statuses (run_cli and the MPI
/// sweep's ranks use it): an Error's own (ConfigError, TraceFileError, RunInterrupted), 2 for
/// models::DataError (a data file), 3 for sim::NumericalError (numerical trouble), 1 (a bug) for
/// any other exception.
int exit_status_of(const std::exception& e) noexcept;

}  // namespace stragglersim::experiments

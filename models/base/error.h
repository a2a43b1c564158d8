#pragma once
// The base of stragglersim's errors (docs/conventions.md, errors): an error a user can cause
// carries the exit status the command line ends with; exit_status_of
// (experiments/config/config_error.h) is the one mapping from an exception to that status.
//   2  bad input (ConfigError, TraceFileError; an output path that cannot be written)
//   130 / 143  interrupted by SIGINT / SIGTERM (128 + signal: RunInterrupted)
// Any other exception is a bug: exit status 1.

#include <stdexcept>
#include <string>

namespace stragglersim {

inline constexpr int kExitBadInput = 2;
inline constexpr int kExitNumerical = 3;

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int exit_status)
      : std::runtime_error(message), exit_status_(exit_status) {}
  /// The command line's exit status for this error.
  [[nodiscard]] int exit_status() const noexcept { return exit_status_; }

 private:
  int exit_status_;
};

/// Bad input of any kind: exit status 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message, kExitBadInput) {}
};

}  // namespace stragglersim

#pragma once
// The one exception type for user mistakes (docs/conventions.md, errors). Messages have the shape
//   <file>:<json-pointer>: <problem>; got <value>; expected <constraint or valid values>
// The command line prints "error: <message>" and exits with status 2.

#include <stdexcept>

namespace stragglersim::experiments {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stragglersim::experiments

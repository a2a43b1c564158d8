#pragma once
// ln Γ(x) without global state. std::lgamma also stores the sign of Γ(x) in the global
// `signgam` (POSIX), a data race when the theory runs on several threads at once (advise's
// candidates on a worker pool); lgamma_r is the same routine, with the sign returned through
// its argument, so the value is std::lgamma's to the bit.

#include <math.h>  // lgamma_r (POSIX; <cmath> need not declare it)

namespace stragglersim::models {

inline double log_gamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace stragglersim::models

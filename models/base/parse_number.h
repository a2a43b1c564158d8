#pragma once
// The one number parser of the text readers (CSV, LIBSVM): std::from_chars, which is
// locale-independent and exact, plus the leading '+' it rejects and LIBSVM labels use ("+1").

#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace stragglersim::models {

/// The whole token as a finite double ("+1", "-2.5e3"); false for anything else, "", "+-1",
/// "nan" and "inf" included.
inline bool parse_finite_double(std::string_view token, double& out) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (token.empty() || token.front() == '-' || token.front() == '+') return false;
  }
  if (token.empty()) return false;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

}  // namespace stragglersim::models

#pragma once
// The number parsers of the text readers (CSV, LIBSVM, traces) and of numeric options:
// std::from_chars, which is locale-independent and exact, over the whole token, plus the leading
// '+' it rejects and LIBSVM labels use ("+1").

#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace stragglersim::models {

/// The whole token as an integer of type T ("12"; for a signed T also "-3"); false for anything
/// else: "", "+1", " 1", "1x", "0x1" and values out of T's range included.
template <typename T>
bool parse_whole_integer(std::string_view token, T& out) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return !token.empty() && ec == std::errc() && ptr == end;
}

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

#pragma once
// Self-checking options structs (the Ceres `Options::IsValid` habit): every code, delay model
// and stopping rule is built from a named-field Options struct whose `validate()` names the
// first violated constraint, so the limits live next to the class and the config layer only
// maps keys to fields. The wording follows the config error format
// "<problem>; got <value>; expected <expected>", with `field` the config key.

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "models/base/invariant.h"

namespace stragglersim {

/// A violated constraint: the field (named as its config key), what is wrong, what is accepted.
struct Violation {
  /// What "got" shows: the field's value, one element of it (`index`), or its length.
  enum class Got { kValue, kElement, kSize };
  std::string field;
  std::string problem;
  std::string expected;
  Got got = Got::kValue;
  std::size_t index = 0;
};

using Validation = std::optional<Violation>;

namespace options_check {

/// x ≥ min ("a number >= min").
inline Validation at_least(const char* field, double x, double min) {
  if (x >= min) {
    return std::nullopt;
  }
  return Violation{field, "out of range", fmt::format("a number >= {}", min)};
}

/// x > 0 ("a number > 0").
inline Validation positive(const char* field, double x) {
  if (x > 0.0) {
    return std::nullopt;
  }
  return Violation{field, "out of range", "a number > 0"};
}

/// min ≤ x ≤ max ("a number in [min, max]").
inline Validation in_range(const char* field, double x, double min, double max) {
  if (x >= min && x <= max) {
    return std::nullopt;
  }
  return Violation{field, "out of range", fmt::format("a number in [{}, {}]", min, max)};
}

/// min ≤ x ≤ max for an integer ("an integer in [min, max]").
inline Validation integer_in_range(const char* field,
                                   std::int64_t x,
                                   std::int64_t min,
                                   std::int64_t max) {
  if (x >= min && x <= max) {
    return std::nullopt;
  }
  return Violation{field, "out of range", fmt::format("an integer in [{}, {}]", min, max)};
}

/// `options`, after asserting that it validates (constructors taking Options call this: a
/// violation there is a programming error, the config layer having checked first).
template <typename Options>
const Options& require_valid(const Options& options) {
  const Validation v = options.validate();
  STRAGGLERSIM_ASSERT(!v, v ? v->field + ": " + v->problem + "; expected " + v->expected : "");
  return options;
}

/// The first violation of a list of checks, in order.
inline Validation first_of(std::initializer_list<Validation> checks) {
  for (const auto& c : checks) {
    if (c) {
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace options_check
}  // namespace stragglersim

#pragma once
// What the factory tables' readers share (code_factories.cpp, delay_factories.cpp,
// stopping_factories.cpp): integer saturation, options validation reported at the key, and the
// per-worker "factors" array of heterogeneous delays and heterogeneity-aware codes.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "experiments/config/factories.h"

namespace stragglersim::experiments {

/// Integer config value saturated to int: an out-of-int value then fails the class's own range
/// check with the config's value in the message.
inline int to_int(std::int64_t x) {
  return static_cast<int>(std::clamp<std::int64_t>(
      x, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

/// `options` once valid, or the violated constraint as a ConfigError at its key (a code's
/// "partitions" at the root of `shape.file`).
template <typename Options>
const Options& checked(JsonReader& reader, const ClusterShape& shape, const Options& options) {
  if (const Validation v = options.validate()) {
    reject(reader, &shape, *v);
  }
  return options;
}

/// The same for options without a top-level field (delays, rules).
template <typename Options>
const Options& checked(JsonReader& reader, const Options& options) {
  if (const Validation v = options.validate()) {
    reject(reader, nullptr, *v);
  }
  return options;
}

/// The required "factors" array of `workers` slowdown factors (JSON types here, values by
/// sim::validate_factors), read from a delay or a code object.
std::vector<double> read_factors(JsonReader& delay, std::size_t workers);

}  // namespace stragglersim::experiments

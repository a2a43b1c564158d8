#pragma once
// Random streams. One `seed` per config; every stream is derived from it by a fixed mixing
// function (SplitMix64 finaliser, Steele et al. 2014) and consumed in a fixed order
// (iteration, then worker), so results never depend on threads, jobs or backend.

#include <boost/random/mersenne_twister.hpp>
#include <cstdint>

namespace stragglersim {

using RandomEngine = boost::random::mt19937_64;

/// SplitMix64 mix of (seed, stream): distinct, well-spread seeds for distinct streams.
[[nodiscard]] constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// Named streams of one run.
enum class Stream : std::uint64_t {
  kDelays = 1,
  kData = 2,
  kCode = 3,
  kSplit = 4,
  kFaults = 5,
  kMinibatch = 6,  ///< the rows of each stochastic gradient (models/objective.h minibatch_seed)
  kInit = 7,       ///< a model's seeded initial point (models/softmax_network.h)
  kSampling = 8,   ///< the partition a shared-sampling computation reads (sim/training_loop.h)
};

[[nodiscard]] inline RandomEngine make_engine(std::uint64_t seed, Stream stream) {
  return RandomEngine(derive_seed(seed, static_cast<std::uint64_t>(stream)));
}

}  // namespace stragglersim

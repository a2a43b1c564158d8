#pragma once
// The outcome of a linear-algebra decode per distinct heard set, computed once. A cyclic code
// decodes from any n − s workers, so a delay-only simulation of n = 256 workers with s = 1 meets
// at most n + 1 distinct stopping sets in 20 000 draws; without the memo each draw pays a fresh
// rank-revealing factorisation of the k × (n − s) matrix B_Kᵀ (tens of milliseconds at n = 256).
//
// The decode runs on the set in ascending worker order, whatever order the workers were heard
// in, so the outcome is a function of the set alone (a decode in another column order can differ
// in the last bits, and the memo's contents would otherwise depend on which order came first).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

class DecodeMemo {
 public:
  /// What the memo keeps of a decode_optimal: its exactness and its covered partitions.
  struct Outcome {
    bool exact = false;
    int partitions_covered = 0;
  };
  /// Memory of the keys (64-bit words, n/64 per set) past which new sets are decoded but not
  /// kept: 2^22 words, 32 MiB.
  static constexpr std::size_t kDefaultWordLimit = std::size_t{1} << 22;

  explicit DecodeMemo(std::shared_ptr<const GradientCode> code,
                      std::size_t word_limit = kDefaultWordLimit);
  /// decode_optimal(heard in ascending order) reduced to its outcome, computed by
  /// decode_outcome (the same exactness and coverage without the SVD that gives the condition
  /// number's value); repeated workers count once. Thread-safe.
  [[nodiscard]] Outcome operator()(std::span<const int> heard) const;
  /// Decodes computed (sets not found in the memo).
  [[nodiscard]] std::uint64_t decodes() const;
  /// Calls answered.
  [[nodiscard]] std::uint64_t lookups() const;

 private:
  struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const noexcept;
  };
  std::shared_ptr<const GradientCode> code_;
  std::size_t word_limit_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::vector<std::uint64_t>, Outcome, KeyHash> memo_;
  mutable std::uint64_t decodes_ = 0;
  mutable std::uint64_t lookups_ = 0;
};

}  // namespace stragglersim::codes

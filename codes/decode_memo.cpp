#include "codes/decode_memo.h"

#include <bit>
#include <utility>

#include "models/base/invariant.h"

namespace stragglersim::codes {

DecodeMemo::DecodeMemo(std::shared_ptr<const GradientCode> code, std::size_t word_limit)
    : code_(std::move(code)), word_limit_(word_limit) {
  STRAGGLERSIM_ASSERT(code_ != nullptr && !code_->compact(), "the memo needs a code that decodes");
}

std::size_t DecodeMemo::KeyHash::operator()(const std::vector<std::uint64_t>& key) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const std::uint64_t word : key) {
    h ^= word + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h = std::rotl(h, 27) * 0x94d049bb133111ebULL;
  }
  return static_cast<std::size_t>(h);
}

DecodeMemo::Outcome DecodeMemo::operator()(std::span<const int> heard) const {
  const auto n = static_cast<std::size_t>(code_->workers());
  std::vector<std::uint64_t> key((n + 63) / 64, 0);
  for (const int i : heard) {
    STRAGGLERSIM_ASSERT(i >= 0 && static_cast<std::size_t>(i) < n, "worker out of range");
    const auto w = static_cast<std::size_t>(i);
    key[w / 64] |= std::uint64_t{1} << (w % 64);
  }
  {
    const std::scoped_lock lock(mutex_);
    ++lookups_;
    if (const auto it = memo_.find(key); it != memo_.end()) {
      return it->second;
    }
  }
  std::vector<int> sorted;
  sorted.reserve(heard.size());
  for (std::size_t w = 0; w < n; ++w) {
    if (((key[w / 64] >> (w % 64)) & 1U) != 0) {
      sorted.push_back(static_cast<int>(w));
    }
  }
  // Only the outcome is kept: no condition number's value (an SVD) is needed to decide it.
  const Decoding d = code_->decode_outcome(sorted);
  const Outcome out{.exact = d.exact, .partitions_covered = d.partitions_covered};
  const std::scoped_lock lock(mutex_);
  ++decodes_;
  if ((memo_.size() + 1) * key.size() <= word_limit_) {
    memo_.emplace(std::move(key), out);
  }
  return out;
}

std::uint64_t DecodeMemo::decodes() const {
  const std::scoped_lock lock(mutex_);
  return decodes_;
}

std::uint64_t DecodeMemo::lookups() const {
  const std::scoped_lock lock(mutex_);
  return lookups_;
}

}  // namespace stragglersim::codes

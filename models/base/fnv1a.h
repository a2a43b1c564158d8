#pragma once
// FNV-1a, 64 bits: a stable, platform-independent hash of bytes (sweep folder names and
// identities, f* cache keys). Not cryptographic: it tells contents apart, it does not defend
// against a chosen collision.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stragglersim::models {

class Fnv1a {
 public:
  void add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      hash_ = (hash_ ^ bytes[i]) * 1099511628211ULL;
    }
  }
  void add(std::string_view text) { add(text.data(), text.size()); }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 14695981039346656037ULL;
};

/// The FNV-1a hash of `text`.
inline std::uint64_t fnv1a(std::string_view text) {
  Fnv1a h;
  h.add(text);
  return h.value();
}

}  // namespace stragglersim::models

#include "models/idx_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string_view>

#include "models/base/invariant.h"
#include "models/dataset.h"

namespace stragglersim::models {

namespace {

constexpr std::uint32_t kUnsignedByteType = 0x08;
// Sizes whose product exceeds this (16 GiB) are refused before anything is read.
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 34;
constexpr std::size_t kChunkBytes = std::size_t{1} << 24;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `size` bytes; returns how many were read (short only at the end of the file).
std::size_t read_some(gzFile file, const std::string& path, std::uint8_t* out, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1U << 24U));
    const int got = gzread(file, out + done, chunk);
    // A gzip stream cut short reads as a short file with Z_BUF_ERROR set (gzread returns what it
    // could), so the error state is checked at the end of the data as well.
    int code = Z_OK;
    const char* message = got <= 0 ? gzerror(file, &code) : nullptr;
    if (got < 0 || code != Z_OK) {
      // zlib prefixes its message with the path it was given; the path is said once.
      std::string_view text = message != nullptr ? message : "?";
      if (const std::string prefix = path + ": "; text.substr(0, prefix.size()) == prefix) {
        text.remove_prefix(prefix.size());
      }
      throw DataError(fmt::format("{}: gzip error: {}", path, text));
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::string shape_of(const std::vector<std::uint32_t>& sizes) {
  std::string out;
  for (const auto s : sizes) {
    out += out.empty() ? std::to_string(s) : " x " + std::to_string(s);
  }
  return out;
}

}  // namespace

std::size_t IdxBytes::item_size() const {
  std::size_t size = 1;
  for (std::size_t d = 1; d < sizes.size(); ++d) size *= sizes[d];
  return size;
}

IdxBytes read_idx_bytes(const std::string& path, int dimensions) {
  STRAGGLERSIM_ASSERT(dimensions >= 1 && dimensions <= 255, "IDX dimensions must be in [1, 255]");
  const GzHandle file(gzopen(path.c_str(), "rb"));
  if (!file) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  const std::size_t header_size = 4 + 4 * static_cast<std::size_t>(dimensions);
  std::vector<std::uint8_t> header(header_size);
  const std::size_t magic_got = read_some(file.get(), path, header.data(), 4);
  const std::uint32_t expected_magic =
      (kUnsignedByteType << 8U) | static_cast<std::uint32_t>(dimensions);
  const auto be32 = [&](std::size_t at) {
    return (std::uint32_t{header[at]} << 24U) | (std::uint32_t{header[at + 1]} << 16U) |
           (std::uint32_t{header[at + 2]} << 8U) | std::uint32_t{header[at + 3]};
  };
  if (magic_got < 4) {
    throw DataError(fmt::format(
        "{}: truncated header; got {} bytes; expected {}", path, magic_got, header_size));
  }
  if (be32(0) != expected_magic) {
    throw DataError(fmt::format(
        "{}: not an IDX file of unsigned bytes with {} dimensions; got magic 0x{:08x}; expected "
        "0x{:08x}",
        path,
        dimensions,
        be32(0),
        expected_magic));
  }
  const std::size_t sizes_got = read_some(file.get(), path, header.data() + 4, header_size - 4);
  if (sizes_got < header_size - 4) {
    throw DataError(fmt::format(
        "{}: truncated header; got {} bytes; expected {}", path, 4 + sizes_got, header_size));
  }
  IdxBytes out;
  std::uint64_t total = 1;
  for (int d = 0; d < dimensions; ++d) {
    out.sizes.push_back(be32(4 + 4 * static_cast<std::size_t>(d)));
  }
  for (const std::uint32_t size : out.sizes) {
    // Checked before multiplying, so the product cannot overflow.
    if (size != 0 && total > kMaxBytes / size) {
      throw DataError(
          fmt::format("{}: sizes {} exceed {} bytes", path, shape_of(out.sizes), kMaxBytes));
    }
    total *= size;
  }
  // Grown chunk by chunk, so a corrupt header claiming gigabytes costs only what the file holds.
  const auto expected = static_cast<std::size_t>(total);
  std::size_t got = 0;
  while (got < expected) {
    const std::size_t chunk = std::min<std::size_t>(expected - got, kChunkBytes);
    out.values.resize(got + chunk);
    const std::size_t n = read_some(file.get(), path, out.values.data() + got, chunk);
    got += n;
    if (n < chunk) break;
  }
  if (got < expected) {
    throw DataError(fmt::format("{}: truncated data; got {} bytes; expected {} ({})",
                                path,
                                got,
                                total,
                                shape_of(out.sizes)));
  }
  std::uint8_t extra = 0;
  if (read_some(file.get(), path, &extra, 1) != 0) {
    throw DataError(
        fmt::format("{}: trailing data after {} bytes ({})", path, total, shape_of(out.sizes)));
  }
  return out;
}

}  // namespace stragglersim::models

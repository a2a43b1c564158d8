#include "models/idx_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
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
      if (const std::string prefix = path + ": "; text.starts_with(prefix)) {
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

namespace {

[[noreturn]] void throw_truncated(const std::string& path,
                                  std::uint64_t got,
                                  std::uint64_t total,
                                  const std::vector<std::uint32_t>& sizes) {
  throw DataError(fmt::format(
      "{}: truncated data; got {} bytes; expected {} ({})", path, got, total, shape_of(sizes)));
}

[[noreturn]] void throw_trailing(const std::string& path,
                                 std::uint64_t total,
                                 const std::vector<std::uint32_t>& sizes) {
  throw DataError(
      fmt::format("{}: trailing data after {} bytes ({})", path, total, shape_of(sizes)));
}

// An open IDX file positioned at its data: the sizes read and checked, `total` data bytes due.
struct IdxStream {
  GzHandle file;
  IdxBytes out;
  std::uint64_t total = 1;
  std::size_t header_size = 0;
};

IdxStream open_idx(const std::string& path, int dimensions) {
  STRAGGLERSIM_ASSERT(dimensions >= 1 && dimensions <= 255, "IDX dimensions must be in [1, 255]");
  IdxStream in;
  count_file_bytes(path);
  in.file.reset(gzopen(path.c_str(), "rb"));
  if (!in.file) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  const std::size_t header_size = 4 + 4 * static_cast<std::size_t>(dimensions);
  in.header_size = header_size;
  std::vector<std::uint8_t> header(header_size);
  const std::size_t magic_got = read_some(in.file.get(), path, header.data(), 4);
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
  const std::size_t sizes_got = read_some(in.file.get(), path, header.data() + 4, header_size - 4);
  if (sizes_got < header_size - 4) {
    throw DataError(fmt::format(
        "{}: truncated header; got {} bytes; expected {}", path, 4 + sizes_got, header_size));
  }
  for (int d = 0; d < dimensions; ++d) {
    in.out.sizes.push_back(be32(4 + 4 * static_cast<std::size_t>(d)));
  }
  for (const std::uint32_t size : in.out.sizes) {
    // Checked before multiplying, so the product cannot overflow.
    if (size != 0 && in.total > kMaxBytes / size) {
      throw DataError(
          fmt::format("{}: sizes {} exceed {} bytes", path, shape_of(in.out.sizes), kMaxBytes));
    }
    in.total *= size;
  }
  return in;
}

void require_end(IdxStream& in, const std::string& path) {
  std::uint8_t extra = 0;
  if (read_some(in.file.get(), path, &extra, 1) != 0) {
    throw_trailing(path, in.total, in.out.sizes);
  }
}

// A plain file: its size checked as a full read would find it, then each item read in place.
void read_items_in_place(IdxStream& in,
                         const std::string& path,
                         std::span<const std::size_t> items,
                         std::size_t item) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
  const std::uint64_t data = size - std::min<std::uintmax_t>(size, in.header_size);
  if (data < in.total) {
    throw_truncated(path, data, in.total, in.out.sizes);
  }
  if (data > in.total) {
    throw_trailing(path, in.total, in.out.sizes);
  }
  std::ifstream file(path, std::ios::binary);
  for (std::size_t h = 0; h < items.size(); ++h) {
    file.seekg(static_cast<std::streamoff>(in.header_size + items[h] * item));
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): byte input
    file.read(reinterpret_cast<char*>(in.out.values.data() + h * item),
              static_cast<std::streamsize>(item));
    if (!file) {
      throw DataError(fmt::format("{}: cannot read item {}", path, items[h]));
    }
  }
}

// A gzip file: every item decompressed in order (whole items per chunk), only `items` kept.
void stream_items(IdxStream& in,
                  const std::string& path,
                  std::span<const std::size_t> items,
                  std::size_t item) {
  const std::size_t count = in.out.sizes[0];
  const std::size_t per_chunk = std::max<std::size_t>(1, kChunkBytes / item);
  std::vector<std::uint8_t> chunk(std::min(per_chunk, count) * item);
  std::uint64_t got = 0;
  std::size_t next = 0;
  for (std::size_t first = 0; first < count; first += per_chunk) {
    throw_if_stop_requested();
    const std::size_t n = std::min(per_chunk, count - first);
    const std::size_t read = read_some(in.file.get(), path, chunk.data(), n * item);
    got += read;
    if (read < n * item) {
      throw_truncated(path, got, in.total, in.out.sizes);
    }
    for (; next < items.size() && items[next] < first + n; ++next) {
      std::copy_n(
          chunk.data() + (items[next] - first) * item, item, in.out.values.data() + next * item);
    }
  }
  require_end(in, path);
}

}  // namespace

IdxBytes read_idx_bytes(const std::string& path, int dimensions) {
  IdxStream in = open_idx(path, dimensions);
  // Grown chunk by chunk, so a corrupt header claiming gigabytes costs only what the file holds.
  const auto expected = static_cast<std::size_t>(in.total);
  std::size_t got = 0;
  while (got < expected) {
    const std::size_t chunk = std::min<std::size_t>(expected - got, kChunkBytes);
    in.out.values.resize(got + chunk);
    const std::size_t n = read_some(in.file.get(), path, in.out.values.data() + got, chunk);
    got += n;
    if (n < chunk) break;
  }
  if (got < expected) {
    throw_truncated(path, got, in.total, in.out.sizes);
  }
  require_end(in, path);
  return std::move(in.out);
}

IdxBytes read_idx_items(const std::string& path,
                        int dimensions,
                        std::span<const std::size_t> items) {
  IdxStream in = open_idx(path, dimensions);
  STRAGGLERSIM_ASSERT(std::is_sorted(items.begin(), items.end()) &&
                          std::adjacent_find(items.begin(), items.end()) == items.end(),
                      "IDX items must be ascending and distinct");
  if (!items.empty() && items.back() >= in.out.sizes[0]) {
    // The caller chose the items from a file read earlier (this one has changed since).
    throw DataError(fmt::format("{}: no item {}; got {} items ({})",
                                path,
                                items.back(),
                                in.out.sizes[0],
                                shape_of(in.out.sizes)));
  }
  const std::size_t item = in.out.item_size();
  if (in.total == 0) {
    // No data section (no item, or items of zero bytes): only the end of the file to check.
    in.out.values.clear();
    require_end(in, path);
    return std::move(in.out);
  }
  in.out.values.resize(items.size() * item);
  // gzdirect is reliable once zlib has looked at the start of the file (the header read).
  if (gzdirect(in.file.get()) != 0) {
    read_items_in_place(in, path, items, item);
  } else {
    stream_items(in, path, items, item);
  }
  return std::move(in.out);
}

}  // namespace stragglersim::models

#pragma once
// IDX files for the tests (models/idx_reader.h): bytes of a file, written plain or gzipped
// through zlib, and a small Fashion-MNIST-shaped folder of random images. Header-only, tests only.

#include <zlib.h>

#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace stragglersim::testing {

using IdxByteVector = std::vector<std::uint8_t>;

/// An IDX file of unsigned bytes: magic 0x0000 08 <dimensions>, big-endian sizes, the values.
inline IdxByteVector idx_file(const std::vector<std::uint32_t>& sizes,
                              const IdxByteVector& values) {
  IdxByteVector out = {0, 0, 0x08, static_cast<std::uint8_t>(sizes.size())};
  for (const auto s : sizes) {
    for (const unsigned shift : {24U, 16U, 8U, 0U}) {
      out.push_back(static_cast<std::uint8_t>((s >> shift) & 0xFFU));
    }
  }
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

/// Writes `bytes` to `path`, gzip-compressed through zlib when `gzip`, else as they are.
inline void write_idx_file(const std::filesystem::path& path,
                           const IdxByteVector& bytes,
                           bool gzip) {
  if (!gzip) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),  // NOLINT: byte output
              static_cast<std::streamsize>(bytes.size()));
    return;
  }
  gzFile out = gzopen(path.string().c_str(), "wb");
  if (out == nullptr) {
    throw std::runtime_error("cannot write " + path.string());
  }
  const bool written =
      bytes.empty() || gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                           static_cast<int>(bytes.size());
  if (gzclose(out) != Z_OK || !written) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

/// A Fashion-MNIST-shaped folder in `dir`: {train,t10k}-{images-idx3,labels-idx1}-ubyte (".gz"
/// appended when `gzip`) holding `train` and `test` random height × width images (bytes 0 …
/// 255) with random labels 0 … 9, drawn from mt19937_64(seed).
inline void write_fashion_fixture(const std::filesystem::path& dir,
                                  std::uint32_t train,
                                  std::uint32_t test,
                                  std::uint32_t height,
                                  std::uint32_t width,
                                  bool gzip,
                                  std::uint64_t seed) {
  boost::random::mt19937_64 engine(seed);
  boost::random::uniform_int_distribution<int> pixel(0, 255);
  boost::random::uniform_int_distribution<int> label(0, 9);
  const std::string suffix = gzip ? ".gz" : "";
  for (const auto& [prefix, n] : {std::pair<std::string, std::uint32_t>{"train", train},
                                  std::pair<std::string, std::uint32_t>{"t10k", test}}) {
    IdxByteVector images(static_cast<std::size_t>(n) * height * width);
    for (auto& v : images) v = static_cast<std::uint8_t>(pixel(engine));
    IdxByteVector labels(n);
    for (auto& v : labels) v = static_cast<std::uint8_t>(label(engine));
    write_idx_file(
        dir / (prefix + "-images-idx3-ubyte" + suffix), idx_file({n, height, width}, images), gzip);
    write_idx_file(dir / (prefix + "-labels-idx1-ubyte" + suffix), idx_file({n}, labels), gzip);
  }
}

}  // namespace stragglersim::testing

#include "models/text_pieces.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "models/dataset.h"

namespace stragglersim::models::internal {

namespace {

/// Pieces when max_pieces is 0: the hardware threads, at most this many.
constexpr unsigned kMaxPieces = 8;

}  // namespace

WholeText::WholeText(std::istream& in, const std::string& path) {
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  size_ = size > 0 ? static_cast<std::size_t>(size) : 0;
  // NOLINTNEXTLINE(modernize-avoid-c-arrays): see bytes_
  bytes_ = std::make_unique_for_overwrite<char[]>(size_);
  if (size < 0 || !in.read(bytes_.get(), static_cast<std::streamsize>(size_))) {
    throw DataError(fmt::format("{}: cannot open file", path));
  }
}

std::vector<std::size_t> piece_bounds(std::string_view text,
                                      std::size_t piece_bytes,
                                      unsigned max_pieces) {
  const unsigned most =
      max_pieces > 0 ? max_pieces
                     : std::min(kMaxPieces, std::max(1U, std::thread::hardware_concurrency()));
  const std::size_t wanted = std::min<std::size_t>(
      most, std::max<std::size_t>(1, text.size() / std::max<std::size_t>(1, piece_bytes)));
  std::vector<std::size_t> bounds{0};
  for (std::size_t k = 1; k < wanted; ++k) {
    const std::size_t newline = text.find('\n', std::max(bounds.back(), k * text.size() / wanted));
    if (newline == std::string_view::npos || newline + 1 >= text.size()) break;
    bounds.push_back(newline + 1);
  }
  bounds.push_back(text.size());
  return bounds;
}

void for_each_piece(std::size_t pieces, const std::function<void(std::size_t)>& work) {
  std::vector<std::thread> threads;
  threads.reserve(pieces > 0 ? pieces - 1 : 0);
  std::size_t started = 1;
  for (; started < pieces; ++started) {
    try {
      threads.emplace_back([&work, k = started] { work(k); });
    } catch (const std::system_error&) {
      break;  // no more threads may start: the rest run here, in order
    }
  }
  if (pieces > 0) work(0);
  for (std::size_t k = started; k < pieces; ++k) work(k);
  for (auto& thread : threads) thread.join();
}

}  // namespace stragglersim::models::internal

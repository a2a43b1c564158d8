#pragma once
// Internal to models/: the text readers' shared plumbing (LIBSVM and CSV). A file is read
// whole, cut into consecutive pieces of whole lines and each piece parsed on its own thread;
// the readers join the pieces in file order, so the data set is the same bytes for any number
// of pieces. A partial load (keep a subset of rows) streams the file in chunks instead.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/stop_request.h"

namespace stragglersim::models::internal {

/// Calls `parse` on every line of `text` ('\n'-separated; a last line without one included),
/// polling for a stop request.
template <typename Parse>
void for_each_line(std::string_view text, Parse&& parse) {
  for (std::size_t start = 0, line = 0; start < text.size(); ++line) {
    poll_stop_request(static_cast<std::int64_t>(line));
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    parse(text.substr(start, end - start));
    start = end + 1;
  }
}

/// for_each_line over a stream read in chunks of 4 MiB (a line longer than a chunk grows it);
/// false on a read error.
template <typename Parse>
bool read_lines_in_chunks(std::istream& in, Parse&& parse) {
  constexpr std::size_t kChunk = std::size_t{1} << 22U;
  std::string buffer;
  std::vector<char> chunk(kChunk);
  while (true) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) {
      break;
    }
    buffer.append(chunk.data(), got);
    const std::size_t last = buffer.rfind('\n');
    if (last != std::string::npos) {
      for_each_line(std::string_view(buffer).substr(0, last + 1), parse);
      buffer.erase(0, last + 1);
    }
  }
  if (in.bad()) {
    return false;
  }
  if (!buffer.empty()) {
    for_each_line(buffer, parse);
  }
  return true;
}

/// A file's bytes, read in one call and never zeroed first (every byte is overwritten by the
/// read).
class WholeText {
 public:
  /// Reads `in` from its start to its end; throws DataError "<path>: cannot open file" when the
  /// read fails.
  WholeText(std::istream& in, const std::string& path);
  [[nodiscard]] std::string_view view() const { return {bytes_.get(), size_}; }
  /// Frees the bytes (views into them dangle).
  void reset() {
    bytes_.reset();
    size_ = 0;
  }

 private:
  // NOLINTNEXTLINE(modernize-avoid-c-arrays): the only uninitialised byte buffer of the library
  std::unique_ptr<char[]> bytes_;
  std::size_t size_ = 0;
};

/// Offsets 0 = b₀ < b₁ < … < b_k = text.size() of k consecutive pieces of `text`, each but the
/// last ending just after a '\n': k = min(most, max(1, size / piece_bytes)), fewer when the text
/// has fewer lines, where most = max_pieces, or when that is 0 the hardware threads (at most 8).
[[nodiscard]] std::vector<std::size_t> piece_bounds(std::string_view text,
                                                    std::size_t piece_bytes,
                                                    unsigned max_pieces);

/// Runs work(k) for k = 0 … pieces − 1 at once, k = 0 on the calling thread and each other on
/// a thread of its own; returns when all have. `work` must not throw.
void for_each_piece(std::size_t pieces, const std::function<void(std::size_t)>& work);

}  // namespace stragglersim::models::internal

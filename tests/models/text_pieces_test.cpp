#include "models/text_pieces.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using stragglersim::models::internal::for_each_line;
using stragglersim::models::internal::for_each_piece;
using stragglersim::models::internal::piece_bounds;

}  // namespace

TEST_CASE("models: text pieces are consecutive runs of whole lines", "[models][pieces]") {
  // Every text of up to 12 lines of lengths 0..4 cycling, with and without a final newline,
  // every piece size and piece limit: the bounds start at 0, end at the size, increase, fall
  // just after a '\n', and there are as many as asked for when the text has the lines.
  for (int lines = 0; lines <= 12; ++lines) {
    for (const bool final_newline : {true, false}) {
      std::string text;
      for (int l = 0; l < lines; ++l) {
        text += std::string(static_cast<std::size_t>(l % 5), 'x');
        if (l + 1 < lines || final_newline) text += '\n';
      }
      for (std::size_t piece_bytes = 1; piece_bytes <= text.size() + 1; ++piece_bytes) {
        for (const unsigned most : {1U, 2U, 3U, 5U, 64U}) {
          CAPTURE(lines, final_newline, piece_bytes, most);
          const auto bounds = piece_bounds(text, piece_bytes, most);
          REQUIRE(bounds.size() >= 2);
          CHECK(bounds.front() == 0);
          CHECK(bounds.back() == text.size());
          const std::size_t pieces = bounds.size() - 1;
          CHECK(pieces <= most);
          CHECK(pieces <= std::max<std::size_t>(1, text.size() / piece_bytes));
          for (std::size_t k = 1; k < pieces; ++k) {
            CHECK(bounds[k] > bounds[k - 1]);
            CHECK(text[bounds[k] - 1] == '\n');
          }
          // The lines of the pieces, in order, are the lines of the text.
          std::vector<std::string> whole;
          for_each_line(text, [&](std::string_view line) { whole.emplace_back(line); });
          std::vector<std::string> joined;
          for (std::size_t k = 0; k < pieces; ++k) {
            for_each_line(std::string_view(text).substr(bounds[k], bounds[k + 1] - bounds[k]),
                          [&](std::string_view line) { joined.emplace_back(line); });
          }
          CHECK(joined == whole);
        }
      }
    }
  }
}

TEST_CASE("models: each text piece runs once, the first on the calling thread",
          "[models][pieces]") {
  for (const std::size_t pieces : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
    std::vector<std::atomic<int>> runs(pieces);
    std::thread::id first;
    for_each_piece(pieces, [&](std::size_t k) {
      runs[k].fetch_add(1);
      if (k == 0) first = std::this_thread::get_id();
    });
    for (const auto& count : runs) CHECK(count.load() == 1);
    if (pieces > 0) CHECK(first == std::this_thread::get_id());
  }
}

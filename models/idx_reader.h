#pragma once
// IDX files (LeCun & Cortes' MNIST format, also Fashion-MNIST's): a 4-byte magic number
// 0x00 0x00 <type> <dimensions>, one big-endian uint32 size per dimension, then the values in
// row-major order. Only unsigned bytes (type 0x08) are read. Files are read through zlib, so
// gzip-compressed (*.gz) and plain files are both accepted.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stragglersim::models {

/// An IDX array of unsigned bytes: sizes[0] items of sizes[1] × … bytes each.
struct IdxBytes {
  std::vector<std::uint32_t> sizes;
  std::vector<std::uint8_t> values;
  /// Bytes per item (the product of sizes[1…]; 1 for a vector).
  [[nodiscard]] std::size_t item_size() const;
};

/// Reads an IDX file of unsigned bytes with `dimensions` dimensions (1 for labels, 3 for images).
/// Throws DataError naming the file: "<path>: cannot open file", "<path>: not an IDX file of
/// unsigned bytes with <d> dimensions; got magic 0x…; expected 0x…", "<path>: truncated header;
/// got <n> bytes; expected <16>", "<path>: truncated data; got <n> bytes; expected <m> (a x b x
/// c)",
/// "<path>: trailing data after <m> bytes (a x b x c)", "<path>: gzip error: <zlib's message>".
/// Illegal: dimensions outside [1, 255].
IdxBytes read_idx_bytes(const std::string& path, int dimensions);

/// Reads only items `items` (ascending, distinct, each < sizes[0]) of the same file: `values`
/// holds their bytes in that order, item_size() each; `sizes` are the file's (all items). The
/// file is checked as read_idx_bytes checks it, with the same errors (its size included, so a
/// truncated or overlong file is refused even when no item is asked for). A plain file is read
/// by seeking to each item; a gzip file is decompressed in full, keeping only the items.
/// An item beyond the file's is a DataError "<path>: no item <i>; got <n> items (a x b x c)".
/// Illegal: `items` not ascending and distinct.
IdxBytes read_idx_items(const std::string& path,
                        int dimensions,
                        std::span<const std::size_t> items);

}  // namespace stragglersim::models

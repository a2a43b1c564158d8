#pragma once
// Bytes of data this process has read in its passes over data sets and data files: the measure
// of a run's floor (benchmarks/end_to_end.py: these bytes at the machine's streaming-read rate,
// plus process start). Counted once per pass or file, never per row, so the count costs nothing
// next to the pass; summed from every thread, so it is a process-wide total (summary.json's
// `data_bytes_read` is the difference over one `run`; docs/model.md §7).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <system_error>

namespace stragglersim::models {

/// The process-wide total (bytes).
inline std::atomic<std::int64_t>& data_bytes_counter() {
  static std::atomic<std::int64_t> bytes{0};
  return bytes;
}

/// Adds one pass's or one file's bytes.
inline void count_data_bytes(std::int64_t bytes) {
  data_bytes_counter().fetch_add(bytes, std::memory_order_relaxed);
}

/// Adds the size of a data file about to be read whole (nothing when it cannot be sized: the
/// reader then reports the file).
inline void count_file_bytes(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (!error) {
    count_data_bytes(static_cast<std::int64_t>(size));
  }
}

/// The bytes read so far by this process.
inline std::int64_t data_bytes_read() {
  return data_bytes_counter().load(std::memory_order_relaxed);
}

}  // namespace stragglersim::models

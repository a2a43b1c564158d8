#pragma once
// The one writer of every file the program writes (docs/reliability.md, "Output files").
//
// An output path is checked and reserved before any work, then written in one go:
//   - a regular file, or a path that does not exist yet, is written to a unique temporary in the
//     same folder (created exclusively, so no other file is ever touched) and renamed over it;
//   - a symbolic link is followed: its target is what is written (and renamed over when it is a
//     regular file); a link to nothing is refused;
//   - a character or block device or a FIFO (/dev/null, /dev/stdout, a named pipe) is opened and
//     written in place, never replaced or unlinked;
//   - a folder, a socket, an empty path, a path in a missing or non-writable folder are refused.
// Every refusal and every write failure (ENOSPC, EROFS, EIO) is a ConfigError (exit status 2)
// "<option>: <problem>; got "<path>"; expected ..." (the path itself stands for the option of
// files the program names inside its output folders), and leaves no partial file behind.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace stragglersim::experiments {

class OutputFile {
 public:
  /// Checks `path` and, unless it is a device or FIFO, creates its temporary. Throws ConfigError.
  OutputFile(std::filesystem::path path, std::string_view option);
  /// Removes the temporary when commit() was not called or failed.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&&) = delete;
  OutputFile& operator=(OutputFile&&) = delete;

  /// Writes `text` (all of it, or nothing is left at the path) and puts it in place. Once only.
  void commit(std::string_view text);

  /// Whether the path is written in place (a device or a FIFO).
  [[nodiscard]] bool in_place() const { return in_place_; }

 private:
  [[noreturn]] void fail_write(int error);

  std::filesystem::path path_;
  std::string label_;
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  bool in_place_ = false;
};

/// OutputFile(path, "").commit(text): files the program names itself (summary.json, index.csv).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

/// Checks, before any compute and without writing, that a file may be written at `path` (the
/// rules of OutputFile, nothing reserved). Throws ConfigError "<option>: ...".
void check_output_file(const std::filesystem::path& path, std::string_view option);

/// Checks, before any compute and without writing, that `out_dir` can become the output folder:
/// not empty, not an existing file, device or FIFO (a link to a folder is followed), and its
/// nearest existing ancestor a folder this process may write. Throws ConfigError
/// "<option>: <problem>; got \"<path>\"; expected ...".
void check_output_folder(const std::filesystem::path& out_dir, std::string_view option);

/// Removes `path` only when it is a regular file (never a device, FIFO, folder or the target of
/// a link): the program's own stale outputs.
void remove_regular_file(const std::filesystem::path& path);

/// An advisory lock (flock) on an output folder, held while a sweep writes into it: exclusive for
/// a whole sweep or a merge, shared between the shards of one sweep. A folder another process
/// holds is a ConfigError "--out: folder in use by another sweep; got "<folder>"; expected ...".
/// Released when destroyed (and by the kernel when the process dies).
class FolderLock {
 public:
  FolderLock() = default;
  FolderLock(const std::filesystem::path& folder, bool exclusive);
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  [[nodiscard]] bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace stragglersim::experiments

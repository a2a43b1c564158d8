#include "experiments/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "experiments/config/config_error.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(std::string_view label,
                         const fs::path& path,
                         std::string_view problem,
                         std::string_view expected) {
  throw ConfigError(
      fmt::format("{}: {}; got \"{}\"; expected {}", label, problem, path.string(), expected));
}

/// Where an output path leads once its links are followed, and how it is written.
struct Resolved {
  fs::path target;
  bool in_place = false;
};

/// The folder that will hold a new or replaced regular file `target`: must exist and be writable.
void check_folder_of(const fs::path& target, std::string_view label, const fs::path& path) {
  const fs::path folder = target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    refuse(label,
           path,
           fmt::format("{} is not a folder", folder.string()),
           "a file in an existing folder");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    refuse(label,
           path,
           fmt::format("{} is not writable ({})", folder.string(), std::strerror(errno)),
           "a folder this user may write");
  }
}

Resolved resolve(const fs::path& path, std::string_view label) {
  if (path.empty()) {
    refuse(label, path, "empty path", "a file to write");
  }
  std::error_code ec;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    struct stat link {};
    if (error == ENOENT && ::lstat(path.c_str(), &link) == 0) {
      refuse(label, path, "is a symbolic link to nothing", "a link to an existing file");
    }
    if (error != ENOENT && error != ENOTDIR) {
      refuse(label, path, std::strerror(error), "a file in an existing folder");
    }
    Resolved r{fs::absolute(path, ec).lexically_normal(), false};
    check_folder_of(r.target, label, path);
    return r;
  }
  if (S_ISDIR(st.st_mode)) {
    refuse(label, path, "is a folder", "a file name");
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
    if (::access(path.c_str(), W_OK) != 0) {
      refuse(label,
             path,
             fmt::format("cannot be written ({})", std::strerror(errno)),
             "a device or FIFO this user may write");
    }
    return {path, true};
  }
  if (!S_ISREG(st.st_mode)) {
    refuse(label,
           path,
           "exists and is not a regular file, a device or a FIFO",
           "a new or existing regular file");
  }
  Resolved r{fs::canonical(path, ec), false};
  if (ec) {
    refuse(label, path, ec.message(), "a file in an existing folder");
  }
  check_folder_of(r.target, label, path);
  return r;
}

/// Writes all of `text` to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

/// A name no other writer uses: the process id and a per-process counter (threads of one sweep
/// write beside each other).
std::string temporary_name(const fs::path& target) {
  static std::atomic<unsigned long> counter{0};
  return fmt::format(".{}.tmp-{}-{}",
                     target.filename().string(),
                     static_cast<long>(::getpid()),
                     counter.fetch_add(1));
}

}  // namespace

OutputFile::OutputFile(std::filesystem::path path, std::string_view option)
    : path_(std::move(path)), label_(option.empty() ? path_.string() : std::string(option)) {
  const Resolved r = resolve(path_, label_);
  target_ = r.target;
  in_place_ = r.in_place;
  if (in_place_) {
    return;  // a FIFO's open waits for a reader: opened when written
  }
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temporary_ = target_.parent_path() / temporary_name(target_);
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      const int error = errno;
      temporary_.clear();
      refuse(label_,
             path_,
             fmt::format("cannot create a file in {} ({})",
                         target_.parent_path().string(),
                         std::strerror(error)),
             "a folder this user may write, on a writable file system");
    }
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
  if (!temporary_.empty()) {
    ::unlink(temporary_.c_str());
  }
}

void OutputFile::fail_write(int error) {
  throw ConfigError(fmt::format(
      "{}: cannot write file ({}); got \"{}\"; expected a writable file system with free space",
      label_,
      std::strerror(error),
      path_.string()));
}

void OutputFile::commit(std::string_view text) {
  if (in_place_) {
    const int fd = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      fail_write(errno);
    }
    const int error = write_all(fd, text);
    if (::close(fd) != 0 && error == 0) {
      fail_write(errno);
    }
    if (error != 0) {
      fail_write(error);
    }
    return;
  }
  int error = write_all(fd_, text);
  if (::close(fd_) != 0 && error == 0) {
    error = errno;
  }
  fd_ = -1;
  if (error == 0 && ::rename(temporary_.c_str(), target_.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    fail_write(error);  // the destructor removes the temporary
  }
  temporary_.clear();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  OutputFile(path, "").commit(text);
}

void check_output_file(const std::filesystem::path& path, std::string_view option) {
  resolve(path, option);
}

void check_output_folder(const std::filesystem::path& out_dir, std::string_view option) {
  const auto fail = [&](std::string_view problem, std::string_view expected) {
    refuse(option, out_dir, problem, expected);
  };
  if (out_dir.empty()) {
    fail("empty path", "a folder to write into");
  }
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec)) {
    fail("exists and is not a folder", "a new or existing folder");
  }
  if (!fs::exists(out_dir, ec) && fs::is_symlink(out_dir, ec)) {
    fail("is a symbolic link to nothing", "a link to an existing folder");
  }
  // The nearest existing ancestor must be a folder we may write (create the rest in).
  fs::path probe = fs::absolute(out_dir, ec);
  while (!probe.empty() && !fs::exists(probe, ec) && probe != probe.parent_path()) {
    probe = probe.parent_path();
  }
  if (!fs::is_directory(probe, ec)) {
    fail(fmt::format("{} is not a folder", probe.string()), "a path under an existing folder");
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    fail(fmt::format("{} is not writable ({})", probe.string(), std::strerror(errno)),
         "a folder this user may write");
  }
}

void remove_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    ::unlink(path.c_str());
  }
}

FolderLock::FolderLock(const std::filesystem::path& folder, bool exclusive)
    : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0) {
    refuse("--out",
           folder,
           fmt::format("cannot open the folder ({})", std::strerror(errno)),
           "a folder this user may read");
  }
  if (::flock(fd_, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    refuse("--out",
           folder,
           error == EWOULDBLOCK ? std::string("folder in use by another sweep")
                                : fmt::format("cannot lock the folder ({})", std::strerror(error)),
           "a folder no other sweep is writing now (wait for it to end, or give another --out; "
           "shards of one sweep share a folder with --shard)");
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace stragglersim::experiments

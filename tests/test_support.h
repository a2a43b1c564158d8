#pragma once
// Helpers shared by the test files: scratch folders, reading files back, running the
// stragglersim executable, catching an error's message, and a sample's mean and standard error.
// Header-only, tests only.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>

#include "tests/test_paths.h"

namespace stragglersim::testing {

/// A fresh, empty folder temp/stragglersim_<suite>-<pid>/<name> (per process, so suites running
/// at the same time on one machine never share one).
inline std::filesystem::path scratch_dir(const std::string& suite, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("stragglersim_{}-{}", suite, static_cast<long>(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A private folder removed when the test case ends; `write` puts a file in it byte for byte.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) : path_(scratch_dir(tag, "files")) {}
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// Writes `contents` byte for byte and returns the file's path.
  [[nodiscard]] std::string write(const std::string& name, const std::string& contents) const {
    const auto file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << contents;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

/// The bytes of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `text` with the two lines `first` and `second` inserted before its lines `first_at` and
/// `second_at` (1-based, first_at < second_at, both counted in the original text): a file with
/// two bad lines, for readers that must report the first.
inline std::string with_two_lines(std::string text,
                                  int first_at,
                                  const std::string& first,
                                  int second_at,
                                  const std::string& second) {
  const auto line_start = [&](int line) {
    std::size_t pos = 0;
    for (int l = 1; l < line; ++l) pos = text.find('\n', pos) + 1;
    return pos;
  };
  text.insert(line_start(second_at), second);
  text.insert(line_start(first_at), first);
  return text;
}

/// A small least-squares run: 8 workers, FRC d = 2, first 4 of 8, 30 GD steps of 1/beta on
/// 400 x 6 synthetic rows (a fraction of a second) with unit feature covariance (condition 1), so
/// exact GD reaches relative suboptimality 1e-3 within the 30 steps.
inline nlohmann::json small_least_squares_config() {
  return nlohmann::json::parse(R"({
    "seed": 3, "workers": 8,
    "data": {"source": "synthetic", "generator": "linear_regression", "rows": 400, "features": 6,
             "condition": 1},
    "loss": {"kind": "least_squares", "l2": 0.01},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 4},
    "delay": {"kind": "shifted_exponential"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 30}
  })");
}

/// `text` (a summary.json) with the values of its measured fields set to 0: wall_clock_seconds,
/// the phases' plan_seconds, predictions_seconds, iterations_seconds, writing_seconds and
/// f_star_seconds, and f_star_source and data_bytes_read (which run of a sweep solves a shared
/// f* depends on scheduling). Every other byte must be the same for the same config and seed.
inline std::string mask_wall_clock(std::string text) {
  for (const std::string key : {"\"wall_clock_seconds\": ",
                                "\"plan_seconds\": ",
                                "\"predictions_seconds\": ",
                                "\"iterations_seconds\": ",
                                "\"writing_seconds\": ",
                                "\"f_star_seconds\": ",
                                "\"f_star_source\": ",
                                "\"data_bytes_read\": "}) {
    const auto at = text.find(key);
    if (at == std::string::npos) {
      continue;
    }
    const auto start = at + key.size();
    const auto end = text.find_first_of(",\n}", start);
    // Built anew rather than replace()d in place: GCC 12 warns (-Wrestrict) on the in-place form.
    text = text.substr(0, start) + "0" + (end == std::string::npos ? "" : text.substr(end));
  }
  return text;
}

/// Exit status of a std::system call; -1 when the process did not exit normally.
inline int exit_status(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1; }

struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `stragglersim <args>` with stdout and stderr captured in dir/stdout.txt and
/// dir/stderr.txt.
inline CommandResult run_stragglersim(const std::string& args, const std::filesystem::path& dir) {
  const auto out = dir / "stdout.txt";
  const auto err = dir / "stderr.txt";
  const std::string cmd = fmt::format("{} {} > '{}' 2> '{}'",
                                      stragglersim::testing::cli_binary(),
                                      args,
                                      out.string(),
                                      err.string());
  CommandResult r;
  r.status = exit_status(std::system(cmd.c_str()));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// The message of the `Error` that `f` throws, or "no error".
template <class Error>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

/// A sample's mean, standard deviation and standard error of the mean, one value at a time
/// (Welford's update), for the statistical tests' tolerances.
class Sample {
 public:
  void add(double x) {
    ++n_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(n_);
    m2_ += delta * (x - mean_);
  }
  [[nodiscard]] std::uint64_t count() const { return n_; }
  [[nodiscard]] double mean() const { return mean_; }
  /// The sample standard deviation (n − 1 in the denominator; 0 below two values).
  [[nodiscard]] double sd() const {
    return n_ > 1 ? std::sqrt(m2_ / static_cast<double>(n_ - 1)) : 0.0;
  }
  [[nodiscard]] double se() const {
    return n_ > 0 ? sd() / std::sqrt(static_cast<double>(n_)) : 0.0;
  }

 private:
  std::uint64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;
};

}  // namespace stragglersim::testing

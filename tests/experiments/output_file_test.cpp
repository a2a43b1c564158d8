// The one output writer (experiments/output_file.h): what it replaces, what it writes through,
// and that an abandoned or failed write leaves the path as it was.

#include "experiments/output_file.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/config/config_error.h"
#include "tests/test_support.h"

namespace stragglersim::experiments {
namespace {

namespace fs = std::filesystem;
using stragglersim::testing::message_of;
using stragglersim::testing::slurp;

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("output file: a regular file is replaced only on commit", "[experiments][output]") {
  const auto dir = stragglersim::testing::scratch_dir("output_file_test", "regular");
  const auto path = dir / "x.txt";
  std::ofstream(path) << "old";
  {
    OutputFile abandoned(path, "--out");  // reserved, then the work fails
    CHECK(entries(dir) == 2);             // the file and its temporary
  }
  CHECK(slurp(path) == "old");
  CHECK(entries(dir) == 1);
  {
    OutputFile out(path, "--out");
    CHECK_FALSE(out.in_place());
    out.commit("new\n");
  }
  CHECK(slurp(path) == "new\n");
  CHECK(entries(dir) == 1);
  // Two writers of one path at once get distinct temporaries; the last commit wins.
  OutputFile a(path, "--out");
  OutputFile b(path, "--out");
  CHECK(entries(dir) == 3);
  a.commit("a");
  b.commit("b");
  CHECK(slurp(path) == "b");
  CHECK(entries(dir) == 1);
}

TEST_CASE("output file: devices are written in place and folders refused",
          "[experiments][output]") {
  const auto dir = stragglersim::testing::scratch_dir("output_file_test", "device");
  const auto device = dir / "null";
  REQUIRE(::mknod(device.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
  {
    OutputFile out(device, "--out");
    CHECK(out.in_place());
    out.commit("discarded");
  }
  struct stat st {};
  REQUIRE(::lstat(device.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(entries(dir) == 1);
  CHECK(message_of<ConfigError>([&] { OutputFile f(dir, "--csv"); }) ==
        "--csv: is a folder; got \"" + dir.string() + "\"; expected a file name");
  CHECK(message_of<ConfigError>([&] { OutputFile f("", "--csv"); }) ==
        "--csv: empty path; got \"\"; expected a file to write");
  // A write that fails (a full device) is a ConfigError naming the reason.
  OutputFile full("/dev/full", "--out");
  CHECK(message_of<ConfigError>([&] { full.commit("x"); }) ==
        "--out: cannot write file (No space left on device); got \"/dev/full\"; expected a "
        "writable file system with free space");
}

}  // namespace stragglersim::experiments

#include "models/libsvm_reader.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/base/data_traffic.h"
#include "models/base/parse_number.h"
#include "models/csv_reader.h"
#include "tests/test_support.h"

namespace stragglersim::models {
namespace {

using stragglersim::testing::TempDir;

}  // namespace

TEST_CASE("models: a number token parses whole or not at all", "[models][libsvm]") {
  // The readers' and options' parsers (models/base/parse_number.h), token by token.
  struct Case {
    const char* token;
    bool signed_ok;    // parse_whole_integer<std::int64_t>
    bool unsigned_ok;  // parse_whole_integer<std::uint64_t>
    bool double_ok;    // parse_finite_double
  };
  for (const Case c : {Case{"0", true, true, true},
                       Case{"12", true, true, true},
                       Case{"-3", true, false, true},
                       Case{"+1", false, false, true},
                       Case{"", false, false, false},
                       Case{" 1", false, false, false},
                       Case{"1 ", false, false, false},
                       Case{"1x", false, false, false},
                       Case{"0x1", false, false, false},
                       Case{"1.5", false, false, true},
                       Case{"1e3", false, false, true},
                       Case{"+-1", false, false, false},
                       Case{"nan", false, false, false},
                       Case{"inf", false, false, false},
                       Case{"1e999", false, false, false},
                       Case{"9223372036854775807", true, true, true},
                       Case{"9223372036854775808", false, true, true},
                       Case{"18446744073709551616", false, false, true}}) {
    INFO(c.token);
    std::int64_t i = 0;
    std::uint64_t u = 0;
    double d = 0.0;
    CHECK(parse_whole_integer(c.token, i) == c.signed_ok);
    CHECK(parse_whole_integer(c.token, u) == c.unsigned_ok);
    CHECK(parse_finite_double(c.token, d) == c.double_ok);
  }
  std::int64_t i = 0;
  REQUIRE(parse_whole_integer("-42", i));
  CHECK(i == -42);
  double d = 0.0;
  REQUIRE(parse_finite_double("+2.5e3", d));
  CHECK(d == 2500.0);
}

TEST_CASE("models: libsvm reader parses labels and features and comments and CRLF",
          "[models][libsvm]") {
  const TempDir dir("libsvm_test");
  const std::string path = dir.write("good.svm",
                                     "# a header comment\n"
                                     "+1 1:0.5 3:-2 # trailing comment\r\n"
                                     "\n"
                                     "-1 2:1e-3   4:7\t \r\n"
                                     "   \t\n"
                                     "2.5\n"
                                     "0 qid:3 1:1");
  SECTION("dense") {
    const auto data = read_libsvm(path);
    REQUIRE_FALSE(data.is_sparse());
    const auto& a = std::get<DenseRows>(data.features);
    REQUIRE(a.rows() == 4);
    REQUIRE(a.cols() == 4);
    DenseRows expected(4, 4);
    expected << 0.5, 0, -2, 0,  //
        0, 1e-3, 0, 7,          //
        0, 0, 0, 0,             //
        1, 0, 0, 0;
    CHECK(a == expected);
    CHECK(data.labels == Eigen::Vector4d(1.0, -1.0, 2.5, 0.0));
  }
  SECTION("sparse, with more features than the file uses") {
    const auto data = read_libsvm(path, LibsvmOptions{6, false});
    REQUIRE(data.is_sparse());
    const auto& a = std::get<SparseRows>(data.features);
    CHECK(a.rows() == 4);
    CHECK(a.cols() == 6);
    CHECK(a.nonZeros() == 5);
    CHECK(a.coeff(1, 3) == 7.0);
    CHECK(a.coeff(0, 2) == -2.0);
    CHECK(data.stored_entries() == 5);
    const auto dense = read_libsvm(path, LibsvmOptions{6, true});
    CHECK(DenseRows(a) == std::get<DenseRows>(dense.features));
  }
}

TEST_CASE("models: libsvm reader reports malformed lines exactly", "[models][libsvm]") {
  const TempDir dir("libsvm_test");
  SECTION("malformed label") {
    const auto path = dir.write("bad.svm", "abc 1:2\n");
    REQUIRE_THROWS_AS(read_libsvm(path), DataError);
    REQUIRE_THROWS_WITH(read_libsvm(path), path + ":1: malformed label; got 'abc'");
  }
  SECTION("a malformed line, named by its number and token") {
    // What is wrong, the file, and the message after "<path>:".
    const auto [what, contents, message] = GENERATE(table<const char*, const char*, const char*>({
        {"label that is only partly a number", "1 1:2\n1x 1:2\n", "2: malformed label; got '1x'"},
        {"a line of features without a label", "1:2 3:4\n", "1: malformed label; got '1:2'"},
        {"malformed feature",
         "1 1:2\n# comment\n-1 2:1 x:1\n",
         "3: malformed feature; got 'x:1'; expected index:value"},
        {"feature without a colon", "1 7\n", "1: malformed feature; got '7'; expected index:value"},
        {"malformed value",
         "1 3:1.5x\n",
         "1: malformed feature; got '3:1.5x'; expected index:value"},
        {"indices not increasing",
         "1 1:1\r\n1 2:1 5:1 3:1\n",
         "2: feature indices must be increasing; got '3'"},
        {"repeated index", "1 4:1 4:2\n", "1: feature indices must be increasing; got '4'"},
        {"index 0 (indices are 1-based)", "1 0:1 2:1\n", "1: feature indices start at 1; got '0'"},
    }));
    INFO(what);
    const auto path = dir.write("bad.svm", contents);
    REQUIRE_THROWS_WITH(read_libsvm(path), path + ":" + message);
  }
  SECTION("index beyond the features option") {
    const auto path = dir.write("bad.svm", "1 1:1\n1 2:1 7:1\n");
    CHECK_NOTHROW(read_libsvm(path, LibsvmOptions{7, true}));
    REQUIRE_THROWS_WITH(read_libsvm(path, LibsvmOptions{5, true}),
                        path + ":2: feature index exceeds features = 5; got '7'");
  }
  SECTION("storage above the byte limits, refused before it is allocated") {
    // 2 rows, 7 features, 3 non-zeros: dense 8·2·7 = 112 bytes, sparse 16·3 + 16·8 = 176.
    const auto path = dir.write("big.svm", "1 1:1\n1 2:1 7:1\n");
    LibsvmOptions dense;
    dense.max_dense_bytes = 100;
    REQUIRE_THROWS_WITH(read_libsvm(path, dense),
                        path +
                            ": dense storage of 2 rows x 7 features would need 112 bytes; expected "
                            "at most 100 bytes (--max-memory), or \"storage\": \"sparse\"");
    LibsvmOptions sparse;
    sparse.dense = false;
    sparse.max_sparse_bytes = 175;
    REQUIRE_THROWS_WITH(read_libsvm(path, sparse),
                        path +
                            ": sparse storage of 2 rows x 7 features would need 176 bytes; "
                            "expected at most 175 bytes (--max-memory), or fewer features");
    sparse.max_sparse_bytes = 176;
    CHECK(read_libsvm(path, sparse).stored_entries() == 3);
  }
  SECTION("no data rows") {
    const auto path = dir.write("empty.svm", "# only a comment\n\n");
    REQUIRE_THROWS_WITH(read_libsvm(path), path + ": no data rows");
  }
  SECTION("missing file") {
    const std::string path = "/nonexistent/stragglersim/missing.svm";
    REQUIRE_THROWS_AS(read_libsvm(path), DataError);
    REQUIRE_THROWS_WITH(read_libsvm(path), path + ": cannot open file");
  }
}

TEST_CASE("models: libsvm reader gives the same data and errors in any number of pieces",
          "[models][libsvm]") {
  const TempDir dir("libsvm_test");
  // 300 data lines between comments, blank lines, CRLF endings, a query id and empty rows.
  std::string text = "# header\n";
  for (int i = 0; i < 300; ++i) {
    text += std::to_string(i % 3 == 0 ? 1 : -1);
    for (int j = 1 + i % 5; j <= 40; j += 1 + (i * j) % 7) {
      text += ' ';  // appended piece by piece: GCC 12's -Wrestrict misfires on "a" + string&&
      text += std::to_string(j);
      text += ':';
      text += std::to_string(0.25 * ((i + j) % 11) - 1.0);
    }
    text += i % 4 == 0 ? "\r\n" : (i % 9 == 0 ? " qid:2 # note\n" : "\n");
    if (i % 13 == 0) text += "\n   \n# comment\n";
  }
  const std::string path = dir.write("pieces.svm", text);
  for (const bool dense : {true, false}) {
    LibsvmOptions one;
    one.dense = dense;
    one.max_pieces = 1;
    LabelValues one_labels;
    std::int64_t one_rows = 0;
    const Dataset whole = read_libsvm(path, one, nullptr, &one_labels, &one_rows);
    REQUIRE(whole.rows() == 300);
    for (const unsigned pieces : {2U, 3U, 7U, 64U}) {
      CAPTURE(dense, pieces);
      LibsvmOptions many = one;
      many.max_pieces = pieces;
      many.piece_bytes = 1;  // every piece as small as the file allows
      LabelValues many_labels;
      std::int64_t many_rows = 0;
      const Dataset split = read_libsvm(path, many, nullptr, &many_labels, &many_rows);
      CHECK(split.labels == whole.labels);
      CHECK(many_rows == one_rows);
      CHECK(many_labels.values == one_labels.values);
      if (dense) {
        CHECK(std::get<DenseRows>(split.features) == std::get<DenseRows>(whole.features));
      } else {
        const auto& a = std::get<SparseRows>(split.features);
        const auto& b = std::get<SparseRows>(whole.features);
        REQUIRE(a.nonZeros() == b.nonZeros());
        CHECK(a.isCompressed());
        CHECK(std::equal(a.outerIndexPtr(), a.outerIndexPtr() + a.rows() + 1, b.outerIndexPtr()));
        CHECK(std::equal(a.innerIndexPtr(), a.innerIndexPtr() + a.nonZeros(), b.innerIndexPtr()));
        CHECK(std::equal(a.valuePtr(), a.valuePtr() + a.nonZeros(), b.valuePtr()));
      }
    }
  }
  // Two bad lines: every split reports the first, by its line in the file.
  const std::string bad_path =
      dir.write("bad_pieces.svm",
                stragglersim::testing::with_two_lines(text, 120, "1 5:1 2:1\n", 250, "1 3:x\n"));
  for (const unsigned pieces : {1U, 2U, 3U, 7U, 64U}) {
    CAPTURE(pieces);
    LibsvmOptions many;
    many.max_pieces = pieces;
    many.piece_bytes = 1;
    REQUIRE_THROWS_WITH(read_libsvm(bad_path, many),
                        bad_path + ":120: feature indices must be increasing; got '2'");
  }
}

TEST_CASE("models: reading a data file adds its size to the process's data traffic",
          "[models][libsvm]") {
  const TempDir dir("data_traffic");
  const std::string svm = dir.write("a.svm", "+1 1:0.5 3:-2\n-1 2:1e-3 4:7\n");
  const std::string csv = dir.write("a.csv", "x,y,label\n1,2,1\n3,4,-1\n5,6,1\n");
  for (const auto& [path, bytes] : {std::pair{svm, 28}, std::pair{csv, 29}}) {
    INFO(path);
    REQUIRE(std::filesystem::file_size(path) == static_cast<std::uintmax_t>(bytes));
    const std::int64_t before = data_bytes_read();
    const Dataset data = path == svm ? read_libsvm(path) : read_csv(path);
    CHECK(data.rows() >= 2);
    CHECK(data_bytes_read() - before == bytes);
  }
}

}  // namespace stragglersim::models

#include "models/csv_reader.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_support.h"

namespace {

using stragglersim::models::all_numbers;
using stragglersim::models::csv_first_line;
using stragglersim::models::CsvOptions;
using stragglersim::models::DataError;
using stragglersim::models::Dataset;
using stragglersim::models::DenseRows;
using stragglersim::models::LabelValues;
using stragglersim::models::read_csv;

using stragglersim::testing::TempDir;

std::string (*const message_of)(const std::function<void()>&) =
    &stragglersim::testing::message_of<DataError>;

}  // namespace

TEST_CASE("models: csv reader takes the last column as the label by default", "[models][csv]") {
  const TempDir dir("csv_test");
  const auto path = dir.write("good.csv",
                              "x1, \"x 2\" ,y\r\n"
                              "1,2.5,+1\r\n"
                              "\n"
                              "  -3 , 4e-1 , -1\r\n"
                              "\"5\",6,0\n");
  const auto data = read_csv(path);
  const auto& a = std::get<DenseRows>(data.features);
  REQUIRE(a.rows() == 3);
  REQUIRE(a.cols() == 2);
  CHECK(a.row(0) == Eigen::RowVector2d(1.0, 2.5));
  CHECK(a.row(1) == Eigen::RowVector2d(-3.0, 0.4));
  CHECK(a.row(2) == Eigen::RowVector2d(5.0, 6.0));
  CHECK(data.labels == Eigen::Vector3d(1.0, -1.0, 0.0));

  CsvOptions by_name;
  by_name.label_column = std::string("x 2");
  const auto named = read_csv(path, by_name);
  CHECK(std::get<DenseRows>(named.features).row(1) == Eigen::RowVector2d(-3.0, -1.0));
  CHECK(named.labels == Eigen::Vector3d(2.5, 0.4, 6.0));

  CsvOptions first;
  first.header = false;
  first.label_column = std::int64_t{0};
  const auto bare = read_csv(dir.write("bare.csv", "7,8,9\n10,11,12\n"), first);
  CHECK(bare.labels == Eigen::Vector2d(7.0, 10.0));
  CHECK(std::get<DenseRows>(bare.features).row(1) == Eigen::RowVector2d(11.0, 12.0));
  first.label_column = std::int64_t{-2};
  CHECK(read_csv(dir.write("bare2.csv", "7,8,9\n"), first).labels[0] == 8.0);
}

TEST_CASE("models: csv reader unquotes every quoted field of a line, commas and quotes inside",
          "[models][csv]") {
  const TempDir dir("csv_test");
  // Three quoted fields on a line, then one: each keeps its own text.
  const auto path = dir.write("quoted.csv",
                              "\"a,1\",\"b\"\"q\",\"y\"\n"
                              "\"1\",\"2\",\"3\"\n"
                              "4,\"5\",6\n");
  CsvOptions by_name;
  by_name.label_column = std::string("b\"q");
  const auto data = read_csv(path, by_name);
  const auto& a = std::get<DenseRows>(data.features);
  REQUIRE(a.rows() == 2);
  CHECK(a.row(0) == Eigen::RowVector2d(1.0, 3.0));
  CHECK(a.row(1) == Eigen::RowVector2d(4.0, 6.0));
  CHECK(data.labels == Eigen::Vector2d(2.0, 5.0));
  by_name.label_column = std::string("a,1");
  CHECK(read_csv(path, by_name).labels == Eigen::Vector2d(1.0, 4.0));
}

TEST_CASE("models: csv reader refuses a first line of numbers as a header when asked",
          "[models][csv]") {
  const TempDir dir("csv_test");
  const std::string headerless = dir.write("headerless.csv", "\n 0.5, 1.25 ,1\n2,3,0\n4,5,1\n");
  CsvOptions asked;
  asked.refuse_numeric_header = true;
  CHECK(message_of([&] { (void)read_csv(headerless, asked); }) ==
        headerless +
            ":2: the first line is all numbers, a data row rather than column names; got "
            "'0.5,1.25,1'; expected \"header\": false in data for a file without a header line "
            "(\"header\": true reads the line as column names)");
  // Without the check the first row is taken as names and lost: 2 rows, not 3.
  CHECK(read_csv(headerless).rows() == 2);
  CsvOptions bare = asked;
  bare.header = false;
  CHECK(read_csv(headerless, bare).rows() == 3);
  // One named column is enough for a header.
  const std::string named = dir.write("named.csv", "1,2,y\n2,3,0\n4,5,1\n");
  CHECK(read_csv(named, asked).rows() == 2);
  CHECK(csv_first_line(headerless) == std::vector<std::string>{"0.5", "1.25", "1"});
  CHECK(csv_first_line(dir.write("quoted.csv", "\"a,b\", 2\n")) ==
        std::vector<std::string>{"a,b", "2"});
  CHECK(csv_first_line(dir.write("blank.csv", "\n\n")).empty());
  CHECK(all_numbers({"1", "-2.5e3", "7"}));
  CHECK_FALSE(all_numbers({"1", "nan"}));
  CHECK_FALSE(all_numbers({}));
}

TEST_CASE("models: csv reader errors name the file and line", "[models][csv]") {
  const TempDir dir("csv_test");
  const auto err =
      [&](const std::string& name, const std::string& contents, const CsvOptions& options = {}) {
        const auto path = dir.write(name, contents);
        return message_of([&] { (void)read_csv(path, options); });
      };
  const auto at = [&](const std::string& name) { return (dir.path() / name).string(); };
  CHECK(message_of([&] { (void)read_csv(at("missing.csv")); }) ==
        at("missing.csv") + ": cannot open file");
  CHECK(err("fields.csv", "a,b,y\n1,2,3\n4,5\n") ==
        at("fields.csv") + ":3: wrong number of fields; got 2; expected 3");
  CHECK(err("number.csv", "a,b,y\n1,2,3\n\n4,abc,6\n") ==
        at("number.csv") + ":4: malformed number in column 'b'; got 'abc'");
  CsvOptions bare;
  bare.header = false;
  CHECK(err("bare.csv", "1,2,3\n4,,6\n", bare) ==
        at("bare.csv") + ":2: malformed number in column 1; got ''");
  CHECK(err("nan.csv", "1,nan,3\n", bare) ==
        at("nan.csv") + ":1: malformed number in column 1; got 'nan'");
  CHECK(err("quote.csv", "a,y\n\"1,2\n") ==
        at("quote.csv") + ":2: unterminated quoted field; got '\"1,2'");
  CsvOptions named;
  named.label_column = std::string("price");
  CHECK(err("name.csv", "a,b,y\n1,2,3\n", named) ==
        at("name.csv") + ":1: no column named 'price'; expected one of: a, b, y");
  CsvOptions index;
  index.label_column = std::int64_t{3};
  CHECK(err("index.csv", "\na,b,y\n1,2,3\n", index) ==
        at("index.csv") + ":2: label column out of range; got 3; expected an index in [-3, 2]");
  CHECK(err("one.csv", "y\n1\n") ==
        at("one.csv") + ":1: need a label and at least one feature; got 1 column");
  CHECK(err("empty.csv", "a,y\n\n") == at("empty.csv") + ": no data rows");
}

TEST_CASE("models: csv reader gives the same data and errors in any number of pieces",
          "[models][csv]") {
  const TempDir dir("csv_test");
  // 300 data rows after blank lines and a header, with CRLF endings, quoted fields, spaces and
  // blank lines between them; and the same rows without a header.
  std::string rows;
  for (int i = 0; i < 300; ++i) {
    rows += i % 7 == 0 ? "\"" : " ";
    rows += std::to_string(0.25 * (i % 11) - 1.0);
    rows += i % 7 == 0 ? "\"," : " ,";
    rows += std::to_string(i);
    rows += ',';
    rows += std::to_string(i % 3);
    rows += i % 4 == 0 ? "\r\n" : "\n";
    if (i % 13 == 0) rows += "\n   \n";
  }
  std::string headed = "\n\n a, \"b\" ,label\n";
  headed += rows;
  const std::string with_header = dir.write("pieces.csv", headed);
  const std::string without_header = dir.write("bare_pieces.csv", rows);
  CsvOptions named;
  named.label_column = std::string("label");
  CsvOptions bare;
  bare.header = false;
  for (const auto& [path, options] :
       {std::pair{with_header, named}, std::pair{without_header, bare}}) {
    CsvOptions one = options;
    one.max_pieces = 1;
    LabelValues one_labels;
    std::int64_t one_rows = 0;
    const Dataset whole = read_csv(path, one, nullptr, &one_labels, &one_rows);
    REQUIRE(whole.rows() == 300);
    REQUIRE(one_labels.values == std::vector<double>{0.0, 1.0, 2.0});
    for (const unsigned pieces : {2U, 3U, 7U, 64U, 1000U}) {
      CAPTURE(path, pieces);
      CsvOptions many = options;
      many.max_pieces = pieces;
      many.piece_bytes = 1;  // every piece as small as the file allows
      LabelValues many_labels;
      std::int64_t many_rows = 0;
      const Dataset split = read_csv(path, many, nullptr, &many_labels, &many_rows);
      CHECK(split.labels == whole.labels);
      CHECK(std::get<DenseRows>(split.features) == std::get<DenseRows>(whole.features));
      CHECK(many_rows == one_rows);
      CHECK(many_labels.values == one_labels.values);
    }
  }
  // Two bad lines: every split reports the first, by its line in the file.
  const std::string bad_path =
      dir.write("bad_pieces.csv",
                stragglersim::testing::with_two_lines(headed, 120, "1,2\n", 250, "1,x,2\n"));
  for (const unsigned pieces : {1U, 2U, 3U, 7U, 64U}) {
    CAPTURE(pieces);
    CsvOptions many = named;
    many.max_pieces = pieces;
    many.piece_bytes = 1;
    CHECK(message_of([&] { (void)read_csv(bad_path, many); }) ==
          bad_path + ":120: wrong number of fields; got 2; expected 3");
  }
}

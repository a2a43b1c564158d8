#include "models/idx_reader.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "models/dataset.h"
#include "models/fashion_mnist.h"
#include "tests/idx_fixture.h"
#include "tests/test_support.h"

namespace {

using stragglersim::models::DataError;
using stragglersim::models::DenseRows;
using stragglersim::models::FashionMnistOptions;
using stragglersim::models::load_fashion_mnist;
using stragglersim::models::read_idx_bytes;
using stragglersim::models::read_idx_items;
using Bytes = std::vector<std::uint8_t>;

/// A scratch folder that also writes IDX payloads, gzipped (through zlib) or plain.
class IdxDir : public stragglersim::testing::TempDir {
 public:
  using TempDir::TempDir;

  /// Writes `bytes` gzip-compressed (through zlib) and returns the path.
  [[nodiscard]] std::string gzip(const std::string& name, const Bytes& bytes) const {
    const auto file = (TempDir::path() / name).string();
    REQUIRE_NOTHROW(stragglersim::testing::write_idx_file(file, bytes, true));
    return file;
  }
  /// Writes `bytes` as they are.
  [[nodiscard]] std::string plain(const std::string& name, const Bytes& bytes) const {
    const auto file = (TempDir::path() / name).string();
    stragglersim::testing::write_idx_file(file, bytes, false);
    return file;
  }
  [[nodiscard]] std::string path() const { return TempDir::path().string(); }
};

// An IDX file of unsigned bytes with the given sizes and values.
Bytes idx(const std::vector<std::uint32_t>& sizes, const Bytes& values) {
  return stragglersim::testing::idx_file(sizes, values);
}

// n images of 2 × 2 pixels: image i has pixels (i, 2i, 3i, 255); labels `labels`.
Bytes images(std::uint32_t n) {
  Bytes v;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (const std::uint32_t k : {1U, 2U, 3U}) v.push_back(static_cast<std::uint8_t>(k * i));
    v.push_back(255);
  }
  return idx({n, 2, 2}, v);
}

}  // namespace

TEST_CASE("models: idx reader reads gzip and plain files", "[models][idx]") {
  const IdxDir dir("idx_good");
  const Bytes values = {1, 2, 3, 4, 5, 6};
  for (const auto& path :
       {dir.gzip("a.gz", idx({3, 1, 2}, values)), dir.plain("a.idx", idx({3, 1, 2}, values))}) {
    const auto read = read_idx_bytes(path, 3);
    CHECK(read.sizes == std::vector<std::uint32_t>{3, 1, 2});
    CHECK(read.item_size() == 2);
    CHECK(read.values == values);
  }
  const auto labels = read_idx_bytes(dir.gzip("l.gz", idx({4}, {9, 0, 6, 0})), 1);
  CHECK(labels.sizes == std::vector<std::uint32_t>{4});
  CHECK(labels.item_size() == 1);
  CHECK(labels.values == Bytes{9, 0, 6, 0});
  CHECK(read_idx_bytes(dir.gzip("empty.gz", idx({0, 28, 28}, {})), 3).values.empty());
}

TEST_CASE("models: idx reader rejects malformed files with exact messages", "[models][idx]") {
  const IdxDir dir("idx_bad");
  const auto err = [](const std::string& path, int dims) {
    return stragglersim::testing::message_of<DataError>([&] { (void)read_idx_bytes(path, dims); });
  };
  const std::string missing = dir.path() + "/missing.gz";
  CHECK(err(missing, 1) == missing + ": cannot open file");

  const auto magic = dir.gzip("magic.gz", idx({2, 2}, {1, 2, 3, 4}));
  CHECK(err(magic, 3) == magic +
                             ": not an IDX file of unsigned bytes with 3 dimensions; got magic "
                             "0x00000802; expected 0x00000803");
  Bytes floats = idx({2}, {0, 0, 0, 0, 0, 0, 0, 0});
  floats[2] = 0x0D;  // IDX type 0x0D = float
  const auto typed = dir.gzip("float.gz", floats);
  CHECK(err(typed, 1) == typed +
                             ": not an IDX file of unsigned bytes with 1 dimensions; got magic "
                             "0x00000d01; expected 0x00000801");

  const auto short_magic = dir.gzip("short_magic.gz", {0, 0});
  CHECK(err(short_magic, 3) == short_magic + ": truncated header; got 2 bytes; expected 16");
  Bytes header = idx({60000, 28, 28}, {});
  header.resize(10);
  const auto short_header = dir.gzip("short_header.gz", header);
  CHECK(err(short_header, 3) == short_header + ": truncated header; got 10 bytes; expected 16");

  const auto truncated = dir.gzip("truncated.gz", idx({3, 2, 2}, {1, 2, 3, 4, 5}));
  CHECK(err(truncated, 3) == truncated + ": truncated data; got 5 bytes; expected 12 (3 x 2 x 2)");
  const auto trailing = dir.gzip("trailing.gz", idx({2}, {1, 2, 3}));
  CHECK(err(trailing, 1) == trailing + ": trailing data after 2 bytes (2)");
  const auto huge = dir.gzip("huge.gz", idx({4'000'000'000U, 4'000'000'000U, 28}, {}));
  CHECK(err(huge, 3) == huge + ": sizes 4000000000 x 4000000000 x 28 exceed 17179869184 bytes");

  // A gzip stream cut in the middle: zlib reports it.
  const auto whole = dir.gzip("whole.gz", images(200));
  std::ifstream in(whole, std::ios::binary);
  Bytes compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  compressed.resize(compressed.size() / 2);
  const auto cut = dir.plain("cut.gz", compressed);
  CHECK(err(cut, 3) == cut + ": gzip error: unexpected end of file");
}

// The bytes of items `items` of a full read, in that order.
Bytes items_of(const stragglersim::models::IdxBytes& full, const std::vector<std::size_t>& items) {
  Bytes out;
  const std::size_t size = full.item_size();
  for (const std::size_t i : items) {
    const auto first = full.values.begin() + static_cast<std::ptrdiff_t>(i * size);
    out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(size));
  }
  return out;
}

TEST_CASE("models: idx reader reads only the items asked for, the full read's bytes",
          "[models][idx]") {
  const IdxDir dir("idx_items");
  const Bytes file = images(13);
  const std::vector<std::vector<std::size_t>> subsets = {
      {}, {0}, {12}, {1, 4, 5, 11}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
  for (const auto& path : {dir.gzip("i.gz", file), dir.plain("i.idx", file)}) {
    INFO(path);
    const auto full = read_idx_bytes(path, 3);
    for (const auto& items : subsets) {
      const auto part = read_idx_items(path, 3, items);
      CHECK(part.sizes == full.sizes);
      CHECK(part.values == items_of(full, items));
    }
    CHECK(stragglersim::testing::message_of<DataError>([&] {
            (void)read_idx_items(path, 3, std::vector<std::size_t>{2, 13});
          }) == path + ": no item 13; got 13 items (13 x 2 x 2)");
  }
  // Items of 6 000 000 bytes, two per 16 MiB chunk of the gzip stream: items on both sides of
  // a chunk boundary come out whole.
  constexpr std::uint32_t kRows = 3000;
  constexpr std::uint32_t kCols = 2000;
  Bytes big(std::size_t{5} * kRows * kCols);
  for (std::size_t b = 0; b < big.size(); ++b) {
    big[b] = static_cast<std::uint8_t>((b * 7 + b / 6'000'000) % 251);
  }
  const Bytes big_file = idx({5, kRows, kCols}, big);
  for (const auto& path : {dir.gzip("big.gz", big_file), dir.plain("big.idx", big_file)}) {
    INFO(path);
    const auto full = read_idx_bytes(path, 3);
    for (const std::vector<std::size_t>& items :
         {std::vector<std::size_t>{1, 2}, std::vector<std::size_t>{0, 3, 4}}) {
      CHECK(read_idx_items(path, 3, items).values == items_of(full, items));
    }
  }
}

TEST_CASE("models: idx reader refuses a malformed file alike with or without items",
          "[models][idx]") {
  const IdxDir dir("idx_items_bad");
  const Bytes truncated = idx({3, 2, 2}, {1, 2, 3, 4, 5});
  const Bytes trailing = idx({2, 1, 2}, {1, 2, 3, 4, 5});
  const Bytes no_data = idx({0, 2, 2}, {7});
  const std::vector<std::string> paths = {dir.gzip("truncated.gz", truncated),
                                          dir.plain("truncated.idx", truncated),
                                          dir.gzip("trailing.gz", trailing),
                                          dir.plain("trailing.idx", trailing),
                                          dir.gzip("no_data.gz", no_data),
                                          dir.plain("no_data.idx", no_data),
                                          dir.plain("magic.idx", idx({2}, {1, 2}))};
  for (const auto& path : paths) {
    INFO(path);
    const std::string expected =
        stragglersim::testing::message_of<DataError>([&] { (void)read_idx_bytes(path, 3); });
    CHECK(expected != "no error");
    CHECK(stragglersim::testing::message_of<DataError>(
              [&] { (void)read_idx_items(path, 3, {}); }) == expected);
    if (path.find("no_data") == std::string::npos) {  // a file of no item has no item 0
      CHECK(stragglersim::testing::message_of<DataError>(
                [&] { (void)read_idx_items(path, 3, std::vector<std::size_t>{0}); }) == expected);
    }
  }
  CHECK(stragglersim::testing::message_of<DataError>([&] {
          (void)read_idx_items(paths[1], 3, {});
        }) == paths[1] + ": truncated data; got 5 bytes; expected 12 (3 x 2 x 2)");
  CHECK(stragglersim::testing::message_of<DataError>([&] {
          (void)read_idx_items(paths[3], 3, {});
        }) == paths[3] + ": trailing data after 4 bytes (2 x 1 x 2)");
}

TEST_CASE("models: a partial fashion-mnist load holds the full load's rows, bitwise",
          "[models][idx]") {
  for (const bool gzip : {true, false}) {
    INFO((gzip ? "gzip" : "plain"));
    const IdxDir dir(gzip ? "fashion_partial_gz" : "fashion_partial_plain");
    stragglersim::testing::write_fashion_fixture(dir.path(), 300, 70, 5, 3, gzip, 11);
    for (const Eigen::Index limit : {Eigen::Index{0}, Eigen::Index{41}}) {
      INFO("rows " << limit);
      FashionMnistOptions options;
      options.dir = dir.path();
      options.negative_class = 2;
      options.positive_class = 7;
      options.rows = limit;
      const auto full = load_fashion_mnist(options);
      const auto& a = std::get<DenseRows>(full.train.features);
      const Eigen::Index m = full.train.rows();
      REQUIRE(m > 20);
      if (limit > 0) CHECK(m == limit);
      std::set<double> full_labels(full.train.labels.begin(), full.train.labels.end());
      full_labels.insert(full.test.labels.begin(), full.test.labels.end());
      std::vector<std::vector<Eigen::Index>> keeps = {{}, {0}, {m - 1}, {3, 4, 5, 17, m - 2}};
      std::vector<Eigen::Index> evens;
      for (Eigen::Index t = 0; t < m; t += 2) evens.push_back(t);
      keeps.push_back(evens);
      for (const auto& rows : keeps) {
        INFO("keep " << rows.size() << " rows");
        stragglersim::models::RowKeep keep;
        keep.rows = rows;
        stragglersim::models::LabelValues labels;
        Eigen::Index train_rows = -1;
        const auto part = load_fashion_mnist(options, keep, &labels, &train_rows);
        CHECK(train_rows == m);
        CHECK(labels.values == std::vector<double>(full_labels.begin(), full_labels.end()));
        CHECK(part.test.rows() == 0);
        const auto& b = std::get<DenseRows>(part.train.features);
        REQUIRE(b.rows() == static_cast<Eigen::Index>(rows.size()));
        REQUIRE(b.cols() == a.cols());
        for (std::size_t h = 0; h < rows.size(); ++h) {
          const auto t = rows[h];
          CHECK(b.row(static_cast<Eigen::Index>(h)) == a.row(t));
          CHECK(part.train.labels[static_cast<Eigen::Index>(h)] == full.train.labels[t]);
        }
      }
    }
  }
}

TEST_CASE("models: fashion-mnist loader keeps two classes and scales pixels", "[models][idx]") {
  const IdxDir dir("fashion_small");
  (void)dir.gzip("train-images-idx3-ubyte.gz", images(6));
  (void)dir.gzip("train-labels-idx1-ubyte.gz", idx({6}, {0, 6, 3, 6, 0, 9}));
  // The test files may also be plain (uncompressed) files.
  (void)dir.plain("t10k-images-idx3-ubyte", images(3));
  (void)dir.plain("t10k-labels-idx1-ubyte", idx({3}, {6, 1, 0}));
  FashionMnistOptions options;
  options.dir = dir.path();
  const auto sets = load_fashion_mnist(options);
  const auto& train = std::get<DenseRows>(sets.train.features);
  REQUIRE(train.rows() == 4);  // items 0, 1, 3, 4
  REQUIRE(train.cols() == 4);
  CHECK(sets.train.labels == Eigen::Vector4d(-1, 1, 1, -1));
  CHECK(train(2, 0) == 3.0 / 255.0);  // item 3, pixel (3·1)
  CHECK(train(2, 2) == 9.0 / 255.0);
  CHECK(train(3, 3) == 1.0);
  CHECK(sets.test.rows() == 2);
  CHECK(sets.test.labels == Eigen::Vector2d(1, -1));

  options.negative_class = 9;
  options.positive_class = 3;
  options.scale = false;
  options.rows = 1;
  const auto other = load_fashion_mnist(options);
  REQUIRE(other.train.rows() == 1);
  CHECK(other.train.labels[0] == 1.0);  // item 2 (class 3) comes first in the file
  CHECK(std::get<DenseRows>(other.train.features)(0, 1) == 4.0);
  CHECK(other.test.rows() == 0);
}

TEST_CASE("models: fashion-mnist loader names the file of a mismatch", "[models][idx]") {
  const IdxDir dir("fashion_bad");
  FashionMnistOptions options;
  options.dir = dir.path();
  const std::string train_images = dir.gzip("train-images-idx3-ubyte.gz", images(3));
  const std::string train_labels = dir.gzip("train-labels-idx1-ubyte.gz", idx({2}, {0, 6}));
  const auto err = [&] {
    return stragglersim::testing::message_of<DataError>([&] { (void)load_fashion_mnist(options); });
  };
  CHECK(err() == train_labels +
                     ": label count differs from the image count; got 2; expected 3 (the images "
                     "in " +
                     train_images + ")");
  (void)dir.gzip("train-labels-idx1-ubyte.gz", idx({3}, {0, 12, 6}));
  CHECK(err() == train_labels + ": label at item 1 is not a class; got 12; expected 0 to 9");
  (void)dir.gzip("train-labels-idx1-ubyte.gz", idx({3}, {0, 6, 6}));
  CHECK(err() == dir.path() + "/t10k-images-idx3-ubyte: cannot open file");
  const std::string test_images = dir.gzip("t10k-images-idx3-ubyte.gz", idx({1, 1, 3}, {1, 2, 3}));
  (void)dir.gzip("t10k-labels-idx1-ubyte.gz", idx({1}, {0}));
  CHECK(err() == test_images + ": images are 1 x 3; expected 2 x 2 like the training images");
  // The same pixel count in another shape is refused too.
  (void)dir.gzip("t10k-images-idx3-ubyte.gz", idx({1, 4, 1}, {1, 2, 3, 4}));
  CHECK(err() == test_images + ": images are 4 x 1; expected 2 x 2 like the training images");
}

TEST_CASE("models: the installed fashion-mnist files load as 12000 and 2000 images",
          "[models][idx][fashion_mnist]") {
  // The test command installs the data set (tools/install_dependencies.sh): its absence
  // is a failure, not a skip.
  REQUIRE(std::filesystem::exists(std::string(stragglersim::models::kFashionMnistDir) +
                                  "/train-images-idx3-ubyte.gz"));
  const auto sets = load_fashion_mnist(FashionMnistOptions{});
  // 6000 training and 1000 test images per class, 28 × 28 pixels.
  CHECK(sets.train.rows() == 12'000);
  CHECK(sets.train.dimension() == 784);
  CHECK(sets.test.rows() == 2'000);
  CHECK(sets.train.labels.sum() == 0.0);
  CHECK(sets.test.labels.sum() == 0.0);
  const auto& a = std::get<DenseRows>(sets.train.features);
  CHECK(a.minCoeff() == 0.0);
  CHECK(a.maxCoeff() == 1.0);
}

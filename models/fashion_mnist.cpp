#include "models/fashion_mnist.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "models/base/invariant.h"
#include "models/idx_reader.h"

namespace stragglersim::models {

namespace {

constexpr std::uint8_t kClassCount = 10;

// Images and labels of one half (train or test), the two classes kept, at most `limit` rows.
// `shape` holds the image height and width: set from the training half, checked for the test.
Dataset load_half(const std::string& dir,
                  std::string_view prefix,
                  const FashionMnistOptions& options,
                  Eigen::Index limit,
                  std::vector<std::uint32_t>& shape) {
  const std::string images_path =
      fashion_mnist_file(dir, fmt::format("{}-images-idx3-ubyte", prefix));
  const std::string labels_path =
      fashion_mnist_file(dir, fmt::format("{}-labels-idx1-ubyte", prefix));
  const IdxBytes images = read_idx_bytes(images_path, 3);
  const IdxBytes labels = read_idx_bytes(labels_path, 1);
  if (labels.sizes[0] != images.sizes[0]) {
    throw DataError(fmt::format(
        "{}: label count differs from the image count; got {}; expected {} (the images in {})",
        labels_path,
        labels.sizes[0],
        images.sizes[0],
        images_path));
  }
  const auto pixels = static_cast<Eigen::Index>(images.item_size());
  // The same height and width, not only the same pixel count: a 14 × 56 image is no 28 × 28 one.
  const std::vector<std::uint32_t> own{images.sizes[1], images.sizes[2]};
  if (shape.empty()) {
    shape = own;
  } else if (own != shape) {
    throw DataError(fmt::format("{}: images are {} x {}; expected {} x {} like the training images",
                                images_path,
                                own[0],
                                own[1],
                                shape[0],
                                shape[1]));
  }
  Eigen::Index kept = 0;
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    const std::uint8_t c = labels.values[i];
    if (c >= kClassCount) {
      throw DataError(fmt::format(
          "{}: label at item {} is not a class; got {}; expected 0 to 9", labels_path, i, c));
    }
    if (c == options.negative_class || c == options.positive_class) ++kept;
  }
  if (limit > 0) kept = std::min(kept, limit);

  Dataset out;
  DenseRows a(kept, pixels);
  out.labels.resize(kept);
  const double factor = options.scale ? 1.0 / 255.0 : 1.0;
  Eigen::Index row = 0;
  for (std::size_t i = 0; i < labels.values.size() && row < kept; ++i) {
    const std::uint8_t c = labels.values[i];
    if (c != options.negative_class && c != options.positive_class) continue;
    const std::uint8_t* image = images.values.data() + i * images.item_size();
    for (Eigen::Index k = 0; k < pixels; ++k) {
      a(row, k) = factor * static_cast<double>(image[k]);
    }
    out.labels[row] = c == options.positive_class ? 1.0 : -1.0;
    ++row;
  }
  out.features = std::move(a);
  return out;
}

}  // namespace

std::string fashion_mnist_file(const std::string& dir, std::string_view name) {
  const std::filesystem::path base(dir);
  const auto gz = base / (std::string(name) + ".gz");
  return std::filesystem::exists(gz) ? gz.string() : (base / std::string(name)).string();
}

FashionMnistSets load_fashion_mnist(const FashionMnistOptions& options) {
  STRAGGLERSIM_ASSERT(options.negative_class >= 0 && options.negative_class < kClassCount &&
                          options.positive_class >= 0 && options.positive_class < kClassCount,
                      "fashion_mnist: classes must be in 0 … 9");
  STRAGGLERSIM_ASSERT(options.negative_class != options.positive_class,
                      "fashion_mnist: the two classes must differ");
  STRAGGLERSIM_ASSERT(options.rows >= 0, "fashion_mnist: rows must be >= 0");
  FashionMnistSets out;
  std::vector<std::uint32_t> shape;
  out.train = load_half(options.dir, "train", options, options.rows, shape);
  out.test = load_half(options.dir, "t10k", options, 0, shape);
  return out;
}

}  // namespace stragglersim::models

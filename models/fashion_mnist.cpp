#include "models/fashion_mnist.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "models/base/invariant.h"
#include "models/idx_reader.h"

namespace stragglersim::models {

namespace {

constexpr std::uint8_t kClassCount = 10;

// The image file against its label file: as many images as labels, and the height and width of
// `shape` (set here from the training half, checked for the test half).
void check_image_file(const IdxBytes& images,
                      const IdxBytes& labels,
                      const std::string& images_path,
                      const std::string& labels_path,
                      std::vector<std::uint32_t>& shape) {
  if (labels.sizes[0] != images.sizes[0]) {
    throw DataError(fmt::format(
        "{}: label count differs from the image count; got {}; expected {} (the images in {})",
        labels_path,
        labels.sizes[0],
        images.sizes[0],
        images_path));
  }
  // The same height and width, not only the same pixel count: a 14 × 56 image is no 28 × 28
  // one.
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
}

// The file items of the half's rows (the two classes, or all, in file order, at most `limit`).
std::vector<std::size_t> class_items(const IdxBytes& labels,
                                     const std::string& labels_path,
                                     const FashionMnistOptions& options,
                                     Eigen::Index limit) {
  std::vector<std::size_t> items;
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    const std::uint8_t c = labels.values[i];
    if (c >= kClassCount) {
      throw DataError(fmt::format(
          "{}: label at item {} is not a class; got {}; expected 0 to 9", labels_path, i, c));
    }
    const bool kept_class =
        options.all_classes || c == options.negative_class || c == options.positive_class;
    if (kept_class && (limit == 0 || static_cast<Eigen::Index>(items.size()) < limit)) {
      items.push_back(i);
    }
  }
  return items;
}

// Images and labels of one half (train or test), the two classes kept, at most `limit` rows.
// `shape` holds the image height and width: set from the training half, checked for the test.
// `keep` (null: every row) selects rows of the half; `label_values` collects every row's label
// and `rows` counts them.
Dataset load_half(const std::string& dir,
                  std::string_view prefix,
                  const FashionMnistOptions& options,
                  Eigen::Index limit,
                  std::vector<std::uint32_t>& shape,
                  RowKeep* keep,
                  LabelValues* label_values,
                  Eigen::Index* rows) {
  const std::string images_path =
      fashion_mnist_file(dir, fmt::format("{}-images-idx3-ubyte", prefix));
  const std::string labels_path =
      fashion_mnist_file(dir, fmt::format("{}-labels-idx1-ubyte", prefix));
  // Only a load that keeps images picks them from the labels first; every other load checks the
  // image file before the label file, so that both report the same error for the same files.
  const bool labels_first = keep != nullptr && !keep->rows.empty();
  IdxBytes images;
  if (!labels_first) {
    images = keep == nullptr ? read_idx_bytes(images_path, 3) : read_idx_items(images_path, 3, {});
  }
  const IdxBytes labels = read_idx_bytes(labels_path, 1);
  const auto check_images = [&] {
    check_image_file(images, labels, images_path, labels_path, shape);
  };

  if (!labels_first) check_images();
  std::vector<std::size_t> items = class_items(labels, labels_path, options, limit);
  const auto label_of = [&](std::size_t item) {
    if (options.all_classes) {
      return static_cast<double>(labels.values[item]);
    }
    return labels.values[item] == options.positive_class ? 1.0 : -1.0;
  };
  if (rows != nullptr) *rows = static_cast<Eigen::Index>(items.size());
  if (label_values != nullptr) {
    for (const std::size_t i : items) label_values->add(label_of(i));
  }
  if (keep != nullptr) {
    std::vector<std::size_t> chosen;
    for (std::size_t t = 0; t < items.size(); ++t) {
      if (keep->keeps(static_cast<Eigen::Index>(t))) chosen.push_back(items[t]);
    }
    items = std::move(chosen);
  }
  if (labels_first) {
    images = read_idx_items(images_path, 3, items);
    check_images();
  }

  const auto pixels = static_cast<Eigen::Index>(images.item_size());
  const auto kept = static_cast<Eigen::Index>(items.size());
  Dataset out;
  DenseRows a(kept, pixels);
  out.labels.resize(kept);
  const double factor = options.scale ? 1.0 / 255.0 : 1.0;
  for (Eigen::Index row = 0; row < kept; ++row) {
    const auto item = items[static_cast<std::size_t>(row)];
    // A partial read holds only the kept images, in order; a full read holds every item.
    const std::size_t at = keep != nullptr ? static_cast<std::size_t>(row) : item;
    const std::uint8_t* image = images.values.data() + at * images.item_size();
    for (Eigen::Index k = 0; k < pixels; ++k) {
      a(row, k) = factor * static_cast<double>(image[k]);
    }
    out.labels[row] = label_of(item);
  }
  out.features = std::move(a);
  return out;
}

void check_options(const FashionMnistOptions& options) {
  STRAGGLERSIM_ASSERT(options.negative_class >= 0 && options.negative_class < kClassCount &&
                          options.positive_class >= 0 && options.positive_class < kClassCount,
                      "fashion_mnist: classes must be in 0 … 9");
  STRAGGLERSIM_ASSERT(options.negative_class != options.positive_class,
                      "fashion_mnist: the two classes must differ");
  STRAGGLERSIM_ASSERT(options.rows >= 0 && options.test_rows >= 0,
                      "fashion_mnist: rows and test_rows must be >= 0");
}

}  // namespace

std::string fashion_mnist_file(const std::string& dir, std::string_view name) {
  const std::filesystem::path base(dir);
  const auto gz = base / (std::string(name) + ".gz");
  return std::filesystem::exists(gz) ? gz.string() : (base / std::string(name)).string();
}

FashionMnistSets load_fashion_mnist(const FashionMnistOptions& options) {
  check_options(options);
  FashionMnistSets out;
  std::vector<std::uint32_t> shape;
  out.train =
      load_half(options.dir, "train", options, options.rows, shape, nullptr, nullptr, nullptr);
  out.test =
      load_half(options.dir, "t10k", options, options.test_rows, shape, nullptr, nullptr, nullptr);
  return out;
}

FashionMnistSets load_fashion_mnist(const FashionMnistOptions& options,
                                    RowKeep& keep,
                                    LabelValues* label_values,
                                    Eigen::Index* train_rows) {
  check_options(options);
  FashionMnistSets out;
  std::vector<std::uint32_t> shape;
  out.train = load_half(
      options.dir, "train", options, options.rows, shape, &keep, label_values, train_rows);
  RowKeep none;
  out.test = load_half(
      options.dir, "t10k", options, options.test_rows, shape, &none, label_values, nullptr);
  return out;
}

}  // namespace stragglersim::models

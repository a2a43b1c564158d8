#pragma once
// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) as binary logistic regression between two of its
// ten classes, read from Debian's dataset-fashion-mnist package (IDX files, gzip, read with
// zlib). The training set comes from train-*, the test set from t10k-*; no split is drawn.

#include <array>
#include <string>
#include <string_view>

#include "models/dataset.h"

namespace stragglersim::models {

inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr std::array<std::string_view, 10> kFashionMnistClasses = {"T-shirt/top",
                                                                          "Trouser",
                                                                          "Pullover",
                                                                          "Dress",
                                                                          "Coat",
                                                                          "Sandal",
                                                                          "Shirt",
                                                                          "Sneaker",
                                                                          "Bag",
                                                                          "Ankle boot"};

/// Default pair: 0 T-shirt/top (label −1) vs 6 Shirt (label +1), the pair Fashion-MNIST's
/// classifiers confuse most, so a linear model keeps improving over the paper's 100 iterations
/// instead of saturating in a handful (as trouser vs bag would).
struct FashionMnistOptions {
  std::string dir = std::string(kFashionMnistDir);
  int negative_class = 0;
  int positive_class = 6;
  /// All ten classes with labels 0 … 9 (softmax models); the pair above is then unused.
  bool all_classes = false;
  /// Features are pixel / 255 in [0, 1] when true, raw 0 … 255 otherwise.
  bool scale = true;
  /// The first `rows` training images of the two classes, in file order (0: all of them).
  Eigen::Index rows = 0;
  /// The first `test_rows` test (t10k) images of the two classes, in file order (0: all).
  Eigen::Index test_rows = 0;
};

struct FashionMnistSets {
  Dataset train;
  Dataset test;
};

/// Reads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (or the same names without .gz)
/// and keeps the two classes: dense rows of 28·28 = 784 pixels, labels −1 (negative_class) and
/// +1 (positive_class); with all_classes every image, labels 0 … 9. Throws DataError naming the
/// file for a missing or malformed file, a label count that differs from the image count, a label
/// outside 0 … 9, or test images of another size than the training images. Illegal: a class outside
/// 0 … 9, equal classes, rows < 0.
FashionMnistSets load_fashion_mnist(const FashionMnistOptions& options);

/// A partial load (an MPI worker's rows, docs/mpi_backend.md "Data"): the same files checked
/// alike, but the training set holds only training rows keep->rows (ascending indices into the
/// full load's training rows), in that order and bitwise equal to them, and the test set is
/// checked but kept empty. Only the kept images are read: a plain file by seeking to each
/// image, a gzip file decompressed in full keeping only them (the label files are read whole).
/// `label_values` (optional) receives the labels of every training and test row of the full
/// load, `train_rows` (optional) its training row count. With keep->rows empty the images are
/// checked before the labels, as in the full load; otherwise (the files read once before) the
/// labels are read first to pick the images.
FashionMnistSets load_fashion_mnist(const FashionMnistOptions& options,
                                    RowKeep& keep,
                                    LabelValues* label_values,
                                    Eigen::Index* train_rows);

/// The path of one of the four files: "<dir>/<name>.gz" if it exists, else "<dir>/<name>".
std::string fashion_mnist_file(const std::string& dir, std::string_view name);

}  // namespace stragglersim::models

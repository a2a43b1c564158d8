#include "experiments/config/data_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "experiments/config/config_error.h"
#include "experiments/config/memory_budget.h"
#include "models/base/invariant.h"
#include "models/base/random_stream.h"
#include "models/csv_reader.h"
#include "models/fashion_mnist.h"
#include "models/libsvm_reader.h"
#include "models/synthetic_data.h"
#include "models/tabular_synthetic_data.h"

namespace stragglersim::experiments {
namespace {

// Dense storage of a generated sparse table is refused above this many entries (1.6 GB).
constexpr std::int64_t kMaxDenseEntries = 200'000'000;

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& path) {
  const std::filesystem::path p(path);
  return p.is_absolute() ? p : base / p;
}

using FileReader = std::function<models::Dataset(const std::string& full_path)>;

models::Dataset read_file(JsonReader& data,
                          std::string_view key,
                          const std::filesystem::path& base_dir,
                          std::string_view expected,
                          const FileReader& read) {
  const std::string path = data.string(key, std::nullopt);
  const auto full = resolve(base_dir, path);
  if (!std::filesystem::is_regular_file(full)) {
    data.fail_value(key, "cannot open data file", path, expected);
  }
  try {
    return read(full.string());
  } catch (const models::DataError& e) {
    data.fail(key, e.what());
  }
}

double read_test_fraction(JsonReader& data, double fallback) {
  return data.number("test_fraction", fallback, 0.0, 0.95);
}

// "test_path" (read by `read`, checked to have at most the training set's features) or a
// "test_fraction" split; returns the test fraction to split off (0 when a test file was read).
double read_test_file(JsonReader& data,
                      const std::filesystem::path& base_dir,
                      std::string_view expected,
                      const FileReader& read,
                      const models::Dataset& train,
                      LoadedData& out) {
  if (!data.has("test_path")) {
    return read_test_fraction(data, 0.2);
  }
  if (data.has("test_fraction")) {
    data.fail("test_fraction", "give either test_path or test_fraction, not both");
  }
  models::Dataset test = read_file(data, "test_path", base_dir, expected, read);
  if (test.dimension() > train.dimension()) {
    data.fail_value("test_path",
                    "test set has more features than the training set",
                    test.dimension(),
                    fmt::format("at most {} features", train.dimension()));
  }
  out.test = std::make_shared<models::Dataset>(std::move(test));
  return 0.0;
}

/// Reads "storage" of a generated sparse table and, for "dense", checks that the whole table
/// fits; true when it must be densified.
bool dense_asked(JsonReader& data, Eigen::Index rows, Eigen::Index features) {
  const auto storage = data.choice("storage", "storage", {"dense", "sparse"}, "sparse");
  if (storage == "sparse") {
    return false;
  }
  const std::int64_t entries = rows * features;
  if (entries > kMaxDenseEntries) {
    data.fail_value(
        "storage",
        fmt::format("too large for dense storage ({} x {} = {} entries)", rows, features, entries),
        storage,
        fmt::format("\"sparse\", or at most {} entries", kMaxDenseEntries));
  }
  require_memory(data,
                 "storage",
                 fmt::format("dense storage ({} x {})", rows, features),
                 16.0 * static_cast<double>(entries),
                 storage);
  return true;
}

void densify(models::Dataset& all) {
  models::DenseRows dense = std::get<models::SparseRows>(all.features).toDense();
  all.features = std::move(dense);
}

// A paper-shaped sparse table: 16 bytes per non-zero and 8 per row, twice while the split copies.
void require_sparse_memory(const JsonReader& data, std::int64_t rows, int nonzeros_per_row) {
  require_memory(data,
                 "rows",
                 fmt::format("the data set ({} rows, {} non-zeros each)", rows, nonzeros_per_row),
                 2.0 * static_cast<double>(rows) * (16.0 * nonzeros_per_row + 8.0),
                 rows);
}

// What a loaded data set holds: 8 bytes per dense entry, 16 per sparse non-zero, 8 per label.
double dataset_bytes(const models::Dataset& d) {
  const double per_entry = d.is_sparse() ? 16.0 : 8.0;
  return per_entry * static_cast<double>(d.stored_entries()) + 8.0 * static_cast<double>(d.rows());
}

/// A source's rows, all or those a RowKeep selects (with every row's distinct labels), and
/// how many there are: what a full and a partial load share.
struct Source {
  Eigen::Index rows = 0;
  std::function<models::Dataset(models::RowKeep*, models::LabelValues*)> make;
};

// The dense generators (Gaussian mixture, linear regression): rows × features given.
Source read_dense_generator(JsonReader& data,
                            const std::string& generator,
                            std::uint64_t data_seed,
                            double& test_fraction) {
  const auto rows = data.integer("rows", std::nullopt, 2, 100'000'000);
  const auto features = data.integer("features", std::nullopt, 1, 10'000'000);
  // Dense rows × features doubles, twice while the train/test split copies them.
  require_memory(data,
                 "features",
                 fmt::format("the data set ({} x {} dense)", rows, features),
                 16.0 * static_cast<double>(rows) * static_cast<double>(features),
                 features);
  test_fraction = read_test_fraction(data, 0.2);
  // Per generator: least squares is as hard as κ makes it; a mixture's logistic loss is
  // conditioned by its separation and l2 (docs/model.md "Synthetic data").
  const double condition =
      data.number("condition",
                  generator == "gaussian_mixture" ? models::GaussianMixtureOptions{}.condition
                                                  : models::LinearRegressionOptions{}.condition,
                  1.0,
                  1e12);
  if (generator == "gaussian_mixture") {
    const double separation = data.number("separation", 1.5, 0.0);
    const models::GaussianMixtureOptions options{rows, features, separation, data_seed, condition};
    return {rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
              return models::make_gaussian_mixture(options, keep, labels);
            }};
  }
  const double noise = data.number("noise", 0.5, 0.0);
  const models::LinearRegressionOptions options{rows, features, noise, data_seed, condition};
  return {rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
            return models::make_linear_regression(options, keep, labels);
          }};
}

Source read_sparse_table(JsonReader& data,
                         const std::string& generator,
                         std::uint64_t data_seed,
                         double& test_fraction) {
  // The paper-shaped sparse tables: sizes default to the paper's (README.md (The paper's figures)).
  Source source;
  Eigen::Index features = 0;
  if (generator == "amazon_like") {
    models::AmazonLikeOptions options;
    options.rows = data.integer("rows", options.rows, 2, 100'000'000);
    options.features =
        data.integer("features", options.features, models::kAmazonLikeMinFeatures, 10'000'000);
    options.positive_fraction =
        data.number("positive_fraction", options.positive_fraction, 0.01, 0.99);
    options.seed = data_seed;
    require_sparse_memory(data, options.rows, 45);
    source = {options.rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
                return models::make_amazon_like(options, keep, labels);
              }};
    features = options.features;
  } else if (generator == "covtype_like") {
    models::CovtypeLikeOptions options;
    options.rows = data.integer("rows", options.rows, 2, 100'000'000);
    options.features =
        data.integer("features", options.features, models::kCovtypeLikeMinFeatures, 10'000'000);
    options.positive_fraction =
        data.number("positive_fraction", options.positive_fraction, 0.01, 0.99);
    options.seed = data_seed;
    require_sparse_memory(data, options.rows, 88);
    source = {options.rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
                return models::make_covtype_like(options, keep, labels);
              }};
    features = options.features;
  } else {
    models::KcHousingLikeOptions options;
    options.rows = data.integer("rows", options.rows, 2, 100'000'000);
    options.features =
        data.integer("features", options.features, models::kKcHousingLikeMinFeatures, 10'000'000);
    options.noise = data.number("noise", options.noise, 0.0);
    options.seed = data_seed;
    require_sparse_memory(data, options.rows, 28);
    source = {options.rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
                return models::make_kc_housing_like(options, keep, labels);
              }};
    features = options.features;
  }
  test_fraction = read_test_fraction(data, 0.2);
  if (dense_asked(data, source.rows, features)) {
    source.make = [make = std::move(source.make)](models::RowKeep* keep,
                                                  models::LabelValues* labels) {
      models::Dataset all = make(keep, labels);
      densify(all);
      return all;
    };
  }
  return source;
}

// Reads the generator's keys and sets the test fraction to split off; generates nothing yet.
Source read_synthetic(JsonReader& data, std::uint64_t seed, double& test_fraction) {
  const auto generator = data.choice(
      "generator",
      "generator",
      {"amazon_like", "covtype_like", "gaussian_mixture", "kc_housing_like", "linear_regression"},
      std::nullopt);
  const auto data_seed = derive_seed(seed, static_cast<std::uint64_t>(Stream::kData));
  if (generator == "gaussian_mixture" || generator == "linear_regression") {
    return read_dense_generator(data, generator, data_seed, test_fraction);
  }
  return read_sparse_table(data, generator, data_seed, test_fraction);
}

std::string class_list() {
  std::string out;
  for (std::size_t c = 0; c < models::kFashionMnistClasses.size(); ++c) {
    out += fmt::format("{}{} {}", c == 0 ? "" : ", ", c, models::kFashionMnistClasses[c]);
  }
  return out;
}

// Reads and checks the keys (unknown keys first, then the folder); loads nothing.
models::FashionMnistOptions read_fashion_mnist_options(JsonReader& data,
                                                       const std::filesystem::path& base_dir) {
  models::FashionMnistOptions options;
  const std::string dir = data.string("dir", options.dir);
  options.dir = resolve(base_dir, dir).string();
  const nlohmann::json classes =
      data.raw_or("classes", {options.negative_class, options.positive_class});
  if (classes == "all") {
    options.all_classes = true;
  } else {
    const bool valid = classes.is_array() && classes.size() == 2 &&
                       std::all_of(classes.begin(),
                                   classes.end(),
                                   [](const auto& c) {
                                     return c.is_number_integer() && c.template get<int>() >= 0 &&
                                            c.template get<int>() <= 9;
                                   }) &&
                       classes[0] != classes[1];
    if (!valid) {
      data.fail_value("classes",
                      "invalid class pair",
                      classes,
                      fmt::format("[negative, positive], two different classes among {}; or "
                                  "\"all\" (labels 0 to 9)",
                                  class_list()));
    }
    options.negative_class = classes[0].get<int>();
    options.positive_class = classes[1].get<int>();
  }
  options.scale = data.boolean("scale", true);
  options.rows = data.integer("rows", 0, 0, 100'000'000);
  options.test_rows = data.integer("test_rows", 0, 0, 100'000'000);
  data.finish();
  if (!std::filesystem::is_directory(options.dir)) {
    data.fail_value("dir",
                    "cannot open data directory",
                    dir,
                    "a folder holding Fashion-MNIST's IDX files (Debian package "
                    "dataset-fashion-mnist)");
  }
  return options;
}

// The full load (train and test), or a partial load's survey (every file checked, no image
// kept): the training set and the source of its rows (a partial load's later reads).
Source load_fashion_mnist(JsonReader& data,
                          const std::filesystem::path& base_dir,
                          bool partial,
                          models::Dataset& train,
                          LoadedData& out,
                          models::LabelValues& surveyed_labels) {
  const models::FashionMnistOptions options = read_fashion_mnist_options(data, base_dir);
  models::FashionMnistSets sets;
  Eigen::Index train_rows = 0;
  try {
    if (partial) {
      models::RowKeep none;
      sets = models::load_fashion_mnist(options, none, &surveyed_labels, &train_rows);
    } else {
      sets = models::load_fashion_mnist(options);
      train_rows = sets.train.rows();
    }
  } catch (const models::DataError& e) {
    data.fail("dir", e.what());
  }
  if (options.rows > train_rows) {
    data.fail_value("rows",
                    "more rows than the training file holds for these classes",
                    options.rows,
                    fmt::format("at most {}", train_rows));
  }
  train = std::move(sets.train);
  if (!partial && options.test_rows > sets.test.rows()) {
    data.fail_value("test_rows",
                    "more rows than the test file holds for these classes",
                    options.test_rows,
                    fmt::format("at most {}", sets.test.rows()));
  }
  if (!partial) {
    out.test = std::make_shared<models::Dataset>(std::move(sets.test));  // t10k, never a split
  }
  return {train_rows, [options](models::RowKeep* keep, models::LabelValues* labels) {
            STRAGGLERSIM_ASSERT(keep != nullptr, "fashion_mnist: a later read keeps some rows");
            return models::load_fashion_mnist(options, *keep, labels, nullptr).train;
          }};
}

models::CsvOptions read_csv_options(JsonReader& data) {
  models::CsvOptions options;
  // Not given: a first line of numbers is refused rather than dropped as a header.
  options.refuse_numeric_header = !data.has("header");
  options.header = data.boolean("header", true);
  if (data.has("label_column") && data.raw("label_column").is_string()) {
    if (!options.header) {
      data.fail_value("label_column",
                      "a column name needs a header",
                      data.raw("label_column"),
                      "a 0-based column index (negative counts from the end), or \"header\": true");
    }
    options.label_column = data.string("label_column", std::nullopt);
  } else if (data.has("label_column") && !data.raw("label_column").is_number_integer()) {
    data.fail_value("label_column",
                    "wrong type",
                    data.raw("label_column"),
                    "a column name or a 0-based column index (negative counts from the end)");
  } else {
    options.label_column = data.integer("label_column", -1, -1'000'000, 1'000'000);
  }
  return options;
}

}  // namespace

// A CSV source: read whole into `all` (and its test file into out.test), or, for a partial
// load, surveyed (`surveyed_rows`, `surveyed_labels`) with no row kept.
Source read_csv_source(JsonReader& data,
                       const std::filesystem::path& base_dir,
                       bool partial,
                       std::int64_t& surveyed_rows,
                       models::LabelValues& surveyed_labels,
                       models::Dataset& all,
                       LoadedData& out,
                       double& test_fraction) {
  const models::CsvOptions options = read_csv_options(data);
  const FileReader read = [&](const std::string& path) {
    if (partial) {
      models::RowKeep none;
      return models::read_csv(path, options, &none, &surveyed_labels, &surveyed_rows);
    }
    return models::read_csv(path, options);
  };
  constexpr std::string_view kExpected = "an existing CSV file";
  all = read_file(data, "path", base_dir, kExpected, read);
  Source source = {surveyed_rows,
                   [options, path = resolve(base_dir, data.string("path", std::nullopt)).string()](
                       models::RowKeep* keep, models::LabelValues* labels) {
                     return models::read_csv(path, options, keep, labels);
                   }};
  test_fraction = read_test_file(data, base_dir, kExpected, read, all, out);
  if (out.test && out.test->dimension() != all.dimension()) {
    data.fail_value("test_path",
                    "test set has another number of features than the training set",
                    out.test->dimension(),
                    fmt::format("{} features", all.dimension()));
  }
  return source;
}

// A LIBSVM source, read or surveyed as read_csv_source.
Source read_libsvm_source(JsonReader& data,
                          const std::filesystem::path& base_dir,
                          bool partial,
                          std::int64_t& surveyed_rows,
                          models::LabelValues& surveyed_labels,
                          models::Dataset& all,
                          LoadedData& out,
                          double& test_fraction) {
  models::LibsvmOptions options;
  options.features = data.integer("features", 0, 0, 100'000'000);
  options.dense = data.choice("storage", "storage", {"dense", "sparse"}, "dense") == "dense";
  // Dense rows × max-index doubles, twice while the split copies them (refused in the reader
  // before it allocates).
  options.max_dense_bytes = memory_limit() / 2;
  const FileReader read = [&](const std::string& path) {
    if (partial) {
      models::RowKeep none;
      return models::read_libsvm(path, options, &none, &surveyed_labels, &surveyed_rows);
    }
    return models::read_libsvm(path, options);
  };
  constexpr std::string_view kExpected = "an existing LIBSVM file";
  all = read_file(data, "path", base_dir, kExpected, read);
  if (options.features == 0) {
    // The test file is read with the training file's width, so both have the same columns.
    options.features = all.dimension();
  }
  Source source = {surveyed_rows,
                   [options, path = resolve(base_dir, data.string("path", std::nullopt)).string()](
                       models::RowKeep* keep, models::LabelValues* labels) {
                     return models::read_libsvm(path, options, keep, labels);
                   }};
  test_fraction = read_test_file(data, base_dir, kExpected, read, all, out);
  return source;
}

// A partial load: each worker later makes only the training rows it holds, by `source`, split
// as a full load would split them; `where` names the key of the file that may have changed.
LoadedData::Partial partial_load(
    const Source& source, double fraction, std::uint64_t split_seed, bool file, std::string where) {
  LoadedData::Partial later;
  later.train_rows = models::training_row_count(source.rows, fraction);
  later.load = [source, fraction, split_seed, file, where = std::move(where)](
                   const models::HeldRows& held, models::LabelValues* labels) {
    const std::vector<Eigen::Index> source_of =
        models::training_source_rows(source.rows, fraction, split_seed);
    models::RowKeep keep;
    for (const auto t : held.rows) {
      if (t >= 0) {
        keep.rows.push_back(source_of[static_cast<std::size_t>(t)]);
      }
    }
    std::sort(keep.rows.begin(), keep.rows.end());
    std::vector<Eigen::Index> kept_rows = keep.rows;
    try {
      const models::Dataset kept = source.make(&keep, labels);
      models::Dataset rows = models::arrange_held_rows(kept, kept_rows, source_of, held);
      if (file) {
        // As a full load notes the file it read, a worker notes the rows it holds (a
        // generator's whole set was estimated before it was drawn).
        note_memory(fmt::format("the held rows ({} x {} {})",
                                rows.rows(),
                                rows.dimension(),
                                rows.is_sparse() ? "sparse" : "dense"),
                    dataset_bytes(rows));
      }
      return rows;
    } catch (const models::DataError& e) {
      throw ConfigError(fmt::format("{}: {}", where, e.what()));  // the file changed since
    }
  };
  return later;
}

// A full load: notes a file's size against the memory limit and splits off the test set.
void finish_full_load(const std::string& source_name,
                      models::Dataset all,
                      double test_fraction,
                      std::uint64_t split_seed,
                      LoadedData& out) {
  if (source_name != "synthetic") {
    // A file's size is known only once read: what it holds now counts against the limit of
    // everything the run allocates next (synthetic sets were estimated before generation).
    note_memory(fmt::format("the data set ({} x {} {})",
                            all.rows(),
                            all.dimension(),
                            all.is_sparse() ? "sparse" : "dense"),
                dataset_bytes(all) + (out.test ? dataset_bytes(*out.test) : 0.0));
  }
  if (out.test == nullptr && test_fraction > 0.0) {
    auto [train, test] = models::split_train_test(all, test_fraction, split_seed);
    out.train = std::make_shared<models::Dataset>(std::move(train));
    out.test = std::make_shared<models::Dataset>(std::move(test));
  } else {
    out.train = std::make_shared<models::Dataset>(std::move(all));
  }
}

LoadedData load_data(JsonReader& data,
                     const std::filesystem::path& base_dir,
                     std::uint64_t seed,
                     bool partial) {
  const auto source_name = data.choice(
      "source", "data source", {"csv", "fashion_mnist", "libsvm", "synthetic"}, std::nullopt);
  LoadedData out;
  models::Dataset all;
  double test_fraction = 0.0;
  Source source;
  std::string key = "path";  // what a partial load's late file error names
  // A partial load first surveys a file: every row parsed and validated (so a bad file fails
  // here, as in a full load), none kept; the row count, the width and every distinct label.
  auto surveyed = std::make_shared<std::int64_t>(0);
  models::LabelValues surveyed_labels;
  if (source_name == "synthetic") {
    source = read_synthetic(data, seed, test_fraction);
    if (!partial) {
      all = source.make(nullptr, nullptr);
    }
  } else if (source_name == "fashion_mnist") {
    key = "dir";
    source = load_fashion_mnist(data, base_dir, partial, all, out, surveyed_labels);
  } else if (source_name == "csv") {
    source = read_csv_source(
        data, base_dir, partial, *surveyed, surveyed_labels, all, out, test_fraction);
  } else {
    source = read_libsvm_source(
        data, base_dir, partial, *surveyed, surveyed_labels, all, out, test_fraction);
  }
  data.finish();
  const std::uint64_t split_seed = derive_seed(seed, static_cast<std::uint64_t>(Stream::kSplit));
  if (partial) {
    if (source_name != "synthetic") {
      out.label_values = surveyed_labels;  // the training file's and the test file's labels
    }
    const double fraction = out.test == nullptr ? test_fraction : 0.0;
    out.partial = partial_load(source,
                               fraction,
                               split_seed,
                               source_name != "synthetic",
                               fmt::format("{}:{}", data.file(), data.pointer_of(key)));
    return out;
  }
  finish_full_load(source_name, std::move(all), test_fraction, split_seed, out);
  return out;
}

void load_held_partitions(LoadedData& data, int partitions, const std::vector<int>& held) {
  STRAGGLERSIM_ASSERT(data.partial.has_value(), "no partial load pending");
  models::HeldRows rows = models::held_rows(data.partial->train_rows, partitions, held);
  models::LabelValues labels;
  data.train = std::make_shared<models::Dataset>(data.partial->load(rows, &labels));
  if (!data.label_values) {
    data.label_values = labels;  // generated: every row's labels, train and test
  }
  data.held = std::move(rows);
}

void require_binary_labels(LoadedData& data, JsonReader& root) {
  std::set<double> values;
  if (data.label_values) {
    // A partial load: what the whole source holds (at most three values are tracked, enough
    // to tell two from more).
    values.insert(data.label_values->values.begin(), data.label_values->values.end());
  } else {
    values.insert(data.train->labels.begin(), data.train->labels.end());
    if (data.test) {
      values.insert(data.test->labels.begin(), data.test->labels.end());
    }
  }
  // One label value leaves nothing to separate (and the test AUC undefined on every row).
  if (values.size() != 2) {
    root.fail(
        "loss",
        fmt::format("logistic regression needs two label values; got {} distinct labels; expected "
                    "-1/+1 or two values mapped to -1 (smaller) and +1 (larger)",
                    values.size()));
  }
  if (values.contains(-1.0) && values.contains(1.0)) {
    return;
  }
  const double low = *values.begin();
  auto map = [low](models::Dataset& d) {
    for (auto& b : d.labels) {
      b = b == low ? -1.0 : 1.0;
    }
  };
  map(*data.train);
  if (data.test) {
    map(*data.test);
  }
}

models::LabelValues label_summary(const LoadedData& data) {
  if (data.label_values) {
    return *data.label_values;
  }
  models::LabelValues out;
  for (const double b : data.train->labels) {
    out.add(b);
  }
  if (data.test) {
    for (const double b : data.test->labels) {
      out.add(b);
    }
  }
  return out;
}

void require_class_labels(const models::LabelValues& labels, int classes, JsonReader& loss) {
  const bool given = loss.has("classes");
  const std::string expected = fmt::format("integer labels 0 to {} (classes = {}{})",
                                           classes - 1,
                                           classes,
                                           given ? "" : ", the largest label + 1");
  if (labels.not_class_index) {
    loss.fail_value(given ? "classes" : "kind",
                    "a training or test label is not a class index",
                    *labels.not_class_index,
                    expected);
  }
  if (labels.highest >= classes) {
    loss.fail_value(
        "classes", "a training or test label is outside the classes", labels.highest, expected);
  }
}

}  // namespace stragglersim::experiments

#include "experiments/data_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "experiments/config_error.h"
#include "models/libsvm_reader.h"
#include "models/synthetic_data.h"
#include "sim/random_stream.h"

namespace stragglersim::experiments {
namespace {

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& path) {
  const std::filesystem::path p(path);
  return p.is_absolute() ? p : base / p;
}

models::Dataset read_file(JsonReader& data,
                          std::string_view key,
                          const std::filesystem::path& base_dir,
                          const models::LibsvmOptions& options) {
  const std::string path = data.string(key, std::nullopt);
  const auto full = resolve(base_dir, path);
  if (!std::filesystem::is_regular_file(full)) {
    data.fail_value(key, "cannot open data file", path, "an existing LIBSVM file");
  }
  try {
    return models::read_libsvm(full.string(), options);
  } catch (const models::DataError& e) {
    data.fail(key, e.what());
  }
}

double read_test_fraction(JsonReader& data, double fallback) {
  return data.number("test_fraction", fallback, 0.0, 0.95);
}

}  // namespace

LoadedData load_data(JsonReader& data, const std::filesystem::path& base_dir, std::uint64_t seed) {
  const auto source = data.choice("source", "data source", {"libsvm", "synthetic"}, std::nullopt);
  LoadedData out;
  models::Dataset all;
  double test_fraction = 0.0;
  if (source == "synthetic") {
    const auto generator = data.choice(
        "generator", "generator", {"gaussian_mixture", "linear_regression"}, std::nullopt);
    const auto rows = data.integer("rows", std::nullopt, 2, 100'000'000);
    const auto features = data.integer("features", std::nullopt, 1, 10'000'000);
    test_fraction = read_test_fraction(data, 0.2);
    const auto data_seed = sim::derive_seed(seed, static_cast<std::uint64_t>(sim::Stream::kData));
    if (generator == "gaussian_mixture") {
      const double separation = data.number("separation", 1.5, 0.0);
      all = models::make_gaussian_mixture({rows, features, separation, data_seed});
    } else {
      const double noise = data.number("noise", 0.5, 0.0);
      all = models::make_linear_regression({rows, features, noise, data_seed});
    }
  } else {
    models::LibsvmOptions options;
    options.features = data.integer("features", 0, 0, 100'000'000);
    options.dense = data.choice("storage", "storage", {"dense", "sparse"}, "dense") == "dense";
    all = read_file(data, "path", base_dir, options);
    if (data.has("test_path")) {
      if (data.has("test_fraction")) {
        data.fail("test_fraction", "give either test_path or test_fraction, not both");
      }
      if (options.features == 0) {
        options.features = all.dimension();
      }
      models::Dataset test = read_file(data, "test_path", base_dir, options);
      if (test.dimension() > all.dimension()) {
        data.fail_value("test_path",
                        "test set has more features than the training set",
                        test.dimension(),
                        fmt::format("at most {} features", all.dimension()));
      }
      out.train = std::make_shared<models::Dataset>(std::move(all));
      out.test = std::make_shared<models::Dataset>(std::move(test));
      data.finish();
      return out;
    }
    test_fraction = read_test_fraction(data, 0.2);
  }
  data.finish();
  if (test_fraction > 0.0) {
    auto [train, test] = models::split_train_test(
        all,
        test_fraction,
        sim::derive_seed(seed, static_cast<std::uint64_t>(sim::Stream::kSplit)));
    out.train = std::make_shared<models::Dataset>(std::move(train));
    out.test = std::make_shared<models::Dataset>(std::move(test));
  } else {
    out.train = std::make_shared<models::Dataset>(std::move(all));
  }
  return out;
}

void require_binary_labels(LoadedData& data, JsonReader& root) {
  std::set<double> values(data.train->labels.begin(), data.train->labels.end());
  if (data.test) {
    values.insert(data.test->labels.begin(), data.test->labels.end());
  }
  if (values.size() > 2 || values.empty()) {
    root.fail(
        "loss",
        fmt::format("logistic regression needs two label values; got {} distinct labels; expected "
                    "-1/+1 or two values mapped to -1 (smaller) and +1 (larger)",
                    values.size()));
  }
  if (values.size() == 1 || (values.contains(-1.0) && values.contains(1.0))) {
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

}  // namespace stragglersim::experiments

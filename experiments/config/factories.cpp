#include "experiments/config/factories.h"

#include <fmt/format.h>

#include <algorithm>

#include "experiments/config/config_error.h"
#include "experiments/config/factory_support.h"
#include "models/fashion_mnist.h"
#include "models/loss_model.h"
#include "models/softmax_network.h"
#include "models/synthetic_data.h"
#include "models/tabular_synthetic_data.h"

namespace stragglersim::experiments {

template <typename Factory>
std::vector<std::string> names_of(const std::vector<FactoryRow<Factory>>& table) {
  std::vector<std::string> names;
  names.reserve(table.size());
  for (const auto& row : table) {
    names.push_back(row.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

template std::vector<std::string> names_of(const std::vector<FactoryRow<CodeFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<DelayFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<LossFactory>>&);
template std::vector<std::string> names_of(const std::vector<FactoryRow<StoppingFactory>>&);

void reject(JsonReader& reader, const ClusterShape* shape, const Violation& v) {
  if (shape != nullptr && v.field == "partitions") {
    throw ConfigError(fmt::format("{}:/partitions: {}; got {}; expected {}",
                                  shape->file,
                                  v.problem,
                                  shape->partitions,
                                  v.expected));
  }
  // A defaulted field has no config value of its own: show the default that was taken.
  const nlohmann::json got = reader.has(v.field)
                                 ? reader.raw(v.field)
                                 : reader.resolved().value(v.field, nlohmann::json());
  switch (v.got) {
    case Violation::Got::kValue:
      reader.fail_value(v.field, v.problem, got, v.expected);
    case Violation::Got::kElement:
      reader.fail_value(v.field, v.problem, got.at(v.index), v.expected);
    case Violation::Got::kSize:
      reader.fail_value(v.field, v.problem, got.size(), v.expected);
  }
  reader.fail_value(v.field, v.problem, got, v.expected);
}

namespace {

// "classes": C ≥ 2, by default the data's (the largest label + 1).
int read_classes(JsonReader& loss, int data_classes, models::SoftmaxNetworkOptions& o) {
  o.classes = to_int(loss.integer("classes", data_classes));
  if (const auto v = o.validate()) {
    reject(loss, nullptr, *v);
  }
  return o.classes;
}

std::shared_ptr<const models::LossModel> make_softmax(JsonReader& loss, int data_classes) {
  models::SoftmaxNetworkOptions o;
  read_classes(loss, data_classes, o);
  return models::make_softmax_network(o);
}

std::shared_ptr<const models::LossModel> make_mlp(JsonReader& loss, int data_classes) {
  models::SoftmaxNetworkOptions o;
  o.bias = true;
  const nlohmann::json hidden = loss.raw_or("hidden", nlohmann::json::array({128}));
  const bool integers = hidden.is_array() && std::all_of(hidden.begin(), hidden.end(), [](auto& h) {
                          return h.is_number_integer();
                        });
  if (!integers || hidden.empty()) {
    loss.fail_value("hidden",
                    "not a list of layer widths",
                    hidden,
                    "a non-empty list of integer widths >= 1 (e.g. [128]; \"softmax\" for no "
                    "hidden layer)");
  }
  for (const auto& h : hidden) {
    o.hidden.push_back(to_int(h.get<std::int64_t>()));
  }
  const auto activation = loss.choice("activation", "activation", {"relu", "tanh"}, "relu");
  o.activation = activation == "relu" ? models::Activation::kRelu : models::Activation::kTanh;
  read_classes(loss, data_classes, o);
  return models::make_softmax_network(o);
}

}  // namespace

const std::vector<FactoryRow<LossFactory>>& loss_factories() {
  static const std::vector<FactoryRow<LossFactory>> table = {
      {"least_squares",
       "1/2 (a'x - b)^2 plus l2/2 |x|^2; test metric mse",
       {},
       [](JsonReader& /*loss*/, int /*classes*/) {
         return std::shared_ptr<const models::LossModel>(models::make_least_squares_loss());
       }},
      {"logistic",
       "log(1 + exp(-b a'x)) plus l2/2 |x|^2, labels mapped to -1/+1; test accuracy and AUC",
       {},
       [](JsonReader& /*loss*/, int /*classes*/) {
         return std::shared_ptr<const models::LossModel>(models::make_logistic_loss());
       }},
      {"mlp",
       "softmax network: hidden layers of relu or tanh units with biases, cross-entropy on "
       "labels 0..classes-1, seeded He/Glorot start; non-convex; test accuracy and confusion",
       {{"hidden", "[128]"}, {"activation", "relu"}, {"classes", "max label + 1"}},
       make_mlp},
      {"softmax",
       "multiclass softmax regression: cross-entropy of W'a on labels 0..classes-1 plus l2/2 "
       "|W|^2, x = W (features x classes, column-major); test accuracy and confusion",
       {{"classes", "max label + 1"}},
       make_softmax},
  };
  return table;
}

const std::vector<ChoiceDoc>& optimizer_docs() {
  static const std::vector<ChoiceDoc> table = {
      {"gd",
       "gradient descent x <- x - step_t g (default); batch: rows per partition of a "
       "stochastic gradient; schedule: step_t (constant, inverse_t, cosine); momentum: "
       "heavy-ball m in [0, 1)",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"momentum", "0"},
        {"start", "zero"}}},
      {"nesterov",
       "Nesterov's accelerated gradient",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"start", "zero"}}},
      {"erasurehead_agd",
       "the accelerated gradient of ErasureHead's reference code (theta = 2/(t+2), gradient at "
       "the iterate)",
       {{"step", ""},
        {"iterations", ""},
        {"batch", ""},
        {"schedule", "constant"},
        {"start", "zero"}}},
  };
  return table;
}

const std::vector<ChoiceDoc>& generator_docs() {
  // Defaults from the generators' own options structs, so the listing follows them.
  const models::AmazonLikeOptions amazon;
  const models::CovtypeLikeOptions covtype;
  const models::KcHousingLikeOptions kc;
  const models::GaussianMixtureOptions mixture;
  const models::LinearRegressionOptions regression;
  const auto text = [](auto x) { return fmt::format("{}", x); };
  static const std::vector<ChoiceDoc> table = {
      {"amazon_like",
       "sparse one-hot table shaped like Amazon Employee Access (logistic)",
       {{"rows", text(amazon.rows)},
        {"features", text(amazon.features)},
        {"positive_fraction", text(amazon.positive_fraction)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"covtype_like",
       "sparse one-hot table shaped like Forest Covertype (logistic)",
       {{"rows", text(covtype.rows)},
        {"features", text(covtype.features)},
        {"positive_fraction", text(covtype.positive_fraction)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"gaussian_mixture",
       "dense two-class Gaussian mixture (logistic)",
       {{"rows", ""},
        {"features", ""},
        {"separation", text(mixture.separation)},
        {"condition", text(mixture.condition)},
        {"test_fraction", "0.2"}}},
      {"kc_housing_like",
       "sparse one-hot table shaped like KC housing (least squares)",
       {{"rows", text(kc.rows)},
        {"features", text(kc.features)},
        {"noise", text(kc.noise)},
        {"storage", "sparse"},
        {"test_fraction", "0.2"}}},
      {"linear_regression",
       "dense planted linear model plus Gaussian noise (least squares)",
       {{"rows", ""},
        {"features", ""},
        {"noise", text(regression.noise)},
        {"condition", text(regression.condition)},
        {"test_fraction", "0.2"}}},
  };
  return table;
}

const std::vector<ChoiceDoc>& data_source_docs() {
  const models::FashionMnistOptions fashion;
  static const std::vector<ChoiceDoc> table = {
      {"csv",
       "a CSV file with a header line; the label in the last column (label_column: a name or an "
       "index, negative from the end)",
       {{"path", ""},
        {"test_path", ""},
        {"test_fraction", "0.2"},
        {"header", "true"},
        {"label_column", "-1"}}},
      {"fashion_mnist",
       "two classes (or \"all\" ten, labels 0-9) of Fashion-MNIST's IDX files (Debian package "
       "dataset-fashion-mnist)",
       {{"dir", fashion.dir},
        {"classes", fmt::format("[{}, {}]", fashion.negative_class, fashion.positive_class)},
        {"scale", "true"},
        {"rows", "0"},
        {"test_rows", "0"}}},
      {"libsvm",
       "a LIBSVM file (label index:value ...); features 0 takes the file's largest index",
       {{"path", ""},
        {"test_path", ""},
        {"test_fraction", "0.2"},
        {"features", "0"},
        {"storage", "dense"}}},
  };
  return table;
}

}  // namespace stragglersim::experiments
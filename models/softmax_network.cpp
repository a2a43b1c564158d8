#include "models/softmax_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>
#include <string_view>
#include <variant>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/random_stream.h"

namespace stragglersim::models {

Validation SoftmaxNetworkOptions::validate() const {
  if (classes < 2) {
    return Violation{"classes", "out of range", "an integer >= 2"};
  }
  for (std::size_t l = 0; l < hidden.size(); ++l) {
    if (hidden[l] < 1) {
      return Violation{
          "hidden", "a hidden layer has no units", "widths >= 1", Violation::Got::kElement, l};
    }
  }
  return std::nullopt;
}

std::vector<Eigen::Index> layer_widths(const SoftmaxNetworkOptions& options,
                                       Eigen::Index features) {
  std::vector<Eigen::Index> widths{features};
  for (const int h : options.hidden) {
    widths.push_back(h);
  }
  widths.push_back(options.classes);
  return widths;
}

Eigen::Index network_parameter_count(const SoftmaxNetworkOptions& options, Eigen::Index features) {
  const auto widths = layer_widths(options, features);
  Eigen::Index total = 0;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    total += widths[l - 1] * widths[l] + (options.bias ? widths[l] : 0);
  }
  return total;
}

Eigen::VectorXd network_initial_point(const SoftmaxNetworkOptions& options,
                                      Eigen::Index features,
                                      std::uint64_t seed) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(network_parameter_count(options, features));
  if (options.hidden.empty()) {
    return x;
  }
  RandomEngine engine(seed);
  const auto widths = layer_widths(options, features);
  Eigen::Index at = 0;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    const auto fan_in = static_cast<double>(widths[l - 1]);
    const auto fan_out = static_cast<double>(widths[l]);
    const double variance =
        options.activation == Activation::kRelu ? 2.0 / fan_in : 2.0 / (fan_in + fan_out);
    boost::random::normal_distribution<double> normal(0.0, std::sqrt(variance));
    for (Eigen::Index i = 0; i < widths[l - 1] * widths[l]; ++i) {
      x[at++] = normal(engine);
    }
    at += options.bias ? widths[l] : 0;  // biases start at zero
  }
  return x;
}

Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic> confusion_counts(
    const Eigen::VectorXd& labels, const std::vector<int>& predicted, int classes) {
  STRAGGLERSIM_ASSERT(static_cast<std::size_t>(labels.size()) == predicted.size(),
                      "one prediction per label");
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic> counts =
      Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic>::Zero(classes, classes);
  for (Eigen::Index i = 0; i < labels.size(); ++i) {
    const auto t = static_cast<int>(labels[i]);
    const int s = predicted[static_cast<std::size_t>(i)];
    STRAGGLERSIM_ASSERT(t >= 0 && t < classes && s >= 0 && s < classes, "class out of range");
    ++counts(t, s);
  }
  return counts;
}

namespace {

using Matrix = Eigen::MatrixXd;
using ConstMap = Eigen::Map<const Matrix>;
using MutableMap = Eigen::Map<Matrix>;

// Rows per forward/backward chunk: bounds the activations' memory (chunk × width doubles) for
// any partition size. Fixed, so the summation order never depends on threads or partitions'
// placement.
constexpr Eigen::Index kChunkRows = 1024;

struct Layer {
  Eigen::Index in = 0;
  Eigen::Index out = 0;
  Eigen::Index weights = 0;  ///< offset of W_l in x
  Eigen::Index bias = -1;    ///< offset of c_l in x, −1 without bias
};

// Activations of one chunk: hidden pre-activations z_l and outputs h_l, and the scores.
struct Forward {
  std::vector<Matrix> pre;
  std::vector<Matrix> post;
  Matrix scores;
};

class SoftmaxNetwork final : public LossModel {
 public:
  explicit SoftmaxNetwork(const SoftmaxNetworkOptions& options)
      : options_(options_check::require_valid(options)) {}

  [[nodiscard]] std::string_view name() const override {
    return options_.hidden.empty() && !options_.bias ? "softmax" : "mlp";
  }
  [[nodiscard]] LossTraits traits() const override {
    LossTraits t;
    t.scalar_margin = false;
    t.convex = options_.hidden.empty();
    t.classes = options_.classes;
    return t;
  }
  [[nodiscard]] double value(double /*z*/, double /*b*/) const override { return no_margin(); }
  [[nodiscard]] double derivative(double /*z*/, double /*b*/) const override { return no_margin(); }
  [[nodiscard]] double second_derivative(double /*z*/, double /*b*/) const override {
    return no_margin();
  }
  // λ_max(diag(π) − ππᵀ) ≤ ½ for every probability vector π, so the Hessian of softmax
  // regression is at most ½ (I_C ⊗ AᵀA/m). A hidden layer leaves no global bound.
  [[nodiscard]] double curvature_bound() const override {
    return options_.hidden.empty() ? 0.5 : std::numeric_limits<double>::quiet_NaN();
  }
  [[nodiscard]] Eigen::Index parameter_count(Eigen::Index features) const override {
    return network_parameter_count(options_, features);
  }
  [[nodiscard]] Eigen::VectorXd initial_point(Eigen::Index features,
                                              std::uint64_t seed) const override {
    return network_initial_point(options_, features, seed);
  }

  // NOLINTNEXTLINE(modernize-use-nodiscard): also called for its gradient alone
  double accumulate(const Dataset& data,
                    RowRange rows,
                    const Eigen::VectorXd& x,
                    Eigen::Ref<Eigen::VectorXd> gradient_sum) const override {
    check(data, rows, x);
    STRAGGLERSIM_ASSERT(gradient_sum.size() == x.size(), "gradient_sum has the wrong dimension");
    count_data_bytes(data.stored_bytes(rows));  // chunk by chunk: each read once from memory
    const auto layers = layout(data.dimension());
    double total = 0.0;
    Forward fw;
    Matrix delta;
    for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kChunkRows) {
      const RowRange chunk{begin, std::min(rows.end, begin + kChunkRows)};
      forward(data, chunk, x, layers, fw);
      total += output_loss(data.labels, chunk, fw.scores, &delta);
      backward(data, chunk, x, layers, fw, delta, gradient_sum);
    }
    return total;
  }

  [[nodiscard]] double accumulate_value(const Dataset& data,
                                        RowRange rows,
                                        const Eigen::VectorXd& x) const override {
    check(data, rows, x);
    count_data_bytes(data.stored_bytes(rows));
    const auto layers = layout(data.dimension());
    double total = 0.0;
    Forward fw;
    for (Eigen::Index begin = rows.begin; begin < rows.end; begin += kChunkRows) {
      const RowRange chunk{begin, std::min(rows.end, begin + kChunkRows)};
      forward(data, chunk, x, layers, fw);
      total += output_loss(data.labels, chunk, fw.scores, nullptr);
    }
    return total;
  }

  void score_rows(const Dataset& /*data*/,
                  RowRange /*rows*/,
                  const Eigen::VectorXd& /*x*/,
                  Eigen::Ref<Eigen::VectorXd> /*z*/,
                  Eigen::Ref<Eigen::VectorXd> /*losses*/) const override {
    no_margin();
  }
  [[nodiscard]] double metric_of_margins(const Eigen::VectorXd& /*z*/,
                                         const Eigen::VectorXd& /*labels*/) const override {
    return no_margin();
  }
  [[nodiscard]] std::string_view metric_name() const override { return "accuracy"; }
  [[nodiscard]] double metric(const Dataset& data, const Eigen::VectorXd& x) const override {
    if (data.rows() == 0) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    const std::vector<int> predicted = predict(data, x);
    Eigen::Index right = 0;
    for (Eigen::Index i = 0; i < data.rows(); ++i) {
      right += predicted[static_cast<std::size_t>(i)] == static_cast<int>(data.labels[i]) ? 1 : 0;
    }
    return static_cast<double>(right) / static_cast<double>(data.rows());
  }

  // The argmax of the scores, the lowest class on ties (a zero model predicts class 0).
  [[nodiscard]] std::vector<int> predict(const Dataset& data,
                                         const Eigen::VectorXd& x) const override {
    check(data, RowRange{0, data.rows()}, x);
    count_data_bytes(data.stored_bytes());
    const auto layers = layout(data.dimension());
    std::vector<int> out(static_cast<std::size_t>(data.rows()));
    Forward fw;
    for (Eigen::Index begin = 0; begin < data.rows(); begin += kChunkRows) {
      const RowRange chunk{begin, std::min(data.rows(), begin + kChunkRows)};
      forward(data, chunk, x, layers, fw);
      for (Eigen::Index r = 0; r < chunk.size(); ++r) {
        Eigen::Index best = 0;
        fw.scores.row(r).maxCoeff(&best);
        out[static_cast<std::size_t>(begin + r)] = static_cast<int>(best);
      }
    }
    return out;
  }

 private:
  static double no_margin() {
    STRAGGLERSIM_ASSERT(false, "a softmax model has no scalar margin");
    return std::numeric_limits<double>::quiet_NaN();
  }

  void check(const Dataset& data, RowRange rows, const Eigen::VectorXd& x) const {
    STRAGGLERSIM_ASSERT(x.size() == parameter_count(data.dimension()), "x has the wrong dimension");
    STRAGGLERSIM_ASSERT(data.labels.size() == data.rows(), "one label per row");
    STRAGGLERSIM_ASSERT(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= data.rows(),
                        "row range outside the data");
  }

  [[nodiscard]] std::vector<Layer> layout(Eigen::Index features) const {
    const auto widths = layer_widths(options_, features);
    std::vector<Layer> layers;
    Eigen::Index at = 0;
    for (std::size_t l = 1; l < widths.size(); ++l) {
      Layer layer{widths[l - 1], widths[l], at, -1};
      at += layer.in * layer.out;
      if (options_.bias) {
        layer.bias = at;
        at += layer.out;
      }
      layers.push_back(layer);
    }
    return layers;
  }

  static ConstMap weights(const Eigen::VectorXd& x, const Layer& l) {
    return {x.data() + l.weights, l.in, l.out};
  }

  // s = input · W_l (+ c_l); the first layer's input is the chunk's feature rows.
  static void affine(const Dataset& data,
                     RowRange chunk,
                     const Matrix* input,
                     const Eigen::VectorXd& x,
                     const Layer& l,
                     Matrix& s) {
    if (input != nullptr) {
      s.noalias() = *input * weights(x, l);
    } else {
      std::visit(
          [&](const auto& a) {
            s.noalias() = a.middleRows(chunk.begin, chunk.size()) * weights(x, l);
          },
          data.features);
    }
    if (l.bias >= 0) {
      s.rowwise() += x.segment(l.bias, l.out).transpose();
    }
  }

  void forward(const Dataset& data,
               RowRange chunk,
               const Eigen::VectorXd& x,
               const std::vector<Layer>& layers,
               Forward& fw) const {
    const std::size_t hidden = layers.size() - 1;
    fw.pre.resize(hidden);
    fw.post.resize(hidden);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Matrix* input = l == 0 ? nullptr : &fw.post[l - 1];
      Matrix& s = l == hidden ? fw.scores : fw.pre[l];
      affine(data, chunk, input, x, layers[l], s);
      if (l < hidden) {
        fw.post[l] = options_.activation == Activation::kRelu ? Matrix(s.cwiseMax(0.0))
                                                              : Matrix(s.array().tanh().matrix());
      }
    }
  }

  // Σ_r (logsumexp(s_r) − s_{r,y_r}); with `delta`, its rows π_r − e_{y_r} (∂ℓ/∂s).
  static double output_loss(const Eigen::VectorXd& labels,
                            RowRange chunk,
                            const Matrix& scores,
                            Matrix* delta) {
    double total = 0.0;
    if (delta != nullptr) {
      delta->resize(scores.rows(), scores.cols());
    }
    for (Eigen::Index r = 0; r < scores.rows(); ++r) {
      const auto y = static_cast<Eigen::Index>(labels[chunk.begin + r]);
      STRAGGLERSIM_ASSERT(y >= 0 && y < scores.cols(), "a label outside the classes");
      const double top = scores.row(r).maxCoeff();
      const double sum = (scores.row(r).array() - top).exp().sum();
      const double log_normaliser = top + std::log(sum);
      total += log_normaliser - scores(r, y);
      if (delta != nullptr) {
        delta->row(r) = (scores.row(r).array() - log_normaliser).exp().matrix();
        (*delta)(r, y) -= 1.0;
      }
    }
    return total;
  }

  void backward(const Dataset& data,
                RowRange chunk,
                const Eigen::VectorXd& x,
                const std::vector<Layer>& layers,
                const Forward& fw,
                Matrix& delta,
                Eigen::Ref<Eigen::VectorXd> gradient) const {
    for (std::size_t l = layers.size(); l-- > 0;) {
      const Layer& layer = layers[l];
      MutableMap g(gradient.data() + layer.weights, layer.in, layer.out);
      if (l == 0) {
        std::visit(
            [&](const auto& a) {
              g.noalias() += a.middleRows(chunk.begin, chunk.size()).transpose() * delta;
            },
            data.features);
      } else {
        g.noalias() += fw.post[l - 1].transpose() * delta;
      }
      if (layer.bias >= 0) {
        gradient.segment(layer.bias, layer.out) += delta.colwise().sum().transpose();
      }
      if (l > 0) {
        Matrix back = delta * weights(x, layer).transpose();
        const Matrix& h = fw.post[l - 1];
        if (options_.activation == Activation::kRelu) {
          delta = (fw.pre[l - 1].array() > 0.0).select(back.array(), 0.0).matrix();
        } else {
          delta = (back.array() * (1.0 - h.array().square())).matrix();
        }
      }
    }
  }

  SoftmaxNetworkOptions options_;
};

}  // namespace

std::unique_ptr<LossModel> make_softmax_loss(int classes) {
  SoftmaxNetworkOptions options;
  options.classes = classes;
  return std::make_unique<SoftmaxNetwork>(options);
}

std::unique_ptr<LossModel> make_softmax_network(const SoftmaxNetworkOptions& options) {
  return std::make_unique<SoftmaxNetwork>(options);
}

}  // namespace stragglersim::models

#pragma once
// Multiclass models with a softmax output and the cross-entropy loss (docs/model.md
// "Multiclass models"), as LossModels over the same partitions as the linear losses:
//   softmax regression  scores s(a) = Wᵀa,                          W ∈ R^{p×C}
//   mlp                 h₀ = a, h_l = φ(W_lᵀh_{l−1} + c_l), s = W_Lᵀh_{L−1} + c_L
// with ℓ(s; y) = log Σ_c exp(s_c) − s_y for a label y ∈ {0, …, C−1} and φ = relu or tanh.
// The objective adds (λ₂/2)‖x‖² over every parameter (biases included).
//
// Parameter vector x, in this order: for each layer l = 1 … L (softmax regression: one layer,
// no bias), W_l (n_{l−1} × n_l, column-major: column c, the weights into unit c, is contiguous)
// then the bias c_l (n_l values). So softmax regression's x[c·p + j] = W(j, c).
//
// A partition's forward and backward passes are Eigen matrix products over its rows (one
// summation order, single-threaded inside the partition): the same bytes for every thread
// count. Dense and sparse features both work; only the first layer touches them. No
// convolutional layer.

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/base/options_check.h"
#include "models/loss_model.h"

namespace stragglersim::models {

enum class Activation { kRelu, kTanh };

struct SoftmaxNetworkOptions {
  int classes = 2;          ///< C ≥ 2
  std::vector<int> hidden;  ///< hidden widths n₁ … n_{L−1}, each ≥ 1; empty: softmax regression
  Activation activation = Activation::kRelu;
  /// Biases on every layer (the mlp); softmax regression has none, like the linear losses.
  bool bias = false;

  [[nodiscard]] Validation validate() const;
};

/// Widths n₀ = p, n₁ … n_{L−1}, n_L = C of a network over p features.
std::vector<Eigen::Index> layer_widths(const SoftmaxNetworkOptions& options, Eigen::Index features);

/// Parameters of the network over p features: Σ_l n_{l−1}·n_l (+ n_l with biases).
Eigen::Index network_parameter_count(const SoftmaxNetworkOptions& options, Eigen::Index features);

/// Seeded initial point (docs/model.md "Multiclass models"): softmax regression starts at zero
/// (its objective is convex). An mlp draws every weight of layer l from N(0, σ_l²), in
/// parameter order from one mt19937_64 seeded with `seed`: He, σ² = 2/n_{l−1}, for relu;
/// Glorot, σ² = 2/(n_{l−1} + n_l), for tanh; biases zero.
Eigen::VectorXd network_initial_point(const SoftmaxNetworkOptions& options,
                                      Eigen::Index features,
                                      std::uint64_t seed);

/// Softmax regression over C classes (cross-entropy; test metric accuracy).
std::unique_ptr<LossModel> make_softmax_loss(int classes);
/// A softmax network; `options` must validate (with bias, hidden may be empty).
std::unique_ptr<LossModel> make_softmax_network(const SoftmaxNetworkOptions& options);

/// Per-class counts: row t (true class), column s (predicted class) counts the rows with label t
/// predicted s. Illegal: sizes differ, a label or prediction outside [0, classes).
Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic> confusion_counts(
    const Eigen::VectorXd& labels, const std::vector<int>& predicted, int classes);

}  // namespace stragglersim::models

#pragma once
// A scheme: what the master does with the workers it heard (docs/model.md "Schemes"): the gradient
// code, the stopping rule, the decoder and the rescaling. Shared by every backend, so the
// simulated clock and the threaded master decode identically.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "codes/gradient_code.h"
#include "models/base/invariant.h"
#include "sim/stopping_rule.h"

namespace stragglersim::sim {

/// Numerical trouble during a run (NaN loss, a refused exact decode): reported, never written
/// into a trace.
class NumericalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// exact: B_Kᵀa = 1 or the run stops with NumericalError; optimal: least squares;
/// one_step: the code's fixed weights.
enum class DecoderKind { kExact, kOptimal, kOneStep };

struct Scheme {
  std::shared_ptr<const codes::GradientCode> code;
  std::shared_ptr<const StoppingRule> rule;
  DecoderKind decoder = DecoderKind::kOptimal;
  codes::Rescale rescale = codes::Rescale::kNone;
  /// Group-erasure probability q of the rule, used by Rescale::kExpected.
  double erasure_probability = 0.0;

  /// Decodes and rescales. Throws NumericalError when an exact decode is refused.
  [[nodiscard]] codes::Decoding decode(std::span<const int> heard, std::uint64_t iteration) const;
};

/// y_i = Σ_s B_{i,j_s} g_{j_s} over worker i's support j_1, j_2, … in that order, starting from
/// zero: the one accumulation order of a coded message in every backend. `gradient(j)` returns
/// g_j = ∇F_j(x) (any Eigen vector expression of size `y.size()`).
template <typename PartitionGradient>
void coded_message(const codes::GradientCode& code,
                   int worker,
                   PartitionGradient&& gradient,
                   Eigen::Ref<Eigen::VectorXd> y) {
  const std::span<const int> support = code.support(worker);
  const std::span<const double> values = code.support_values(worker);
  y.setZero();
  for (std::size_t s = 0; s < support.size(); ++s) {
    y.noalias() += values[s] * gradient(support[s]);
  }
}

/// ĝ = Σ_i a_i y_i over the workers with a_i ≠ 0, in ascending worker order (never arrival
/// order): every backend combines in this order, so that the same heard set gives the same
/// bytes in the simulated, threads and mpi backends. `message(i)` returns y_i (size
/// `dimension`).
template <typename Message>
Eigen::VectorXd combine_messages(const codes::Decoding& decoding,
                                 Eigen::Index dimension,
                                 Message&& message) {
  Eigen::VectorXd estimate = Eigen::VectorXd::Zero(dimension);
  for (Eigen::Index i = 0; i < decoding.weights.size(); ++i) {
    const double a = decoding.weights(i);
    if (a != 0.0) {
      estimate.noalias() += a * message(static_cast<int>(i));
    }
  }
  return estimate;
}

/// combine_messages over coded_message's y_i without forming them: the same operations in the
/// same order on every entry (y_i's entry from +0 over worker i's support in order, then a_i
/// times it added to the estimate), so the same bytes, but one pass over the estimate and the
/// partition gradients per worker instead of zeroing, writing and reading back a p-vector y_i.
/// The simulated backend's combination; `gradient(j)` as for coded_message.
template <typename PartitionGradient>
Eigen::VectorXd combine_coded_messages(const codes::GradientCode& code,
                                       const codes::Decoding& decoding,
                                       Eigen::Index dimension,
                                       PartitionGradient&& gradient) {
  constexpr Eigen::Index kBlock = 512;  // y_i's entries in flight: 4 KB, in L1
  Eigen::VectorXd estimate = Eigen::VectorXd::Zero(dimension);
  std::array<double, kBlock> y{};
  for (Eigen::Index i = 0; i < decoding.weights.size(); ++i) {
    const double a = decoding.weights(i);
    if (a == 0.0) {
      continue;
    }
    const std::span<const int> support = code.support(static_cast<int>(i));
    const std::span<const double> values = code.support_values(static_cast<int>(i));
    for (Eigen::Index begin = 0; begin < dimension; begin += kBlock) {
      const Eigen::Index n = std::min(kBlock, dimension - begin);
      std::fill_n(y.begin(), n, 0.0);
      for (std::size_t s = 0; s < support.size(); ++s) {
        // Held while its entries are read (a Ref to an expression owns the evaluated copy).
        const Eigen::Ref<const Eigen::VectorXd> column = gradient(support[s]);
        STRAGGLERSIM_ASSERT(column.size() == dimension, "a partition gradient has p entries");
        const double v = values[s];
        const double* g = column.data() + begin;
        for (Eigen::Index f = 0; f < n; ++f) {
          y[static_cast<std::size_t>(f)] += v * g[f];
        }
      }
      double* e = estimate.data() + begin;
      for (Eigen::Index f = 0; f < n; ++f) {
        e[f] += a * y[static_cast<std::size_t>(f)];
      }
    }
  }
  return estimate;
}

}  // namespace stragglersim::sim

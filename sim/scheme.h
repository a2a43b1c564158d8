#pragma once
// A scheme: what the master does with the workers it heard (docs/model.md "Schemes"): the gradient
// code, the stopping rule, the decoder and the rescaling. Shared by every backend, so the
// simulated clock and the threaded master decode identically.

#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "codes/gradient_code.h"
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

}  // namespace stragglersim::sim

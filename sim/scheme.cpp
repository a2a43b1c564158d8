#include "sim/scheme.h"

#include <fmt/format.h>

namespace stragglersim::sim {

codes::Decoding Scheme::decode(std::span<const int> heard, std::uint64_t iteration) const {
  codes::Decoding d;
  switch (decoder) {
    case DecoderKind::kExact:
      d = code->decode_exact(heard);
      if (!d.exact) {
        throw NumericalError(
            fmt::format("iteration {}: exact decoding refused: {}",
                        iteration,
                        d.problem.empty() ? "residual above tolerance" : d.problem));
      }
      break;
    case DecoderKind::kOptimal:
      // decode_optimal's weights and α; its condition number's value (an SVD) is read by no
      // run, so the outcome's bound is enough.
      d = code->decode_outcome(heard);
      break;
    case DecoderKind::kOneStep:
      d = code->decode_one_step(heard);
      break;
  }
  codes::rescale(d, rescale, erasure_probability);
  return d;
}

}  // namespace stragglersim::sim

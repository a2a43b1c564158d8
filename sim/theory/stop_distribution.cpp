#include "sim/theory/stop_distribution.h"

#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {

Shape stop_shape(const SchemeDescription& s) { return rule_theory(s.rule).shape(s); }

StopProbability at_least(std::span<const double> f,
                         std::span<const double> w,
                         std::span<const char> skip,
                         int r,
                         std::vector<double>& p) {
  if (r <= 0) {
    return {1.0, 0.0};
  }
  p.assign(index(r) + 1, 0.0);
  p[0] = 1.0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (!skip.empty() && skip[i] != 0) {
      continue;
    }
    // Top state first: it reads the old p[r − 1].
    p[index(r)] += p[index(r) - 1] * f[i];
    for (std::size_t k = index(r) - 1; k >= 1; --k) {
      p[k] = p[k] * w[i] + p[k - 1] * f[i];
    }
    p[0] *= w[i];
  }
  double waiting = 0.0;
  for (int k = 0; k < r; ++k) {
    waiting += p[index(k)];
  }
  return {p[index(r)], waiting};
}

}  // namespace stragglersim::sim

// The theory of rule all (sim/theory/all_rule_theory.cpp): E[max_i T_i] and its sd for workers of
// different exponential rates against inclusion–exclusion, and no erasure.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "sim/delays/heterogeneous_delay.h"
#include "sim/theory/iteration_time_theory.h"
#include "sim/theory/rule_theory.h"

namespace stragglersim::sim {

TEST_CASE("theory: rule all is the expected maximum of independent exponentials", "[sim][theory]") {
  // T_i ~ Exp(λ/c_i) (shift 0): P(max ≤ t) = Π(1 − e^{−λ_i t}), so by inclusion–exclusion
  // E[max] = Σ_{S≠∅} (−1)^{|S|+1} / Λ_S and E[max²] = Σ_{S≠∅} (−1)^{|S|+1} 2/Λ_S², Λ_S = Σ_{i∈S}
  // λ_i.
  const std::vector<double> factors = {1.0, 2.0, 0.5, 3.0, 1.5};
  const int n = static_cast<int>(factors.size());
  const SchemeDescription s{.workers = n, .rule = RuleKind::kAll};
  HeterogeneousDelay delay(
      scheme_loads(s), {.shift = 0.0, .rate = 1.0, .tail = TailScaling::kNone, .factors = factors});
  double mean = 0.0;
  double second = 0.0;
  for (unsigned set = 1; set < (1U << n); ++set) {
    double rate = 0.0;
    int size = 0;
    for (int i = 0; i < n; ++i) {
      if ((set >> i) & 1U) {
        rate += 1.0 / factors[static_cast<std::size_t>(i)];
        ++size;
      }
    }
    const double sign = size % 2 == 1 ? 1.0 : -1.0;
    mean += sign / rate;
    second += sign * 2.0 / (rate * rate);
  }
  const IterationTimePrediction p = predict_iteration_time(s, delay);
  CHECK(p.method == "numerical");
  CHECK(p.mean == Approx(mean).epsilon(1e-8));
  CHECK(p.sd == Approx(std::sqrt(second - mean * mean)).epsilon(1e-7));
  CHECK(p.q == 0.0);
  CHECK(p.q2 == 0.0);
  const RuleTheory& row = rule_theory(RuleKind::kAll);
  CHECK(row.shape(s).kind == StopShape::kOrderStatistic);
  CHECK(row.shape(s).order == n);
}

}  // namespace stragglersim::sim

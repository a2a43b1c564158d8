#include "sim/theory/convergence_theory.h"

#include <cmath>

#include "models/base/invariant.h"
#include "sim/theory/iteration_time_theory.h"

namespace stragglersim::sim {
namespace {

void validate(const PlBoundParameters& p) {
  STRAGGLERSIM_ASSERT(p.smoothness > 0.0 && p.pl_constant > 0.0 && p.pl_constant <= p.smoothness,
                      "the PL bound needs 0 < mu <= beta");
  STRAGGLERSIM_ASSERT(p.step > 0.0 && p.step * p.smoothness <= 1.0 + 1e-12,
                      "the PL bound needs 0 < step <= 1/beta");
  STRAGGLERSIM_ASSERT(p.zeta_squared >= 0.0 && p.initial_gap >= 0.0,
                      "the PL bound needs zeta^2 >= 0 and a non-negative initial gap");
  STRAGGLERSIM_ASSERT(p.q >= 0.0 && p.q < 1.0 && p.q2 >= 0.0 && p.q2 <= p.q,
                      "the PL bound needs 0 <= q2 <= q < 1");
}

}  // namespace

double pl_contraction(const PlBoundParameters& p) {
  validate(p);
  return 1.0 - p.pl_constant * p.step * (1.0 - p.q);
}

double pl_noise_floor(const PlBoundParameters& p) {
  validate(p);
  return p.smoothness * p.step * (p.q - p.q2) * p.zeta_squared /
         (2.0 * p.pl_constant * (1.0 - p.q));
}

std::vector<double> pl_bound(const PlBoundParameters& p, int iterations) {
  STRAGGLERSIM_ASSERT(iterations >= 0, "the PL bound needs iterations >= 0");
  const double rho = pl_contraction(p);
  const double floor = pl_noise_floor(p);
  std::vector<double> bound;
  bound.reserve(static_cast<std::size_t>(iterations) + 1);
  double power = 1.0;
  for (int t = 0; t <= iterations; ++t) {
    bound.push_back(power * p.initial_gap + floor);
    power *= rho;
  }
  return bound;
}

std::optional<long> iterations_to_suboptimality(const PlBoundParameters& p, double epsilon) {
  STRAGGLERSIM_ASSERT(epsilon > 0.0, "a target suboptimality must be positive");
  const double rho = pl_contraction(p);
  const double floor = pl_noise_floor(p);
  if (p.initial_gap <= epsilon) {
    return 0L;
  }
  if (floor >= epsilon) {
    return std::nullopt;
  }
  if (rho <= 0.0) {
    return 1L;
  }
  // ρ^t·gap + floor ≤ ε  ⇔  t ≥ log((ε − floor)/gap) / log ρ.
  auto t =
      static_cast<long>(std::ceil(std::log((epsilon - floor) / p.initial_gap) / std::log(rho)));
  // Guard the rounding of the logarithms: step to the first t that truly satisfies the bound.
  while (t > 1 && std::pow(rho, static_cast<double>(t - 1)) * p.initial_gap + floor <= epsilon) {
    --t;
  }
  while (std::pow(rho, static_cast<double>(t)) * p.initial_gap + floor > epsilon) {
    ++t;
  }
  return t;
}

std::optional<double> time_to_suboptimality(const PlBoundParameters& p,
                                            double epsilon,
                                            double mean_iteration_time) {
  const auto t = iterations_to_suboptimality(p, epsilon);
  if (!t) {
    return std::nullopt;
  }
  return static_cast<double>(*t) * mean_iteration_time;
}

std::vector<SpeedupPoint> predicted_speedup(std::span<const int> workers,
                                            const SpeedupOptions& options,
                                            const DelayFactory& delay) {
  STRAGGLERSIM_ASSERT(options.d >= 1, "speedup needs d >= 1");
  STRAGGLERSIM_ASSERT(options.r_fraction > 0.0 && options.r_fraction <= 1.0,
                      "speedup needs r_fraction in (0, 1]");
  std::vector<SpeedupPoint> points;
  for (const int n : workers) {
    STRAGGLERSIM_ASSERT(n >= 1 && n % options.d == 0, "speedup needs d | n");
    SpeedupPoint point;
    point.workers = n;
    point.r = std::max(1, static_cast<int>(std::lround(options.r_fraction * n)));

    const SchemeDescription uncoded{n, CodeFamily::kUncoded, 1, RuleKind::kAll, 1, 0.0};
    const SchemeDescription frc{
        n, CodeFamily::kFractionalRepetition, options.d, RuleKind::kDecodable, 1, 0.0};
    const SchemeDescription erasurehead{
        n, CodeFamily::kFractionalRepetition, options.d, RuleKind::kFirstR, point.r, 0.0};

    point.uncoded = predict_iteration_time(uncoded, *delay(WorkerLoads{n, {}, 1.0})).mean;
    const auto coded_delay = delay(WorkerLoads{n, {}, static_cast<double>(options.d)});
    point.frc = predict_iteration_time(frc, *coded_delay).mean;
    const IterationTimePrediction eh = predict_iteration_time(erasurehead, *coded_delay);
    point.erasurehead = eh.mean;
    point.q = eh.q;
    point.q2 = eh.q2;
    point.speedup_vs_uncoded = point.uncoded / point.erasurehead;
    point.speedup_vs_frc = point.frc / point.erasurehead;
    points.push_back(point);
  }
  return points;
}

std::vector<SpeedupPoint> predicted_speedup(std::span<const int> workers,
                                            const SpeedupOptions& options,
                                            double shift,
                                            double rate,
                                            TailScaling tail) {
  return predicted_speedup(workers, options, [&](const WorkerLoads& loads) {
    return ShiftedExponentialDelay::make(
        loads, ShiftedExponentialDelay::Options{.shift = shift, .rate = rate, .tail = tail});
  });
}

std::vector<double> speedup_growth_per_doubling(std::span<const SpeedupPoint> points) {
  std::vector<double> growth;
  for (std::size_t k = 1; k < points.size(); ++k) {
    const double doublings =
        std::log2(static_cast<double>(points[k].workers) / points[k - 1].workers);
    STRAGGLERSIM_ASSERT(doublings > 0.0, "speedup points must have increasing n");
    growth.push_back((points[k].speedup_vs_uncoded - points[k - 1].speedup_vs_uncoded) / doublings);
  }
  return growth;
}

}  // namespace stragglersim::sim

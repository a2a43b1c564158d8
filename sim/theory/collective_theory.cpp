#include "sim/theory/collective_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "models/base/invariant.h"
#include "sim/theory/stop_distribution.h"
#include "sim/theory/time_integrals.h"
#include "sim/theory/trace_rows_theory.h"

namespace stragglersim::sim {
namespace {

/// The numerical path on a model whose workers are dependent within an iteration.
constexpr const char* kMarginalsNote =
    " (independent marginals: the model's workers are dependent, an approximation)";

struct OffsetRange {
  double min = 0.0;
  double max = 0.0;
};

OffsetRange offset_range(std::span<const double> offsets) {
  const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
  return {*lo, *hi};
}

/// The prediction's offsets and its stop.
CollectiveTimePrediction with_stop(const IterationTimePrediction& stop,
                                   std::span<const double> offsets) {
  CollectiveTimePrediction out;
  const OffsetRange w = offset_range(offsets);
  out.min_offset = w.min;
  out.max_offset = w.max;
  out.stop = stop;
  return out;
}

/// The stop's fallback simulated the collective run itself: its mean is E[T].
CollectiveTimePrediction simulated(const IterationTimePrediction& stop,
                                   std::span<const double> offsets) {
  CollectiveTimePrediction out = with_stop(stop, offsets);
  out.form = "simulation";
  out.mean = stop.mean;
  out.sd = stop.sd;
  out.lower = stop.mean;
  out.upper = stop.mean;
  out.standard_error = stop.standard_error;
  out.method = fmt::format("simulation ({} draws: {})", stop.draws, stop.fallback_reason);
  return out;
}

/// E[t*] + w with equal offsets (exact), or the bounds E[t*] + min w, E[t*] + max w.
CollectiveTimePrediction shifted_stop(const IterationTimePrediction& stop,
                                      std::span<const double> offsets) {
  CollectiveTimePrediction out = with_stop(stop, offsets);
  if (equal_offsets(offsets)) {
    out.form = "exact";
    out.mean = stop.mean + out.max_offset;
    out.sd = stop.sd;
    out.lower = out.mean;
    out.upper = out.mean;
    out.method = fmt::format(
        "E[t*] + w, every rank's offset w = {:.6g} s (t*: {})", out.max_offset, stop.method);
    return out;
  }
  out.form = "bounds";
  out.mean = kNaN;
  out.sd = kNaN;
  out.lower = stop.mean + out.min_offset;
  out.upper = stop.mean + out.max_offset;
  out.method = fmt::format(
      "E[t*] + min_j w_j <= E[T] <= E[t*] + max_j w_j, w_j in [{:.6g}, {:.6g}] s (t*: {})",
      out.min_offset,
      out.max_offset,
      stop.method);
  return out;
}

/// Every piece boundary of the product form: lower_bound(j) + w_j, atom + w_j and τ + w_j.
std::vector<double> product_breaks(const DelayModel& delay,
                                   std::span<const double> offsets,
                                   double deadline) {
  std::vector<double> breaks;
  for (int j = 0; j < delay.workers(); ++j) {
    const double w = offsets[index(j)];
    breaks.push_back(std::min(delay.lower_bound(j), deadline) + w);
    for (const double a : delay.atoms(j)) {
      if (a < deadline) {
        breaks.push_back(a + w);
      }
    }
    if (std::isfinite(deadline)) {
      breaks.push_back(deadline + w);
    }
  }
  return breaks;
}

/// The exact product form (rule all: deadline +∞; a deadline or a window τ), integrated.
CollectiveTimePrediction product_form(const IterationTimePrediction& stop,
                                      const DelayModel& delay,
                                      std::span<const double> offsets,
                                      double deadline) {
  CollectiveTimePrediction out = with_stop(stop, offsets);
  const auto dist = [&](double t) {
    return collective_stop_probability(delay, offsets, deadline, t);
  };
  const double upper = std::isfinite(deadline) ? deadline + out.max_offset : kInfinity;
  const TimeMoments m = numerical_moments(dist, product_breaks(delay, offsets, deadline), upper);
  out.form = "exact";
  out.mean = m.mean;
  out.sd = m.sd;
  out.lower = m.mean;
  out.upper = m.mean;
  out.method =
      std::isfinite(deadline)
          ? fmt::format("P(T <= t) = prod_j P(min(r_j, {:.6g}) <= t - w_j) (numerical)", deadline)
          : std::string("P(T <= t) = prod_j F_j(t - w_j) (numerical)");
  if (!delay.independent_workers()) {
    out.method += kMarginalsNote;
  }
  return out;
}

/// The mean and (population) sd of T over rows, each row's T = max_j (min(r_j, Z) + w_j) with
/// Z its own stop.
CollectiveTimePrediction row_average(const IterationTimePrediction& stop,
                                     std::span<const double> offsets,
                                     int workers,
                                     std::span<const double> table,
                                     const std::function<double(std::span<const double>)>& row_z) {
  CollectiveTimePrediction out = with_stop(stop, offsets);
  const auto n = index(workers);
  const std::size_t rows = table.size() / n;
  double sum = 0.0;
  double sum_sq = 0.0;
  for (std::size_t k = 0; k < rows; ++k) {
    const auto row = table.subspan(k * n, n);
    const double z = row_z(row);
    double t = -kInfinity;
    for (std::size_t j = 0; j < n; ++j) {
      t = std::max(t, std::min(row[j], z) + offsets[j]);
    }
    sum += t;
    sum_sq += t * t;
  }
  const auto count = static_cast<double>(rows);
  out.form = "exact";
  out.mean = sum / count;
  out.sd = std::sqrt(std::max(0.0, sum_sq / count - out.mean * out.mean));
  out.lower = out.mean;
  out.upper = out.mean;
  out.method = fmt::format("trace rows: max_j (min(r_j, t*) + w_j) averaged over {} rows", rows);
  return out;
}

/// The rows of a replayed table under a SchemeDescription's rule: each row's stop by row_stop,
/// on the row in group order when the code has one.
CollectiveTimePrediction scheme_rows(const SchemeDescription& scheme,
                                     const IterationTimePrediction& stop,
                                     const DelayModel& delay,
                                     std::span<const double> offsets) {
  SchemeDescription grouped = scheme;
  grouped.order.clear();
  const Shape shape = stop_shape(grouped);
  std::vector<double> in_order(index(scheme.workers));
  std::vector<double> sorted(index(scheme.workers));
  return row_average(stop, offsets, scheme.workers, delay.rows(), [&](std::span<const double> r) {
    for (std::size_t g = 0; g < in_order.size(); ++g) {
      in_order[g] = scheme.order.empty() ? r[g] : r[index(scheme.order[g])];
    }
    std::copy(in_order.begin(), in_order.end(), sorted.begin());
    std::sort(sorted.begin(), sorted.end());
    return row_stop(grouped, shape, Row{in_order, sorted});
  });
}

/// Whether each partition has at most one holder and every worker holds one: the multi-message
/// stop is then min(τ, max_j T_j).
bool unshared_partitions(const std::vector<std::vector<int>>& orders) {
  std::vector<int> holders;
  for (const auto& order : orders) {
    if (order.empty()) {
      return false;
    }
    for (const int j : order) {
      if (index(j) >= holders.size()) {
        holders.resize(index(j) + 1, 0);
      }
      if (++holders[index(j)] > 1) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool equal_offsets(std::span<const double> offsets) {
  if (offsets.empty()) {
    return true;
  }
  const OffsetRange w = offset_range(offsets);
  const double scale = std::max({1.0, std::abs(w.min), std::abs(w.max)});
  return w.max - w.min <= kEqualOffsetTolerance * scale;
}

StopProbability collective_stop_probability(const DelayModel& delay,
                                            std::span<const double> offsets,
                                            double deadline,
                                            double t) {
  STRAGGLERSIM_ASSERT(offsets.size() == index(delay.workers()), "one offset per worker");
  double log_stopped = 0.0;
  for (int j = 0; j < delay.workers(); ++j) {
    const double s = t - offsets[index(j)];
    if (s >= deadline) {
      continue;  // min(r_j, τ) ≤ τ ≤ s
    }
    const double f = delay.cdf(j, s);
    if (!(f > 0.0)) {
      return {0.0, 1.0};
    }
    log_stopped += std::log(f);
  }
  return {std::exp(log_stopped), -std::expm1(log_stopped)};
}

CollectiveTimePrediction predict_collective_time(const SchemeDescription& scheme,
                                                 const DelayModel& delay,
                                                 std::span<const double> offsets,
                                                 const PredictionOptions& options) {
  STRAGGLERSIM_ASSERT(offsets.size() == index(scheme.workers) && delay.workers() == scheme.workers,
                      "one offset per worker of the scheme and the delay model");
  const IterationTimePrediction stop = predict_iteration_time(scheme, delay, options);
  if (options.method == PredictionMethod::kAuto && !delay.rows().empty()) {
    return scheme_rows(scheme, stop, delay, offsets);
  }
  if (stop.method == "simulation") {
    return simulated(stop, offsets);
  }
  if (equal_offsets(offsets)) {
    return shifted_stop(stop, offsets);
  }
  const Shape shape = stop_shape(scheme);
  if (shape.kind == StopShape::kOrderStatistic && shape.order == scheme.workers) {
    return product_form(stop, delay, offsets, kInfinity);
  }
  if (shape.kind == StopShape::kDeadline) {
    return product_form(stop, delay, offsets, scheme.deadline);
  }
  return shifted_stop(stop, offsets);
}

CollectiveTimePrediction predict_collective_multi_message_time(
    const std::vector<std::vector<int>>& orders,
    const DelayModel& delay,
    std::span<const double> offsets,
    const MultiMessageTheoryOptions& options) {
  STRAGGLERSIM_ASSERT(offsets.size() == index(delay.workers()) && options.shift == 0.0,
                      "one offset per worker, no network shift");
  const IterationTimePrediction stop = predict_multi_message_time(orders, delay, options);
  if (!delay.rows().empty()) {
    return row_average(stop, offsets, delay.workers(), delay.rows(), [&](auto row) {
      return multi_message_row_stop(orders, row, 0.0, options.deadline);
    });
  }
  if (stop.method == "simulation") {
    return simulated(stop, offsets);
  }
  if (equal_offsets(offsets) || !unshared_partitions(orders)) {
    return shifted_stop(stop, offsets);
  }
  return product_form(stop, delay, offsets, options.deadline.value_or(kInfinity));
}

double ring_cost(int workers, double latency, double transfer_seconds) {
  const auto n = static_cast<double>(workers);
  return 2.0 * (n - 1.0) * (latency + transfer_seconds / n);
}

std::vector<RingSpeedupPoint> ring_speedup(std::span<const int> workers,
                                           const SpeedupOptions& options,
                                           double shift,
                                           double rate,
                                           TailScaling tail,
                                           double latency,
                                           double transfer_seconds) {
  std::vector<RingSpeedupPoint> out;
  for (const SpeedupPoint& p : predicted_speedup(workers, options, shift, rate, tail)) {
    RingSpeedupPoint point;
    point.workers = p.workers;
    point.r = p.r;
    point.ring_cost = ring_cost(p.workers, latency, transfer_seconds);
    point.uncoded = p.uncoded;
    point.erasurehead = p.erasurehead;
    point.speedup_parameter_server = p.speedup_vs_uncoded;
    point.speedup_ring = (p.uncoded + point.ring_cost) / (p.erasurehead + point.ring_cost);
    out.push_back(point);
  }
  return out;
}

}  // namespace stragglersim::sim

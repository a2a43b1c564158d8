#include "sim/delays/trace_delay.h"

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

TraceDelay::TraceDelay(std::vector<double> loads, DelayTrace trace, const Options& options)
    : loads_(std::move(loads)), trace_(std::move(trace)), mode_(options.mode), tail_(options.tail) {
  STRAGGLERSIM_ASSERT(trace_.workers == static_cast<int>(loads_.size()),
                      "the trace must have one column per worker");
  STRAGGLERSIM_ASSERT(trace_.censored_lines.empty(), "a replayed trace has no censored time");
  const std::size_t n = loads_.size();
  base_.resize(n);
  marginal_.resize(n);
  mean_.resize(n);
  variance_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    STRAGGLERSIM_ASSERT(loads_[i] >= 0.0, "loads must be non-negative");
    const std::vector<double>& times = trace_.per_worker[i];
    STRAGGLERSIM_ASSERT(!times.empty(), "every worker has a measured time");
    base_[i] = *std::min_element(times.begin(), times.end());
    std::vector<double>& m = marginal_[i];
    m.reserve(times.size());
    for (const double t : times) {
      m.push_back(scaled(static_cast<int>(i), t));
    }
    std::sort(m.begin(), m.end());
    const auto count = static_cast<double>(m.size());
    double sum = 0.0;
    for (const double t : m) sum += t;
    mean_[i] = sum / count;
    double squares = 0.0;
    for (const double t : m) squares += (t - mean_[i]) * (t - mean_[i]);
    variance_[i] = squares / count;
  }
}

double TraceDelay::scaled(int worker, double measured) const {
  const auto w = static_cast<std::size_t>(worker);
  const double load = loads_[w];
  return tail_ == TailScaling::kLoad ? load * measured : measured + (load - 1.0) * base_[w];
}

void TraceDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == loads_.size(), "output span must hold one delay per worker");
  const std::uint64_t k = calls_++;
  if (trace_.has_iterations) {
    const std::size_t rows = trace_.per_iteration.size();
    std::size_t row = static_cast<std::size_t>(k % rows);
    if (mode_ == Mode::kBootstrap) {
      row = boost::random::uniform_int_distribution<std::size_t>(0, rows - 1)(rng);
    }
    const std::vector<double>& times = trace_.per_iteration[row];
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = scaled(static_cast<int>(i), times[i]);
    }
    return;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::vector<double>& times = trace_.per_worker[i];
    std::size_t index = static_cast<std::size_t>(k % times.size());
    if (mode_ == Mode::kBootstrap) {
      index = boost::random::uniform_int_distribution<std::size_t>(0, times.size() - 1)(rng);
    }
    out[i] = scaled(static_cast<int>(i), times[index]);
  }
}

double TraceDelay::cdf(int worker, double t) const {
  const std::vector<double>& m = marginal_[static_cast<std::size_t>(worker)];
  const auto below = std::upper_bound(m.begin(), m.end(), t) - m.begin();
  return static_cast<double>(below) / static_cast<double>(m.size());
}

double TraceDelay::mean(int worker) const { return mean_[static_cast<std::size_t>(worker)]; }

double TraceDelay::variance(int worker) const {
  return variance_[static_cast<std::size_t>(worker)];
}

double TraceDelay::lower_bound(int worker) const {
  return marginal_[static_cast<std::size_t>(worker)].front();
}

}  // namespace stragglersim::sim

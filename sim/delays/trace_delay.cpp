#include "sim/delays/trace_delay.h"

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

TraceDelay::TraceDelay(std::vector<double> loads, DelayTrace trace, const Options& options)
    : loads_(std::move(loads)),
      trace_(std::move(trace)),
      mode_(options.mode),
      tail_(options.tail),
      start_(options.start),
      random_start_(options.random_start) {
  STRAGGLERSIM_ASSERT(trace_.workers == static_cast<int>(loads_.size()),
                      "the trace must have one column per worker");
  STRAGGLERSIM_ASSERT(
      (start_ == 0 && !random_start_) ||
          (mode_ == Mode::kCycle && trace_.has_iterations && start_ < trace_.per_iteration.size()),
      "a start row is a row of an iteration-form trace in cycle mode");
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
  build_rows();
  if (mode_ == Mode::kBlock) {
    STRAGGLERSIM_ASSERT(trace_.has_iterations, "block mode needs an iteration-form trace");
    block_ = options.block > 0 ? options.block : auto_block_length(iteration_means(trace_));
  }
}

void TraceDelay::build_rows() {
  const std::size_t n = loads_.size();
  std::size_t count = 0;
  if (trace_.has_iterations && mode_ != Mode::kEmpirical) {
    count = trace_.per_iteration.size();
  } else if (!trace_.has_iterations && mode_ == Mode::kCycle) {
    // Pool cycle replays index k mod N_i: whole rows only when every worker has the same N.
    count = trace_.per_worker.front().size();
    for (const auto& times : trace_.per_worker) {
      if (times.size() != count) {
        return;
      }
    }
  }
  rows_.resize(count * n);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const double m = trace_.has_iterations ? trace_.per_iteration[k][i] : trace_.per_worker[i][k];
      rows_[k * n + i] = scaled(static_cast<int>(i), m);
    }
  }
}

bool TraceDelay::independent_workers() const {
  if (trace_.has_iterations) {
    return mode_ == Mode::kEmpirical;
  }
  return mode_ != Mode::kCycle || loads_.size() <= 1;
}

double TraceDelay::scaled(int worker, double measured) const {
  const auto w = static_cast<std::size_t>(worker);
  const double load = loads_[w];
  return tail_ == TailScaling::kLoad ? load * measured : measured + (load - 1.0) * base_[w];
}

void TraceDelay::sample(std::uint64_t /*iteration*/, RandomEngine& rng, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == loads_.size(), "output span must hold one delay per worker");
  const std::uint64_t k = calls_++;
  if (trace_.has_iterations && mode_ != Mode::kEmpirical) {
    const std::size_t rows = trace_.per_iteration.size();
    if (k == 0 && random_start_) {
      start_ = boost::random::uniform_int_distribution<std::size_t>(0, rows - 1)(rng);
    }
    std::size_t row = static_cast<std::size_t>((start_ + k % rows) % rows);
    if (mode_ == Mode::kBootstrap) {
      row = boost::random::uniform_int_distribution<std::size_t>(0, rows - 1)(rng);
    } else if (mode_ == Mode::kBlock) {
      const auto offset = static_cast<std::size_t>(k % block_);
      if (offset == 0) {
        block_start_ = boost::random::uniform_int_distribution<std::size_t>(0, rows - 1)(rng);
      }
      row = (block_start_ + offset) % rows;
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
    if (mode_ != Mode::kCycle) {
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

std::vector<double> iteration_means(const DelayTrace& trace) {
  std::vector<double> means;
  means.reserve(trace.per_iteration.size());
  for (const auto& row : trace.per_iteration) {
    double sum = 0.0;
    for (const double t : row) sum += t;
    means.push_back(sum / static_cast<double>(row.size()));
  }
  return means;
}

std::size_t auto_block_length(std::span<const double> series) {
  const std::size_t length = series.size();
  if (length < 2) {
    return 1;
  }
  double mean = 0.0;
  for (const double x : series) mean += x;
  mean /= static_cast<double>(length);
  double denominator = 0.0;
  for (const double x : series) denominator += (x - mean) * (x - mean);
  if (!(denominator > 0.0)) {
    return 1;
  }
  const std::size_t cap = std::max<std::size_t>(1, length / 4);
  const double band = 2.0 / std::sqrt(static_cast<double>(length));
  for (std::size_t lag = 1; lag < cap; ++lag) {
    double numerator = 0.0;
    for (std::size_t t = 0; t + lag < length; ++t) {
      numerator += (series[t] - mean) * (series[t + lag] - mean);
    }
    if (numerator / denominator < band) {
      return lag;
    }
  }
  return cap;
}

}  // namespace stragglersim::sim

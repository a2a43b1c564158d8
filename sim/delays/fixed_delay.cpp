#include "sim/delays/fixed_delay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

Validation FixedDelay::Options::validate(std::size_t workers) const {
  if (Validation v = options_check::positive("scale", scale); v || formula != Formula::kList) {
    return v;
  }
  const std::string expected = fmt::format(
      "an array of {} numbers > 0 (one time per worker), \"sqrt\" or \"linear\"", workers);
  if (times.size() != workers) {
    return Violation{"times", "wrong length", expected, Violation::Got::kSize};
  }
  for (std::size_t i = 0; i < times.size(); ++i) {
    // Written so that NaN fails too.
    if (!(times[i] > 0.0) || !std::isfinite(times[i])) {
      return Violation{"times", "time not > 0", expected, Violation::Got::kElement, i};
    }
  }
  return std::nullopt;
}

std::vector<double> FixedDelay::Options::resolve(std::size_t workers) const {
  std::vector<double> out(workers);
  if (formula == Formula::kList) {
    for (std::size_t i = 0; i < workers; ++i) {
      out[i] = scale * times[i];
    }
    return out;
  }
  for (std::size_t i = 0; i < workers; ++i) {
    // 1-based, as the papers number their workers: the fastest worker takes `scale`.
    const auto k = static_cast<double>(i + 1);
    out[i] = scale * (formula == Formula::kSqrt ? std::sqrt(k) : k);
  }
  return out;
}

FixedDelay::FixedDelay(std::vector<double> loads, const Options& options) {
  STRAGGLERSIM_ASSERT(!options.validate(loads.size()), "fixed delay needs one time > 0 per worker");
  times_ = options.resolve(loads.size());
  delays_.resize(loads.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    STRAGGLERSIM_ASSERT(loads[i] >= 0.0, "loads must be non-negative");
    delays_[i] = times_[i] * loads[i];
  }
}

void FixedDelay::sample(std::uint64_t /*iteration*/, RandomEngine& /*rng*/, std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == delays_.size(), "output span must hold one delay per worker");
  std::copy(delays_.begin(), delays_.end(), out.begin());
}

double FixedDelay::cdf(int worker, double t) const { return t >= mean(worker) ? 1.0 : 0.0; }

double FixedDelay::mean(int worker) const { return delays_[static_cast<std::size_t>(worker)]; }

double FixedDelay::variance(int /*worker*/) const { return 0.0; }

double FixedDelay::lower_bound(int worker) const { return mean(worker); }

std::span<const double> FixedDelay::atoms(int worker) const {
  return {&delays_[static_cast<std::size_t>(worker)], 1};
}

}  // namespace stragglersim::sim

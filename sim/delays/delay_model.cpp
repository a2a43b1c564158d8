#include "sim/delays/delay_model.h"

#include <boost/random/exponential_distribution.hpp>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {

double DelayModel::duration_at(int /*worker*/, double /*start*/, RandomEngine& /*rng*/) {
  STRAGGLERSIM_ASSERT(false, "duration_at asked of a model whose draws do not depend on the clock");
  return 0.0;
}

Validation ShiftedExponentialDelay::Options::validate() const {
  return options_check::first_of(
      {options_check::at_least("shift", shift, 0.0), options_check::positive("rate", rate)});
}

std::vector<double> WorkerLoads::expanded() const {
  return is_uniform() ? std::vector<double>(static_cast<std::size_t>(workers), uniform)
                      : per_worker;
}

WorkerLoads WorkerLoads::of(std::vector<double> loads) {
  WorkerLoads w;
  w.workers = static_cast<int>(loads.size());
  w.per_worker = std::move(loads);
  return w;
}

ShiftedExponentialDelay::ShiftedExponentialDelay(std::vector<double> loads, const Options& options)
    : ShiftedExponentialDelay(WorkerLoads::of(std::move(loads)), options, 0) {}

ShiftedExponentialDelay::ShiftedExponentialDelay(int workers, double load, const Options& options)
    : ShiftedExponentialDelay(WorkerLoads{workers, {}, load}, options, 0) {
  STRAGGLERSIM_ASSERT(workers >= 1, "a delay model needs a worker");
}

std::unique_ptr<ShiftedExponentialDelay> ShiftedExponentialDelay::make(const WorkerLoads& loads,
                                                                       const Options& options) {
  return std::unique_ptr<ShiftedExponentialDelay>(new ShiftedExponentialDelay(loads, options, 0));
}

ShiftedExponentialDelay::ShiftedExponentialDelay(const WorkerLoads& loads,
                                                 const Options& options,
                                                 int /*private*/)
    : workers_(loads.workers), shift_(options.shift), rate_(options.rate), tail_(options.tail) {
  STRAGGLERSIM_ASSERT(!options.validate(), "shifted exponential needs shift >= 0, rate > 0");
  STRAGGLERSIM_ASSERT(
      loads.is_uniform() || loads.per_worker.size() == static_cast<std::size_t>(workers_),
      "one load per worker");
  const std::vector<double> one{loads.uniform};
  const std::vector<double>& values = loads.is_uniform() ? one : loads.per_worker;
  worker_shift_.reserve(values.size());
  worker_scale_.reserve(values.size());
  for (const double l : values) {
    // A zero load (a BGC worker holding nothing) is legal: under Model A it answers at once.
    STRAGGLERSIM_ASSERT(l >= 0.0, "loads must be non-negative");
    worker_shift_.push_back(l * shift_);
    worker_scale_.push_back((tail_ == TailScaling::kLoad ? l : 1.0) / rate_);
  }
}

void ShiftedExponentialDelay::sample(std::uint64_t /*iteration*/,
                                     RandomEngine& rng,
                                     std::span<double> out) {
  STRAGGLERSIM_ASSERT(out.size() == static_cast<std::size_t>(workers_),
                      "output span must hold one delay per worker");
  // Boost's exponential distribution is a ziggurat and stateless, so one instance draws the
  // same values as a fresh one: the stream depends only on the engine's position.
  boost::random::exponential_distribution<double> exp1(1.0);
  if (worker_shift_.size() == 1) {
    const double sh = worker_shift_[0];
    const double sc = worker_scale_[0];
    for (double& v : out) {
      v = sh + sc * exp1(rng);
    }
    return;
  }
  const double* sh = worker_shift_.data();
  const double* sc = worker_scale_.data();
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = sh[i] + sc[i] * exp1(rng);
  }
}

double ShiftedExponentialDelay::worker_shift(int worker) const {
  return worker_shift_.size() == 1 ? worker_shift_[0]
                                   : worker_shift_[static_cast<std::size_t>(worker)];
}

double ShiftedExponentialDelay::worker_scale(int worker) const {
  return worker_scale_.size() == 1 ? worker_scale_[0]
                                   : worker_scale_[static_cast<std::size_t>(worker)];
}

double ShiftedExponentialDelay::cdf(int worker, double t) const {
  const double u = t - worker_shift(worker);
  return u <= 0.0 ? 0.0 : -std::expm1(-u / worker_scale(worker));
}

double ShiftedExponentialDelay::mean(int worker) const {
  return worker_shift(worker) + worker_scale(worker);
}

double ShiftedExponentialDelay::variance(int worker) const {
  return worker_scale(worker) * worker_scale(worker);
}

double ShiftedExponentialDelay::lower_bound(int worker) const { return worker_shift(worker); }

}  // namespace stragglersim::sim

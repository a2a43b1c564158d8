#pragma once
// Worker delay models, in simulated seconds (docs/model.md "Delay model"). A worker with
// normalised load ℓ_i (1 for an uncoded worker) takes
//   shifted exponential:  T_i = ℓ_i·a + s(ℓ_i)·X_i/λ,  X_i ~ Exp(1)
// with s(ℓ) = ℓ ("Model A", tail scales with load, Lee et al. 2017) or s(ℓ) = 1 ("Model B").
// Every model draws all n workers of an iteration in one call, in worker order, from the
// run's delay stream.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/base/options_check.h"
#include "models/base/random_stream.h"

namespace stragglersim::sim {

/// The workers' normalised loads: one per worker, or one value shared by all n workers (O(1)
/// memory, from a code built compact: delay-only runs of group codes at any n).
struct WorkerLoads {
  int workers = 0;
  std::vector<double> per_worker;  ///< size workers, or empty when every worker has `uniform`
  double uniform = 1.0;
  /// One entry per worker: per_worker, or workers copies of uniform (O(n)).
  [[nodiscard]] std::vector<double> expanded() const;
  [[nodiscard]] bool is_uniform() const { return per_worker.empty(); }
  /// Loads given per worker.
  [[nodiscard]] static WorkerLoads of(std::vector<double> loads);
};

/// Whether the random tail scales with the load (Model A) or not (Model B).
enum class TailScaling { kLoad, kNone };

/// A model whose worker i draws T_i = worker_shift_i + worker_scale_i·X_i, X_i ~ Exp(1)
/// i.i.d. over workers and iterations, with worker_shift_i = ℓ_i·shift and
/// worker_scale_i = s(ℓ_i)/rate. The spans view the model and live as long as it does; they hold
/// one entry per worker, or a single entry shared by every worker (a model of uniform loads).
struct ShiftedExponentialShape {
  double shift = 0.0;
  double rate = 1.0;
  TailScaling tail = TailScaling::kLoad;
  std::span<const double> worker_shift;
  std::span<const double> worker_scale;
};

class DelayModel {
 public:
  virtual ~DelayModel() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual int workers() const = 0;
  /// Draws T_i for every worker of `iteration` into `out` (size workers()), consuming `rng` in
  /// worker order.
  virtual void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) = 0;
  /// P(T_i ≤ t) of worker i's stationary marginal (used by the theory module).
  [[nodiscard]] virtual double cdf(int worker, double t) const = 0;
  /// E[T_i].
  [[nodiscard]] virtual double mean(int worker) const = 0;
  /// Var[T_i] (infinite for heavy tails without a second moment).
  [[nodiscard]] virtual double variance(int worker) const = 0;
  /// Smallest possible delay of worker i (the shift): integration starts here.
  [[nodiscard]] virtual double lower_bound(int worker) const = 0;
  /// The points where worker i's CDF jumps, sorted (a discrete marginal such as a replayed
  /// trace); empty for a continuous law. Non-empty means purely discrete: all of the mass is on
  /// these points. The numerical theory splits its integrals there.
  [[nodiscard]] virtual std::span<const double> atoms(int /*worker*/) const { return {}; }
  /// A fixed table whose rows are the iterations: each iteration's delays are one row, and in
  /// the long run every row is used equally often (a replayed trace, sim/delays/trace_delay.h).
  /// Row k's delay of worker i is at [k·workers() + i]. Empty (the default) for every other
  /// model: the theory then uses the marginals. The span lives as long as the model.
  [[nodiscard]] virtual std::span<const double> rows() const { return {}; }
  /// Whether the workers of one iteration are independent, so that the marginals (cdf) describe
  /// the iteration's joint law. False for a model whose workers share an iteration's row.
  [[nodiscard]] virtual bool independent_workers() const { return true; }
  /// Its parameters when the model is exactly i.i.d. shifted exponential (closed forms apply);
  /// nullopt otherwise.
  [[nodiscard]] virtual std::optional<ShiftedExponentialShape> shifted_exponential() const {
    return std::nullopt;
  }
  /// Whether a computation's duration depends on when it starts (the universal computation
  /// model, docs/model.md: worker i's compute power v_i(t) varies with the clock and a
  /// computation of load ℓ_i started at s ends at the first t with ∫_s^t v_i = ℓ_i). False, the
  /// default, for every model whose draws do not depend on the clock; the clocks then call
  /// sample() and never the two functions below.
  [[nodiscard]] virtual bool time_varying() const { return false; }
  /// A time-varying model's durations of `iteration`'s computations when every worker starts at
  /// `start` (simulated seconds; the synchronous clock's broadcast), consuming `rng` in worker
  /// order. The default ignores `start` (sample()).
  virtual void sample_at(std::uint64_t iteration,
                         double start,
                         RandomEngine& rng,
                         std::span<double> out) {
    static_cast<void>(start);
    sample(iteration, rng, out);
  }
  /// A time-varying model's duration of one computation of `worker` started at `start` (the
  /// asynchronous clock, where workers start at different times). The default is illegal: only
  /// a model whose time_varying() is true is asked.
  virtual double duration_at(int worker, double start, RandomEngine& rng);
};

/// T_i = ℓ_i·shift + s(ℓ_i)·X_i/rate, X_i ~ Exp(1) i.i.d. over workers and iterations.
/// Illegal: options that fail validate(), a negative load.
class ShiftedExponentialDelay final : public DelayModel {
 public:
  /// Defaults are the config's.
  struct Options {
    double shift = 1.0;  ///< a ≥ 0, seconds per unit of load
    double rate = 1.0;   ///< λ > 0
    TailScaling tail = TailScaling::kLoad;
    /// The first violated constraint: shift ≥ 0, rate > 0.
    [[nodiscard]] Validation validate() const;
  };
  ShiftedExponentialDelay(std::vector<double> loads, const Options& options);
  /// `workers` workers of one load: O(1) memory at any n, the same draws as the per-worker model
  /// of the same loads. Illegal: workers < 1, options that fail validate(), a negative load.
  ShiftedExponentialDelay(int workers, double load, const Options& options);
  /// The model of `loads`: per worker, or uniform (the constructor above).
  [[nodiscard]] static std::unique_ptr<ShiftedExponentialDelay> make(const WorkerLoads& loads,
                                                                     const Options& options);
  [[nodiscard]] std::string name() const override { return "shifted_exponential"; }
  [[nodiscard]] int workers() const override { return workers_; }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] std::optional<ShiftedExponentialShape> shifted_exponential() const override {
    return ShiftedExponentialShape{shift_, rate_, tail_, worker_shift_, worker_scale_};
  }
  [[nodiscard]] double shift() const { return shift_; }
  [[nodiscard]] double rate() const { return rate_; }
  [[nodiscard]] TailScaling tail() const { return tail_; }
  /// Worker i's shift ℓ_i·a and tail scale s(ℓ_i)/λ.
  [[nodiscard]] double worker_shift(int worker) const;
  [[nodiscard]] double worker_scale(int worker) const;

 private:
  ShiftedExponentialDelay(const WorkerLoads& loads, const Options& options, int /*private*/);
  int workers_ = 0;
  double shift_;
  double rate_;
  TailScaling tail_;
  std::vector<double> worker_shift_;
  std::vector<double> worker_scale_;
};

}  // namespace stragglersim::sim

#pragma once
// Delays replayed from measured per-worker times (docs/model.md "Trace delays"), in simulated
// seconds: the file's seconds are taken as simulated seconds for one unit of load.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fit/delay_trace.h"
#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// Replays a DelayTrace. A measured time m of worker i (the time for one unit of load) becomes,
/// at load ℓ_i,
///   tail "load":  T_i = ℓ_i·m                      (all of it scales, as Model A)
///   tail "none":  T_i = m + (ℓ_i − 1)·b_i          (only the shift scales, as Model B)
/// with b_i = worker i's smallest measured time (its empirical shift); at ℓ_i = 1 both give m
/// exactly. Which m:
///   iteration form, cycle:      the k-th sample call replays the trace's row k mod T (all
///                               workers of one measured iteration together, no draw);
///   iteration form, bootstrap:  one uniform row index per iteration from the run's stream;
///   pool form, cycle:           worker i takes its own times in file order, wrapping;
///   pool form, bootstrap:       per worker, in worker order, one uniform index into its times.
/// cdf/mean/variance/lower_bound are those of worker i's empirical marginal (its measured times,
/// each with weight 1/N_i, scaled by the load): the exact marginal of every mode. Workers of one
/// iteration-form row are dependent, so the theory's independence assumption is then an
/// approximation. Illegal: a trace whose worker count differs from the loads', a censored
/// observation (+∞), a negative load.
class TraceDelay final : public DelayModel {
 public:
  enum class Mode { kCycle, kBootstrap };
  struct Options {
    Mode mode = Mode::kCycle;
    TailScaling tail = TailScaling::kLoad;
  };
  TraceDelay(std::vector<double> loads, DelayTrace trace, const Options& options);
  [[nodiscard]] std::string name() const override { return "trace"; }
  [[nodiscard]] int workers() const override { return static_cast<int>(loads_.size()); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  /// Worker i's scaled measured times, sorted (repeats included).
  [[nodiscard]] std::span<const double> atoms(int worker) const override {
    return marginal_[static_cast<std::size_t>(worker)];
  }
  [[nodiscard]] const DelayTrace& trace() const { return trace_; }
  /// The delay of worker i for a measured time m (the load convention above).
  [[nodiscard]] double scaled(int worker, double measured) const;

 private:
  std::vector<double> loads_;
  DelayTrace trace_;
  Mode mode_;
  TailScaling tail_;
  std::vector<double> base_;                   ///< b_i
  std::vector<std::vector<double>> marginal_;  ///< worker i's scaled times, sorted
  std::vector<double> mean_;
  std::vector<double> variance_;
  std::uint64_t calls_ = 0;
};

}  // namespace stragglersim::sim

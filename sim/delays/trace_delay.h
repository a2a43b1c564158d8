#pragma once
// Delays replayed from measured per-worker times (docs/model.md "Trace delays"), in simulated
// seconds: the file's seconds are taken as simulated seconds for one unit of load.

#include <cstddef>
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
/// exactly. Which m (T measured iterations, rows in increasing iteration order):
///   iteration form, cycle:      the k-th sample call replays the trace's row (s + k) mod T (all
///                               workers of one measured iteration together), s the start row:
///                               given (no draw), or drawn uniformly from [0, T) at the first
///                               call (random start: one draw per run, so runs of different
///                               seeds replay the trace from different rows);
///   iteration form, bootstrap:  one uniform row index per iteration from the run's stream;
///   iteration form, block:      circular block bootstrap: calls k = jL … jL + L − 1 replay rows
///                               (u_j + k − jL) mod T, one uniform start u_j ∈ [0, T) drawn at
///                               the first call of each block (persistence within L rows and the
///                               correlation across workers are kept; every row has probability
///                               1/T at every call);
///   empirical (either form),
///   pool form, bootstrap:       per worker, in worker order, one uniform index into its own
///                               times (independent workers with the per-worker marginals);
///   pool form, cycle:           worker i takes its own times in file order, wrapping.
/// cdf/mean/variance/lower_bound are those of worker i's empirical marginal (its measured times,
/// each with weight 1/N_i, scaled by the load): the exact marginal of every mode. In the modes
/// that replay whole rows (iteration form cycle, bootstrap and block; pool form cycle when every
/// worker has the same count) rows() exposes the scaled table, over which the theory averages
/// exactly. Illegal: a trace whose worker count differs from the loads', a censored
/// observation (+∞), a negative load, block mode on a pool-form trace, a block length < 0, a start
/// row ≥ T or a start on a pool-form trace or outside cycle mode.
class TraceDelay final : public DelayModel {
 public:
  enum class Mode { kCycle, kBootstrap, kBlock, kEmpirical };
  struct Options {
    Mode mode = Mode::kCycle;
    TailScaling tail = TailScaling::kLoad;
    /// Block mode's L; 0 chooses auto_block_length of the per-iteration mean times.
    std::size_t block = 0;
    /// Cycle mode on an iteration-form trace: the first row replayed (< T) ...
    std::size_t start = 0;
    /// ... or, when set, a uniform row drawn at the first call.
    bool random_start = false;
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
  [[nodiscard]] std::span<const double> rows() const override { return rows_; }
  [[nodiscard]] bool independent_workers() const override;
  [[nodiscard]] const DelayTrace& trace() const { return trace_; }
  /// Block mode's L (the given one, or the automatic choice); 0 in the other modes.
  [[nodiscard]] std::size_t block_length() const { return block_; }
  /// The delay of worker i for a measured time m (the load convention above).
  [[nodiscard]] double scaled(int worker, double measured) const;

 private:
  void build_rows();
  std::vector<double> loads_;
  DelayTrace trace_;
  Mode mode_;
  TailScaling tail_;
  std::vector<double> base_;                   ///< b_i
  std::vector<std::vector<double>> marginal_;  ///< worker i's scaled times, sorted
  std::vector<double> mean_;
  std::vector<double> variance_;
  std::vector<double> rows_;  ///< the rows() table, empty when no mode replays whole rows
  std::size_t block_ = 0;
  std::size_t block_start_ = 0;
  std::size_t start_ = 0;
  bool random_start_ = false;
  std::uint64_t calls_ = 0;
};

/// The mean over workers of each measured iteration (iteration form; empty for a pool).
[[nodiscard]] std::vector<double> iteration_means(const DelayTrace& trace);

/// Block mode's automatic L for a series x of length T (the per-iteration mean times): the
/// smallest lag k ≥ 1 at which the sample autocorrelation
///   ρ(k) = Σ_{t<T−k} (x_t − x̄)(x_{t+k} − x̄) / Σ_t (x_t − x̄)²
/// falls below 2/√T (the 95% band of white noise), capped at max(1, ⌊T/4⌋); 1 for a constant
/// series or T < 2.
[[nodiscard]] std::size_t auto_block_length(std::span<const double> series);

}  // namespace stragglersim::sim

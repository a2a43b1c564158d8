#pragma once
// The universal computation model (Tyurin, arXiv 2408.04929; docs/model.md "Universal
// computation model"): compute powers that vary with the clock, in simulated seconds.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/delays/delay_model.h"

namespace stragglersim::sim {

/// One worker's compute power over one period of a trace: power[k] from start[k] to start[k + 1]
/// (the last one to `period`); start[0] = 0. After the period the trace repeats.
struct PowerTrace {
  std::vector<double> start;
  std::vector<double> power;
  double period = 0.0;
};

/// A power file as read: one trace per worker, all of one period.
struct PowerFile {
  std::string path;
  std::vector<PowerTrace> workers;
};

/// Reads a power file of `workers` workers: a header naming the columns time, worker and power
/// (any order; blank lines skipped), then one row per (time, worker): the worker's power from
/// that time on. The period is the largest time in the file; rows at it only close the period
/// (their power is checked, then unused: the trace wraps to time 0 there). Throws TraceFileError
/// "PATH:LINE: ..." for: an unreadable file, a header without those columns, a row with too few
/// fields, a malformed or negative time, a worker out of [0, workers), a malformed, non-finite or
/// negative power, a duplicate (time, worker); "PATH:0: ..." for: no data rows, a largest time of
/// 0, a worker without a row at time 0, a worker whose power is 0 over the whole period.
PowerFile read_power_file(const std::string& path, int workers);

/// The compute power of each worker as a continuous-time Markov chain over states of the given
/// powers, independent across workers.
struct PowerChain {
  std::vector<double> powers;  ///< p_a ≥ 0, one per state, some > 0
  /// rates[a][b] ≥ 0, the rate (per second) of the jump a → b; the diagonal is not read. Empty:
  /// every state leaves at switch_rate to a uniformly chosen other state.
  std::vector<std::vector<double>> rates = {};
  double switch_rate = 1.0;  ///< > 0 (read when rates is empty)
  /// The first violated constraint, its field a path inside the markov object ("powers/2",
  /// "rates/0/1"): a power < 0 or non-finite, no power > 0, rates not m × m, an off-diagonal rate
  /// < 0 or non-finite, a state that cannot be left (m > 1), a chain not irreducible (no unique
  /// stationary law), switch_rate ≤ 0.
  [[nodiscard]] Validation validate() const;
};

/// Worker i computes at power v_i(t) = c_i·p_i(t) ≥ 0 (work per second; one uncoded gradient is
/// one unit of work), so a computation of load ℓ_i started at s ends at the first t with
/// ∫_s^t v_i = ℓ_i. p_i is piecewise constant: worker i's trace of a power file, repeated with
/// its period, or the path of worker i's PowerChain, started in the stationary law at the
/// worker's first computation and drawn lazily (states, then holding times) from the stream
/// passed to duration_at as the clock reaches them; a worker's computations must start in
/// non-decreasing order (the clocks' order), the path before the latest start being forgotten.
/// Without a clock (sample()) each worker's computation starts at an independent stationary
/// time: a uniform phase of the trace (one uniform draw per worker) or a fresh path from the
/// stationary law (leaving the lazy paths alone); its law is the stationary marginal that cdf()
/// and the moments describe. That law has no closed form: it is the empirical law of
/// kMarginalPoints durations, computed on the first question about a worker: of the starts
/// (k + ½)·P/kMarginalPoints, k = 0..kMarginalPoints − 1 (midpoint rule over the phase), for a
/// trace; of kMarginalPoints stationary paths drawn from a fixed seed (Monte Carlo), for a
/// chain. A trace's workers share the clock, so they are not independent (independent_workers()
/// false); a chain's are. Illegal: options that fail validate(loads.size()), a negative load.
class UniversalDelay final : public DelayModel {
 public:
  /// Points of the numerical stationary marginal per worker.
  static constexpr std::size_t kMarginalPoints = 1024;
  /// The seed of the chain's Monte Carlo marginal.
  static constexpr std::uint64_t kMarginalSeed = 0x5eed'0f'2408'04929ULL;
  struct Options {
    std::shared_ptr<const PowerFile> trace = {};  ///< the powers of a file, or
    std::optional<PowerChain> chain = {};         ///< those of a Markov chain
    std::vector<double> speeds = {};              ///< c_i > 0 per worker; empty: every c_i = 1
    /// The first violated constraint: exactly one of trace and chain, the trace's workers,
    /// the chain's own (PowerChain::validate), one speed per worker, each > 0 ("speeds/3").
    [[nodiscard]] Validation validate(std::size_t workers) const;
  };
  UniversalDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "universal"; }
  [[nodiscard]] int workers() const override { return static_cast<int>(work_.size()); }
  /// Stationary-start durations (see the class comment).
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] std::span<const double> atoms(int worker) const override;
  [[nodiscard]] bool independent_workers() const override { return !trace_; }
  [[nodiscard]] bool time_varying() const override { return true; }
  /// duration_at(i, start, rng) for every worker, in worker order.
  void sample_at(std::uint64_t iteration,
                 double start,
                 RandomEngine& rng,
                 std::span<double> out) override;
  double duration_at(int worker, double start, RandomEngine& rng) override;
  /// The stationary probability of each state of the chain (empty for a trace).
  [[nodiscard]] const std::vector<double>& stationary() const { return stationary_; }

 private:
  /// A stretch of a chain's path: the state until `end`.
  struct Segment {
    double end;
    int state;
  };
  struct Path {
    std::deque<Segment> segments;  ///< consecutive, the first one from `from`
    double from = 0.0;
  };
  /// The numerical stationary marginal of one work amount.
  struct Marginal {
    std::vector<double> sorted;  ///< kMarginalPoints durations, sorted
    std::vector<double> atoms;   ///< their distinct values
    double mean = 0.0;
    double variance = 0.0;
  };
  /// Time to do `work` on trace `worker` from phase `phase` ∈ [0, period).
  [[nodiscard]] double trace_duration(std::size_t worker, double phase, double work) const;
  /// Time to do `work` from `start` on worker's lazy path.
  double chain_duration(std::size_t worker, double start, double work, RandomEngine& rng);
  /// Time to do `work` on a fresh path started in the stationary law (not stored).
  double fresh_chain_duration(double work, RandomEngine& rng) const;
  double draw_hold(int state, RandomEngine& rng) const;
  void extend(Path& path, RandomEngine& rng) const;
  const Marginal& marginal(int worker) const;

  std::shared_ptr<const PowerFile> trace_;
  std::vector<std::vector<double>> cumulative_work_;  ///< per trace worker, at each start + period
  std::vector<double> powers_;                        ///< the chain's
  std::vector<double> exit_rate_;                     ///< per state
  std::vector<std::vector<double>> jump_cumulative_;  ///< per state, P(next ≤ b)
  std::vector<double> stationary_;
  std::vector<double> stationary_cumulative_;
  std::vector<double> work_;  ///< ℓ_i / c_i: the integral of p_i a computation needs
  std::vector<Path> paths_;
  mutable std::mutex marginal_mutex_;
  mutable std::map<std::pair<std::size_t, double>, Marginal> marginals_;
};

}  // namespace stragglersim::sim

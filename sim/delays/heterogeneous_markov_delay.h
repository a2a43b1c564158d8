#pragma once
// Persistent stragglers on heterogeneous workers (docs/model.md "Further models"), in simulated
// seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/delays/heterogeneous_delay.h"
#include "sim/delays/markov_delay.h"

namespace stragglersim::sim {

/// Per-worker speed factors c_i on Markov-modulated delays:
///   T_i = c_i·M_i,   M_i the MarkovDelay time of worker i (two-state chain, shifted
///   exponential per state),
/// so a worker is persistently slower by c_i and, on top of that, falls into slow spells.
/// F_i(t) = F^M_i(t/c_i), E[T_i] = c_i·E[M_i], Var[T_i] = c_i²·Var[M_i], lower bound
/// c_i·(lower bound of M_i). The draws are those of MarkovDelay (same stream, same order).
/// Illegal: options that fail validate(loads.size()), a negative load.
class HeterogeneousMarkovDelay final : public DelayModel {
 public:
  /// The markov keys plus one factor per worker (required: no default).
  struct Options {
    MarkovDelay::Options markov;
    std::vector<double> factors = {};  ///< c_i > 0, one per worker
    /// The first violated constraint: the markov options', then one factor > 0 per worker.
    [[nodiscard]] Validation validate(std::size_t workers) const;
  };
  HeterogeneousMarkovDelay(std::vector<double> loads, const Options& options);
  [[nodiscard]] std::string name() const override { return "heterogeneous_markov"; }
  [[nodiscard]] int workers() const override { return base_.workers(); }
  void sample(std::uint64_t iteration, RandomEngine& rng, std::span<double> out) override;
  [[nodiscard]] double cdf(int worker, double t) const override;
  [[nodiscard]] double mean(int worker) const override;
  [[nodiscard]] double variance(int worker) const override;
  [[nodiscard]] double lower_bound(int worker) const override;
  [[nodiscard]] double factor(int worker) const {
    return factors_[static_cast<std::size_t>(worker)];
  }
  [[nodiscard]] const MarkovDelay& base() const { return base_; }

 private:
  MarkovDelay base_;
  std::vector<double> factors_;
};

}  // namespace stragglersim::sim

#pragma once
// Stopping rules (docs/model.md): when the master stops waiting in an iteration. A rule sees the
// arrivals one at a time, in time order, and may also set a deadline after the broadcast.
// The same objects drive the simulated clock and the real threaded master.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codes/decode_memo.h"
#include "codes/gradient_code.h"
#include "models/base/options_check.h"
#include "sim/adaptive_deadline.h"
#include "sim/adaptive_r.h"

namespace stragglersim::sim {

/// The built-in rule shapes (docs/model.md): wait for all n, the r-th arrival, a deadline τ,
/// exact decodability, or the earlier of the r-th arrival and decodability.
enum class RuleKind { kAll, kFirstR, kDeadline, kDecodable, kFirstROrDecodable };

/// What a rule is, for callers that reason about it without running it (the delay-only fast
/// path, the theory module, the threaded backend's near-tie check, the default decoder).
struct StoppingShape {
  RuleKind kind = RuleKind::kAll;
  int r = 0;              ///< kFirstR, kFirstROrDecodable: the arrival count
  double deadline = 0.0;  ///< kDeadline: τ, seconds after the broadcast
};

/// The update disciplines of Dutta, Joshi, Ghosh, Dube and Nagpurkar ("Slow and stale gradients
/// can win the race", AISTATS 2018; docs/model.md §4 "Asynchronous updates") other than K-sync
/// (which is `first_r` with r = K under the cancel policy). The master updates after every K
/// gradients:
///   kKBatchSync   every worker computes at the current x, pushes and at once starts another
///                 gradient at the same x; at the update every computation is cancelled and
///                 every worker restarts at the new x (staleness 0);
///   kKAsync       a worker computes at the x it last received, pushes and waits; the update
///                 sends the new x to the K workers whose gradients it used (the others keep
///                 computing at their older x);
///   kKBatchAsync  a worker pushes, fetches the master's current x (after the update its push
///                 triggered, if any) and at once starts another gradient: never idle.
///
/// The time-optimal methods of the parallel-SGD literature run on the same loop (docs/model.md
/// §4 "Time-optimal methods"): after every arrival the worker is sent the master's current x
/// and starts again, unless a mode says otherwise:
///   kRennala      (Tyurin & Richtárik, NeurIPS 2023) update once B gradients computed at the
///                 current x are in (B may exceed n: fast workers contribute several); a
///                 gradient computed at an older x is discarded on arrival;
///   kMalenia      the same, updating once every worker has b_i ≥ 1 gradients at x and
///                 (1/n Σ_i 1/b_i)^{-1} ≥ S/n; the estimate averages each worker's mean;
///   kRingmaster   (Maranjyan, Tyurin & Richtárik, ICML 2025) asynchronous SGD (an update per
///                 gradient) that discards a gradient whose delay k − k' reaches R;
///   kMindFlayer   (Maranjyan, Shaikh Omar & Richtárik, UAI 2025) Rennala whose worker i
///                 abandons an attempt at its cut-off t_i and restarts with a fresh draw;
///   kRescaledAsync (Mahran, Maranjyan & Richtárik, arXiv 2605.13434) asynchronous SGD whose
///                 worker i steps by γ τ_i/τ_H (τ_i its mean compute time, τ_H their harmonic
///                 mean), so every worker contributes the same learning rate per unit of time.
/// With stop_stale (Rennala, Malenia, MindFlayer, Ringmaster) a busy worker abandons a
/// computation the master would discard and restarts at the current x: at every update for the
/// first three, once its delay reaches R for Ringmaster.
enum class UpdateMode {
  kKBatchSync,
  kKAsync,
  kKBatchAsync,
  kRennala,
  kMalenia,
  kRingmaster,
  kMindFlayer,
  kRescaledAsync
};

/// Which data a worker's computation reads: its own partition (the data-parallel layout, and
/// the heterogeneous-data setting of Malenia and Rescaled ASGD), or a partition drawn uniformly
/// at random per computation (the homogeneous setting of Rennala, Ringmaster and MindFlayer,
/// where every worker samples the same distribution).
enum class Sampling { kOwn, kShared };

/// How a stale gradient's step is scaled: constant (γ), or inverse (γ/(1 + τ), τ its staleness).
enum class StalenessStep { kConstant, kInverse };

/// What an update rule of the asynchronous loop is (UpdateRule).
struct UpdateShape {
  UpdateMode mode = UpdateMode::kKAsync;
  /// Gradients per update: K; Rennala's and MindFlayer's B; Malenia's S; 1 for Ringmaster and
  /// Rescaled ASGD.
  int k = 1;
  StalenessStep step = StalenessStep::kConstant;
  std::optional<std::uint64_t> max_delay;  ///< Ringmaster's R (nullopt: ∞)
  bool stop_stale = false;
  std::vector<double> cutoffs;  ///< MindFlayer's t_i, one per worker
  Sampling sampling = Sampling::kOwn;
  /// Whether gradients computed at an older x are discarded (the batch methods).
  [[nodiscard]] bool fresh_only() const {
    return mode == UpdateMode::kRennala || mode == UpdateMode::kMalenia ||
           mode == UpdateMode::kMindFlayer;
  }
};

class StoppingRule {
 public:
  virtual ~StoppingRule() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// The rule's shape; nullopt for a rule none of the shapes describes (callers then fall back
  /// to running it event by event, and the theory has no prediction for it).
  [[nodiscard]] virtual std::optional<StoppingShape> shape() const { return std::nullopt; }
  /// Set for the update rules of the asynchronous loop (UpdateRule): a run with one takes the
  /// asynchronous loop, not the synchronous engines.
  [[nodiscard]] virtual std::optional<UpdateShape> update_shape() const { return std::nullopt; }
  /// Seconds after the broadcast at which the master stops whatever has arrived; nullopt if none.
  [[nodiscard]] virtual std::optional<double> deadline() const { return std::nullopt; }
  /// Anytime minibatch (AnytimeStopping): every worker computes for at most this many seconds
  /// and sends the rows it finished; nullopt for every other rule (workers compute everything).
  [[nodiscard]] virtual std::optional<double> compute_window() const { return std::nullopt; }
  /// The adaptive deadline (AdaptiveDeadlineStopping): the engine keeps a DeadlineTracker built
  /// from these options and stops each iteration at its deadline; nullopt for every other rule.
  [[nodiscard]] virtual std::optional<AdaptiveDeadlineOptions> adaptive_deadline() const {
    return std::nullopt;
  }
  /// The adaptive r (AdaptiveRStopping): the engine keeps an ArrivalCountTracker built from
  /// these options and stops each iteration at its r-th arrival; nullopt for every other rule.
  [[nodiscard]] virtual std::optional<AdaptiveROptions> adaptive_r() const { return std::nullopt; }
  /// Multi-message (MultiMessageStopping, sim/multi_message.h): each worker's partitions in the
  /// order it computes and sends them, one message each; the engine then stops once every
  /// partition has arrived (or at the deadline). Null for every other rule (one message per
  /// worker).
  [[nodiscard]] virtual const std::vector<std::vector<int>>* partition_orders() const {
    return nullptr;
  }
  /// Called after each arrival with every worker heard so far, in arrival order.
  [[nodiscard]] virtual bool stop_after(std::span<const int> heard) const = 0;
  /// Smallest number of arrivals at which stop_after can be true (engines may skip the call
  /// before it; correctness does not depend on it).
  [[nodiscard]] virtual int minimum_arrivals() const { return 1; }
};

/// Waits for every worker. Illegal: workers < 1.
class AllStopping final : public StoppingRule {
 public:
  struct Options {
    int workers = 1;
    /// The first violated constraint: workers ≥ 1.
    [[nodiscard]] Validation validate() const;
  };
  explicit AllStopping(const Options& options)
      : workers_(options_check::require_valid(options).workers) {}
  /// Shorthand for AllStopping({.workers = workers}).
  explicit AllStopping(int workers) : AllStopping(Options{workers}) {}
  [[nodiscard]] std::string name() const override { return "all"; }
  [[nodiscard]] std::optional<StoppingShape> shape() const override {
    return StoppingShape{RuleKind::kAll};
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return workers_; }
  [[nodiscard]] int workers() const { return workers_; }

 private:
  int workers_;
};

/// Stops at the r-th arrival. Illegal: options that fail validate().
class FirstRStopping final : public StoppingRule {
 public:
  struct Options {
    int workers = 0;  ///< n; 0 when unknown (then only r ≥ 1 is checked)
    int r = 1;        ///< 1 ≤ r ≤ n
    /// The first violated constraint: 1 ≤ r ≤ n.
    [[nodiscard]] Validation validate() const;
  };
  explicit FirstRStopping(const Options& options) : r_(options_check::require_valid(options).r) {}
  /// Shorthand for FirstRStopping({.r = r}).
  explicit FirstRStopping(int r) : FirstRStopping(Options{0, r}) {}
  [[nodiscard]] std::string name() const override { return "first_r"; }
  [[nodiscard]] std::optional<StoppingShape> shape() const override {
    return StoppingShape{RuleKind::kFirstR, r_};
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return r_; }
  [[nodiscard]] int r() const { return r_; }

 private:
  int r_;
};

/// Stops `after` seconds past the broadcast, or earlier if every worker has arrived.
/// Illegal: options that fail validate().
class DeadlineStopping final : public StoppingRule {
 public:
  struct Options {
    int workers = 1;
    double after = 1.0;  ///< τ > 0, seconds after the broadcast
    /// The first violated constraint: workers ≥ 1, after > 0.
    [[nodiscard]] Validation validate() const;
  };
  explicit DeadlineStopping(const Options& options)
      : after_(options_check::require_valid(options).after), workers_(options.workers) {}
  /// Shorthand for DeadlineStopping({.workers = workers, .after = after}).
  DeadlineStopping(double after, int workers) : DeadlineStopping(Options{workers, after}) {}
  [[nodiscard]] std::string name() const override { return "deadline"; }
  [[nodiscard]] std::optional<StoppingShape> shape() const override {
    return StoppingShape{RuleKind::kDeadline, 0, after_};
  }
  [[nodiscard]] std::optional<double> deadline() const override { return after_; }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return workers_; }
  [[nodiscard]] double after() const { return after_; }

 private:
  double after_;
  int workers_;
};

/// Stops at the first moment the received set decodes exactly (residual and condition number
/// within codes::kExactTolerance and codes::kConditionLimit), or when every worker is in. A
/// linear-algebra code's decode is computed once per distinct heard set (codes::DecodeMemo, on
/// the set in ascending order): a simulation meets the same stopping sets again and again.
class DecodableStopping final : public StoppingRule {
 public:
  struct Options {
    std::shared_ptr<const codes::GradientCode> code = nullptr;
    /// The first violated constraint: a code.
    [[nodiscard]] Validation validate() const;
  };
  explicit DecodableStopping(const Options& options)
      : DecodableStopping(options_check::require_valid(options).code) {}
  explicit DecodableStopping(std::shared_ptr<const codes::GradientCode> code);
  [[nodiscard]] std::string name() const override { return "decodable"; }
  [[nodiscard]] std::optional<StoppingShape> shape() const override {
    return StoppingShape{RuleKind::kDecodable};
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return minimum_; }

 private:
  std::shared_ptr<const codes::GradientCode> code_;
  int minimum_;
  std::shared_ptr<const codes::DecodeMemo> memo_;  ///< null for combinatorial decoders
};

/// Whichever of the r-th arrival and exact decodability comes first (the reference ErasureHead
/// rule).
class FirstROrDecodableStopping final : public StoppingRule {
 public:
  struct Options {
    std::shared_ptr<const codes::GradientCode> code = nullptr;
    int r = 1;  ///< 1 ≤ r ≤ n of the code
    /// The first violated constraint: a code, 1 ≤ r ≤ n.
    [[nodiscard]] Validation validate() const;
  };
  explicit FirstROrDecodableStopping(const Options& options)
      : FirstROrDecodableStopping(options_check::require_valid(options).r, options.code) {}
  FirstROrDecodableStopping(int r, std::shared_ptr<const codes::GradientCode> code);
  [[nodiscard]] std::string name() const override { return "first_r_or_decodable"; }
  [[nodiscard]] std::optional<StoppingShape> shape() const override {
    return StoppingShape{RuleKind::kFirstROrDecodable, r_};
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override;
  [[nodiscard]] int r() const { return r_; }

 private:
  int r_;
  DecodableStopping decodable_;
};

/// Anytime minibatch (Ferdinand, Al-Lawati, Draper and Nokleby, ICLR 2019; docs/model.md §4
/// "Anytime minibatch"): a fixed compute window T per iteration. Worker i, whose drawn time for
/// its whole partition is X_i, works through its rows at a uniform pace and sends at min(T, X_i)
/// the c_i = |P_i| (X_i ≤ T) or ⌊|P_i|·T/X_i⌋ rows it finished; the master waits for every
/// message and weights the workers by their counts (SimulatedBackend). No shape: the synchronous
/// theory has no prediction for it. Illegal: options that fail validate().
class AnytimeStopping final : public StoppingRule {
 public:
  struct Options {
    int workers = 1;
    double window = 1.0;  ///< T > 0, compute seconds per iteration
    /// The first violated constraint: workers ≥ 1, window > 0.
    [[nodiscard]] Validation validate() const;
  };
  explicit AnytimeStopping(const Options& options)
      : window_(options_check::require_valid(options).window), workers_(options.workers) {}
  [[nodiscard]] std::string name() const override { return "anytime"; }
  [[nodiscard]] std::optional<double> compute_window() const override { return window_; }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return workers_; }
  [[nodiscard]] double window() const { return window_; }

 private:
  double window_;
  int workers_;
};

/// A deadline that follows the arrival times of the last w iterations (sim/adaptive_deadline.h,
/// docs/model.md §4 "Adaptive deadline"); stops at the deadline, or earlier once every worker is
/// in. No shape: its deadline changes with the run's history, which the theory does not model.
/// Illegal: options that fail validate().
class AdaptiveDeadlineStopping final : public StoppingRule {
 public:
  explicit AdaptiveDeadlineStopping(const AdaptiveDeadlineOptions& options)
      : options_(options_check::require_valid(options)) {}
  [[nodiscard]] std::string name() const override { return "adaptive_deadline"; }
  [[nodiscard]] std::optional<AdaptiveDeadlineOptions> adaptive_deadline() const override {
    return options_;
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return options_.workers; }

 private:
  AdaptiveDeadlineOptions options_;
};

/// The config name of a mode: k_batch_sync, k_async, k_batch_async.
[[nodiscard]] std::string update_mode_name(UpdateMode mode);

/// An update rule of the asynchronous loop (sim/asynchronous_cluster.h): not a rule the
/// synchronous engines can run (shape() is nullopt); plan_run routes a run with one to the
/// asynchronous loop. stop_after is true from the K-th gradient on. Illegal: options that fail
/// validate().
class UpdateRule final : public StoppingRule {
 public:
  struct Options {
    int workers = 0;  ///< n
    int k = 1;        ///< gradients per update, 1 ≤ K ≤ n (the batch methods: B ≥ 1, S ≥ 1)
    UpdateMode mode = UpdateMode::kKAsync;
    StalenessStep step = StalenessStep::kConstant;
    std::optional<std::uint64_t> max_delay;  ///< Ringmaster's R ≥ 1
    bool stop_stale = false;
    std::vector<double> cutoffs;  ///< MindFlayer: n cut-offs > 0
    Sampling sampling = Sampling::kOwn;
    /// The first violated constraint, at its config key: 1 ≤ K ≤ n ("k"); the batch methods'
    /// B or S ≥ 1 ("batch"); R ≥ 1 ("max_delay"); n cut-offs > 0 ("cutoffs").
    [[nodiscard]] Validation validate() const;
  };
  explicit UpdateRule(const Options& options) : options_(options_check::require_valid(options)) {}
  [[nodiscard]] std::string name() const override { return update_mode_name(options_.mode); }
  [[nodiscard]] std::optional<UpdateShape> update_shape() const override {
    return UpdateShape{options_.mode,
                       options_.k,
                       options_.step,
                       options_.max_delay,
                       options_.stop_stale,
                       options_.cutoffs,
                       options_.sampling};
  }
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return options_.k; }
  [[nodiscard]] int k() const { return options_.k; }
  [[nodiscard]] int workers() const { return options_.workers; }
  [[nodiscard]] UpdateMode mode() const { return options_.mode; }
  [[nodiscard]] StalenessStep staleness_step() const { return options_.step; }

 private:
  Options options_;
};

/// An r that follows the spread of the arrival times of the last w iterations (sim/adaptive_r.h,
/// docs/model.md §4 "Adaptive r"): each iteration stops at the tracker's r-th arrival. No shape:
/// its r changes with the run's history, which the theory does not model. Illegal: options that
/// fail validate().
class AdaptiveRStopping final : public StoppingRule {
 public:
  explicit AdaptiveRStopping(const AdaptiveROptions& options)
      : options_(options_check::require_valid(options)) {}
  [[nodiscard]] std::string name() const override { return "adaptive_r"; }
  [[nodiscard]] std::optional<AdaptiveROptions> adaptive_r() const override { return options_; }
  /// Without the engine's tracker (no history): the r_max-th arrival.
  [[nodiscard]] bool stop_after(std::span<const int> heard) const override;
  [[nodiscard]] int minimum_arrivals() const override { return options_.r_min; }

 private:
  AdaptiveROptions options_;
};

}  // namespace stragglersim::sim

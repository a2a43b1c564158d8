#pragma once
// `advise`'s tuning (docs/advise.md "Tuning"): every candidate ranked at its own best step and,
// where its rule has one, its best K or r (first_r, first_r_or_decodable, k_async) or deadline /
// window (deadline, anytime). Each point of a candidate's grid is estimated as `advise` estimates
// a candidate (the exact curve or simulated runs), on the tuning repetitions (delay seeds from
// kTuningStream); the point with the least time to target is chosen, and the candidate is then
// estimated afresh at that point on advise's own stream, so the reported time carries no
// selection bias. A run whose loss becomes non-finite counts as not reaching the target.

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "experiments/scheme_advice.h"

namespace stragglersim::experiments {

/// Multipliers of the config's step (1/β when "auto") every candidate is tried at.
inline constexpr std::array<double, 6> kStepMultipliers = {0.5, 1.0, 2.0, 3.0, 4.0, 6.0};
/// K and r are tried at ⌈f·n⌉ for these fractions f (distinct values within the rule's range).
inline constexpr std::array<double, 8> kCountFractions = {
    0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0};
/// A deadline or window τ is tried at these multiples of the candidate's own τ.
inline constexpr std::array<double, 5> kWindowMultipliers = {0.5, 0.75, 1.0, 1.5, 2.0};
/// The delay-seed stream of the tuning repetitions (distinct from kAdviceStream, on which the
/// chosen point is reported, and from --measure's).
inline constexpr std::uint64_t kTuningStream = 0x7e5e;

/// One parameter of a candidate's block that is tuned.
struct TunedParameter {
  std::string pointer;    ///< into the block, e.g. "/stopping/r"
  std::string label_key;  ///< its name in the label ("r", "K", "deadline", "window")
  std::vector<double> values;
  bool integer = true;
  /// The parameter's own range: a choice at an end of the grid that is a bound is not an edge.
  double lower_bound = 1.0;
  double upper_bound = 0.0;
};

/// The parameters of `c` that are tuned besides the step, for n = `workers`: r of first_r (not
/// BGC's) and first_r_or_decodable (1 ≤ r < n), K of k_async (1 ≤ K ≤ n), the deadline's `after`
/// and anytime's `window` (multiples of the candidate's own).
[[nodiscard]] std::vector<TunedParameter> tuned_parameters(const SchemeCandidate& c, int workers);

/// The size of `c`'s grid: the step multipliers times every tuned parameter's values.
[[nodiscard]] std::size_t grid_points(const SchemeCandidate& c, int workers);

/// One candidate per family: candidates that differ only in a tuned parameter (ignore-stragglers
/// at r = ¾ n and ½ n; ErasureHead at r = ¼, ½ and ¾ n) would tune over the same grid. The
/// member at ⌈n/2⌉ is kept (the anchor of the deadline candidates), else the first, in the place
/// of the family's first member.
[[nodiscard]] std::vector<SchemeCandidate> tuning_families(std::vector<SchemeCandidate> candidates,
                                                           int workers);

/// A tuned row's JSON "tuning": step, step_multiplier, parameters, grid, grid_points, at_edge,
/// tuning_time_to_target (null: no point reached the target).
[[nodiscard]] nlohmann::json tuning_json(const TuningChoice& t);

/// A tuned row's column: "step 2x = 0.0412, r=4" and ", edge: step, r" when a choice is at its
/// grid's edge ("no point reached" when none did).
[[nodiscard]] std::string tuning_summary(const TuningChoice& t);

/// The label with the tuned values the candidate was chosen at ("k-async K=3").
void relabel_tuned(SchemeCandidate& c);

/// Tunes candidates for one `advise` call, announces the cost first and reports progress
/// (AdviceOptions::note and progress).
class AdviceTuner {
 public:
  AdviceTuner(const Advice& advice,
              std::string file,
              std::filesystem::path base_dir,
              const AdviceOptions& options,
              int workers);

  /// Counts the grid points of `candidates` and `more` candidates to come (the deadline ones),
  /// times one simulated training run of the first candidate at the config's step (the probe)
  /// and calls options.note with the estimate of the whole work.
  void announce(const std::vector<SchemeCandidate>& candidates,
                const std::vector<SchemeCandidate>& more);

  /// One candidate per family (tuning_families), then announce() with the deadline candidates
  /// to come (deadline_candidates' for `aggregation`, a collective block or null, at a
  /// placeholder τ).
  void prepare(std::vector<SchemeCandidate>& candidates, const nlohmann::json& aggregation);

  /// Sets `c`'s block to its best grid point and `c.tuning` (the step's multiplier 1 and the
  /// listed parameters when no point reaches the target). `c` is estimated afresh by the caller.
  /// The points of one candidate are estimated in a fixed order, each pruned against the best
  /// of the points before it (docs/advise.md "Tuning"), so the choice and the work do not
  /// depend on what else runs. Thread-safe for distinct candidates, except uncoded: the others
  /// read its estimates (full_gradient_at), so it is tuned alone, before the candidates after it.
  void tune(SchemeCandidate& c);

  /// The uncoded candidate as tuned at `c`'s chosen step (its tuning-run estimate; null before
  /// uncoded is tuned, or when `c` is not tuned): whose iterations an exact linear-algebra decode
  /// under GD takes (estimate_candidate's `full`). Uncoded's iterates do not depend on the delays,
  /// so the tuning runs' estimate is the fresh runs' one.
  [[nodiscard]] const SchemeCandidate* full_gradient_at(const SchemeCandidate& c) const;

 private:
  /// One grid point done: AdviceOptions::progress, one call at a time.
  void count_point();

  const Advice& advice_;
  std::string file_;
  std::filesystem::path base_dir_;
  const AdviceOptions& options_;
  int workers_;
  /// Uncoded's estimate at each step multiplier (by index), once it is tuned.
  std::vector<std::optional<SchemeCandidate>> full_by_step_ =
      std::vector<std::optional<SchemeCandidate>>(kStepMultipliers.size());
  std::mutex progress_mutex_;  ///< guards done_ and the calls of AdviceOptions::progress
  std::size_t done_ = 0;
  std::size_t total_ = 0;
};

}  // namespace stragglersim::experiments

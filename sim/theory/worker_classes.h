#pragma once
// Workers with equal marginals (sim/theory/iteration_time_theory.h, PredictionOptions::
// merge_classes): found by lower bound, moments and the CDF at seven points, each class's CDF
// read once per point and each erasure integral computed once per distinct multiset of classes.
// Used by the theory of sim/theory/ only.

#include <cstddef>
#include <functional>
#include <vector>

#include "sim/delays/delay_model.h"
#include "sim/theory/stop_distribution.h"

namespace stragglersim::sim {

/// Beyond this many classes, or this many workers, workers are not merged into classes.
inline constexpr int kMaxClasses = 64;
inline constexpr int kMaxMergedWorkers = 1 << 16;

/// Whether workers i and j have the same delay distribution: by lower bound, moments and the CDF
/// at a few points (relative 1e-14).
[[nodiscard]] bool same_marginal(const DelayModel& delay, int i, int j);

/// Whether every worker has the same delay distribution (exactly, for the shifted exponential;
/// by same_marginal otherwise).
[[nodiscard]] bool identical_workers(const DelayModel& delay);

/// One class per worker.
[[nodiscard]] WorkerClasses singleton_classes(int n);

/// Workers merged by same_marginal against each class's first worker, in worker order
/// (singletons when `merge` is off, n > kMaxMergedWorkers or more than kMaxClasses classes).
[[nodiscard]] WorkerClasses worker_classes(const DelayModel& delay, bool merge);

/// The sorted classes of `members`.
[[nodiscard]] std::vector<int> class_multiset(const std::vector<int>& members,
                                              const WorkerClasses& classes);

/// How many distinct class multisets `sets` has (the erasure integrals computed).
[[nodiscard]] std::size_t distinct_class_sets(const std::vector<std::vector<int>>& sets,
                                              const WorkerClasses& classes);

/// The mean of integral(set) over `sets` of erased workers, computed once per distinct multiset
/// of classes (the integral depends on the erased workers only through their classes, the others
/// being the complement).
[[nodiscard]] double class_average(const std::vector<std::vector<int>>& sets,
                                   const WorkerClasses& classes,
                                   const std::function<double(const std::vector<int>&)>& integral);

}  // namespace stragglersim::sim

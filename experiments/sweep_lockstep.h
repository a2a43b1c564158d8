#pragma once
// Lock-step groups of a sweep (docs/sweeps.md "Lock-step groups"): the runs that share a data
// set, loss and partitioning advance together, one pass over the data for all of them
// (sim/lockstep_group.h). This file decides which runs may share their passes, forms the groups
// (bounded by --batch and by the memory limit) and describes them for the sweep's log.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/config/run_plan.h"
#include "sim/lockstep_group.h"

namespace stragglersim::experiments {

/// What the sweep needs to know of a run to group it.
struct LockstepInfo {
  /// Runs with equal non-empty keys share their objective and may share passes; empty: the run
  /// runs alone, for `alone`.
  std::string key;
  std::string alone;
  /// Memory a member holds besides the shared data sets (its partition gradients, the
  /// backend's buffers and the optimiser's vectors), and the data sets themselves, in bytes.
  double member_bytes = 0.0;
  double shared_bytes = 0.0;
};

/// The key under which runs share one objective (the data object, loss, data seed, partitions
/// and base folder): equal keys mean the same data set, loss and partitioning.
std::string objective_key(const RunPlan& plan, const std::filesystem::path& base_dir);

/// Whether and under which key `plan` may join a group.
LockstepInfo lockstep_info(const RunPlan& plan, const std::filesystem::path& base_dir);

/// Runs executed together: a group (several runs of one key) or one run alone.
struct SweepUnit {
  std::vector<std::size_t> runs;  ///< run indices, ascending
  bool group = false;
};

/// The units of the runs `todo` (ascending run indices; infos indexed by run index): the runs of
/// each key, in index order, in groups of at most `batch` runs and of at most as many as
/// `memory_limit` holds besides their shared data (at least 1); a key with one run, and every
/// run with an empty key, alone. batch ≤ 1: every run alone. Units are ordered by their first
/// run.
std::vector<SweepUnit> form_units(const std::vector<std::size_t>& todo,
                                  const std::vector<LockstepInfo>& infos,
                                  int batch,
                                  std::uint64_t memory_limit);

/// Runs per group that `memory_limit` holds for runs of `info`, at least 1.
std::size_t memory_capacity(const LockstepInfo& info, std::uint64_t memory_limit);

/// The log's lines for the grouping: one per group ("lock-step group 1 of 2: 60 runs (0 ... 69)
/// on covtype_like ...") and one per reason runs run alone, with their indices.
std::vector<std::string> describe_units(const std::vector<SweepUnit>& units,
                                        const std::vector<LockstepInfo>& infos,
                                        int batch,
                                        std::uint64_t memory_limit);

/// The log's line for a finished group: its passes against its longest run's.
std::string describe_group_passes(std::size_t number,
                                  std::size_t runs,
                                  const sim::LockstepGroup::Statistics& statistics,
                                  double train_bytes,
                                  double test_bytes);

}  // namespace stragglersim::experiments

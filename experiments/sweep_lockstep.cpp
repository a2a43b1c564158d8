#include "experiments/sweep_lockstep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "experiments/config/memory_budget.h"

namespace stragglersim::experiments {

namespace {

/// Doubles of p a member holds besides its partition gradients: the optimiser's iterate, query
/// point and momentum, the estimate, the full gradient and the backend's message buffers.
constexpr double kMemberVectors = 8.0;

/// "0 ... 4, 7, 9 ... 12": run indices, consecutive ones as ranges.
std::string index_ranges(const std::vector<std::size_t>& runs) {
  std::string out;
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i;
    while (j + 1 < runs.size() && runs[j + 1] == runs[j] + 1) {
      ++j;
    }
    out += (out.empty() ? "" : ", ") +
           (j == i ? fmt::format("{}", runs[i]) : fmt::format("{} ... {}", runs[i], runs[j]));
    i = j + 1;
  }
  return out;
}

/// Why `plan` cannot share its passes ("" when it can).
std::string alone_reason(const RunPlan& plan) {
  if (plan.delay_only()) {
    return "delay-only runs make no pass over data";
  }
  if (plan.backend.traits.real_time || !plan.backend.traits.shares_cores) {
    return fmt::format("the {} backend computes its gradients on real cores", plan.backend.name);
  }
  if (!plan.objective->loss().traits().scalar_margin) {
    return fmt::format("the {} model has no multi-vector pass", plan.objective->loss().name());
  }
  // Rows that hold fewer non-zeros per partition than there are features (the Amazon-like and
  // KC-housing-like data) leave most of each partition gradient zero: writing the p × k of
  // them is a run's pass, for each run alike, and a group was measured slower than one run at
  // a time there (docs/sweeps.md "Lock-step groups").
  const models::Dataset& data = plan.objective->data();
  const auto features = static_cast<std::int64_t>(data.dimension());
  if (data.is_sparse() && data.stored_entries() < features * plan.partitions) {
    return fmt::format(
        "its {} partitions hold {} non-zeros each on average, fewer than its {} features: "
        "its pass is mostly the partition gradients each run writes",
        plan.partitions,
        data.stored_entries() / plan.partitions,
        features);
  }
  return "";
}

}  // namespace

std::string objective_key(const RunPlan& plan, const std::filesystem::path& base_dir) {
  return nlohmann::json{plan.resolved.value("data", nlohmann::json()),
                        plan.resolved.value("loss", nlohmann::json()),
                        plan.data_seed,
                        plan.partitions,
                        base_dir.string()}
      .dump();
}

LockstepInfo lockstep_info(const RunPlan& plan, const std::filesystem::path& base_dir) {
  LockstepInfo info;
  info.alone = alone_reason(plan);
  if (!info.alone.empty()) {
    return info;
  }
  // Gradient descent evaluates at its iterate, the others also at a query point of their own:
  // their passes come in another rhythm, so they lock-step among themselves.
  const bool at_iterate = plan.make_optimizer()->queries_iterate();
  info.key = objective_key(plan, base_dir) + (at_iterate ? "|iterate" : "|query");
  const auto p = static_cast<double>(plan.objective->dimension());
  const auto k = static_cast<double>(plan.partitions);
  const double collective = plan.collective ? static_cast<double>(plan.workers) : 0.0;
  // An asynchronous member keeps the iterates its workers compute at (one per worker at most)
  // and an update's K messages.
  const double stale =
      plan.update ? static_cast<double>(plan.workers) + static_cast<double>(plan.update->k) : 0.0;
  // plan_run's estimates (the data sets, shared; the code, its decoder and the loop's partition
  // gradients, each run's own) and what they leave out: the backend's partition gradients (at
  // most k columns), a collective's buffers, an asynchronous loop's stale iterates and the
  // optimiser's and loop's vectors.
  info.shared_bytes = plan.data_memory;
  info.member_bytes = std::max(0.0, plan.memory - plan.data_memory) +
                      8.0 * p * (k + collective + stale + kMemberVectors);
  return info;
}

std::size_t memory_capacity(const LockstepInfo& info, std::uint64_t memory_limit) {
  const double free = static_cast<double>(memory_limit) - info.shared_bytes;
  if (info.member_bytes <= 0.0 || free <= info.member_bytes) {
    return 1;
  }
  return static_cast<std::size_t>(free / info.member_bytes);
}

std::vector<SweepUnit> form_units(const std::vector<std::size_t>& todo,
                                  const std::vector<LockstepInfo>& infos,
                                  int batch,
                                  std::uint64_t memory_limit) {
  // The runs of each key in index order, cut into groups as large as the batch and memory allow.
  std::map<std::string, std::vector<std::size_t>> by_key;
  std::vector<SweepUnit> units;
  for (const std::size_t run : todo) {
    const LockstepInfo& info = infos[run];
    if (batch <= 1 || info.key.empty()) {
      units.push_back({{run}, false});
    } else {
      by_key[info.key].push_back(run);
    }
  }
  for (const auto& [key, runs] : by_key) {
    const std::size_t size = std::min(static_cast<std::size_t>(batch),
                                      memory_capacity(infos[runs.front()], memory_limit));
    for (std::size_t first = 0; first < runs.size(); first += size) {
      SweepUnit unit;
      unit.runs.assign(
          runs.begin() + static_cast<std::ptrdiff_t>(first),
          runs.begin() + static_cast<std::ptrdiff_t>(std::min(runs.size(), first + size)));
      unit.group = unit.runs.size() > 1;
      units.push_back(std::move(unit));
    }
  }
  std::sort(units.begin(), units.end(), [](const SweepUnit& a, const SweepUnit& b) {
    return a.runs.front() < b.runs.front();
  });
  return units;
}

namespace {

/// Why a run with no alone-reason of its own runs alone: the batch, the memory limit, the cut of
/// its key's runs into groups, or no partner at all.
std::string alone_in_sweep(const LockstepInfo& info,
                           std::size_t runs_of_key,
                           int batch,
                           std::uint64_t memory_limit) {
  if (!info.alone.empty()) {
    return info.alone;
  }
  if (batch <= 1) {
    return "--no-batch";
  }
  const std::size_t capacity = memory_capacity(info, memory_limit);
  if (capacity <= 1 && runs_of_key > 1) {
    return fmt::format("--max-memory ({}) holds one run of {} beside its {} of data",
                       format_bytes(static_cast<double>(memory_limit)),
                       format_bytes(info.member_bytes),
                       format_bytes(info.shared_bytes));
  }
  if (runs_of_key > 1) {
    return fmt::format("left over when the {} runs of its data set were cut into groups of {}",
                       runs_of_key,
                       std::min(static_cast<std::size_t>(batch), capacity));
  }
  return "no other run shares its data set, loss and partitions";
}

}  // namespace

std::vector<std::string> describe_units(const std::vector<SweepUnit>& units,
                                        const std::vector<LockstepInfo>& infos,
                                        int batch,
                                        std::uint64_t memory_limit) {
  std::vector<std::string> lines;
  const auto groups = static_cast<std::size_t>(
      std::count_if(units.begin(), units.end(), [](const SweepUnit& u) { return u.group; }));
  std::size_t number = 0;
  std::map<std::string, std::vector<std::size_t>> alone;
  std::map<std::string, std::size_t> runs_of_key;
  for (const SweepUnit& unit : units) {
    for (const std::size_t run : unit.runs) {
      ++runs_of_key[infos[run].key];
    }
  }
  for (const SweepUnit& unit : units) {
    if (unit.group) {
      const LockstepInfo& info = infos[unit.runs.front()];
      const std::size_t capacity = memory_capacity(info, memory_limit);
      const std::string bound =
          capacity < static_cast<std::size_t>(batch)
              ? fmt::format("; at most {} runs fit in {} beside the data (--max-memory)",
                            capacity,
                            format_bytes(static_cast<double>(memory_limit)))
              : "";
      lines.push_back(
          fmt::format("lock-step group {} of {}: {} runs ({}), one pass over the data "
                      "for all of them; {} per run beside {} of data{}",
                      ++number,
                      groups,
                      unit.runs.size(),
                      index_ranges(unit.runs),
                      format_bytes(info.member_bytes),
                      format_bytes(info.shared_bytes),
                      bound));
      continue;
    }
    const std::size_t run = unit.runs.front();
    alone[alone_in_sweep(infos[run], runs_of_key[infos[run].key], batch, memory_limit)].push_back(
        run);
  }
  for (const auto& [reason, runs] : alone) {
    lines.push_back(
        fmt::format("alone: {} runs ({}): {}", runs.size(), index_ranges(runs), reason));
  }
  return lines;
}

std::string describe_group_passes(std::size_t number,
                                  std::size_t runs,
                                  const sim::LockstepGroup::Statistics& statistics,
                                  double train_bytes,
                                  double test_bytes) {
  const auto read = static_cast<double>(statistics.bytes);
  const auto longest = static_cast<double>(statistics.longest);
  // Each evaluation of a run alone is one pass over the training set and one over the test set.
  const double alone = longest * (train_bytes + (statistics.test_requests > 0 ? test_bytes : 0.0));
  const std::string stale =
      statistics.stale == 0
          ? ""
          : fmt::format(
                "; {} partition gradients at stale iterates with them, in {} walks of a partition",
                statistics.stale,
                statistics.stale_walks);
  return fmt::format(
      "lock-step group {}: {} runs in {} passes over the training set ({} evaluations, at most {} "
      "per pass) and {} over the test set{}; {} read, {:.2f}x its longest run's {} passes",
      number,
      runs,
      statistics.passes,
      statistics.requests,
      statistics.largest,
      statistics.test_passes,
      stale,
      format_bytes(read),
      alone > 0.0 ? read / alone : 0.0,
      statistics.longest);
}

}  // namespace stragglersim::experiments

#pragma once
// The what-if analysis of an op timeline (Lin et al., OSDI 2025, §3–§5; docs/whatif.md): the
// replayed step time with the measured durations over the one with ideal durations, the same
// ratio with only one op type, data-parallel rank or stage measured, the shares of the slowdown
// explained by the slowest ranks (M_W) and the last stage (M_S), and what four mitigations would
// recover on the same graph.
//
// Definitions (T̄(d) = mean over steps of the replayed step time with durations d, launch delays
// removed; d_meas the measured durations, d_ideal the ideal ones, d_X the ideal ones with the
// ops of X measured):
//   S = T̄(d_meas) / T̄(d_ideal)                                        (Eq. 1)
//   S_X = T̄(d_X) / T̄(d_ideal), X an op type, a dp rank or a stage      (Eq. 2, 4)
//   M = (T̄(d_meas) − T̄(d_meas with the ops of X ideal)) / (T̄(d_meas) − T̄(d_ideal))
//     M_W: X = the ⌈share · ranks⌉ ranks (dp, stage) of largest min(S_dp, S_stage) (Eq. 5)
//     M_S: X = the last stage (§5.2)
// An op's ideal duration is the mean (compute, optimizer, gc) or median (communication) over all
// ops of its type in the timeline; a collective's duration is its transfer time.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/replay/op_graph.h"

namespace stragglersim::replay {

enum class IdealStatistic { kMean, kMedian };

struct WhatIfOptions {
  IdealStatistic compute = IdealStatistic::kMean;          ///< forward/backward, optimizer, gc
  IdealStatistic communication = IdealStatistic::kMedian;  ///< send/recv and collectives
  double worker_share = 0.03;                              ///< M_W's share of ranks, in (0, 1]
  int backup_replicas = 1;  ///< (a): replicas the reduction goes without, 1..dp−1
  double deadline = 1.1;    ///< (b): compute deadline / ideal compute time, > 0
};

struct StepReport {
  std::int64_t step = 0;
  double recorded = 0.0;     ///< seconds, last end − first start in the file
  double with_launch = 0.0;  ///< replay of the measured durations and launch delays
  double replayed = 0.0;     ///< replay of the measured durations, launch delays removed
  double ideal = 0.0;
};

struct Mitigation {
  std::string name;
  double mean_step_time = 0.0;  ///< seconds
  double slowdown = 0.0;        ///< mean step time / ideal mean step time
  double recovered = 0.0;       ///< (S − slowdown) / (S − 1)
  std::string cost_name;
  double cost = 0.0;
};

struct WhatIfReport {
  double slowdown = 0.0;
  std::vector<std::pair<std::string, double>> by_op_type;  ///< sorted by name
  std::vector<double> by_dp_rank;
  std::vector<double> by_stage;
  std::vector<std::vector<double>> by_dp_rank_per_step;  ///< [step][dp]: the step's ratio
  double m_w = 0.0;
  double m_s = 0.0;
  std::vector<std::pair<int, int>> m_w_ranks;  ///< (dp, stage) of the ranks M_W replaced
  std::vector<StepReport> steps;
  std::vector<Mitigation> mitigations;
  std::vector<double> ideal_durations;  ///< per op
  OpGraph::Result ideal;                ///< the ideal replay
};

/// The ideal duration of every op (the statistic of its type's replayed durations).
std::vector<double> ideal_durations(const OpGraph& graph,
                                    const std::vector<double>& measured,
                                    const WhatIfOptions& options);

/// The analysis. Illegal: options out of range (checked by the caller).
WhatIfReport analyse_whatif(const OpGraph& graph, const WhatIfOptions& options);

/// The name of op v's type in S_t: sends and recvs fold into forward-pp-comm / backward-pp-comm.
std::string attribution_type(OpType type);

}  // namespace stragglersim::replay

#include "sim/replay/whatif_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <span>
#include <tuple>

namespace stragglersim::replay {

namespace {

bool is_communication(OpType t) {
  return !(t == OpType::kForwardCompute || t == OpType::kBackwardCompute ||
           t == OpType::kOptimizer || t == OpType::kGc);
}

bool is_compute(OpType t) { return t == OpType::kForwardCompute || t == OpType::kBackwardCompute; }

double statistic(std::vector<double> values, IdealStatistic s) {
  if (values.empty()) return 0.0;
  if (s == IdealStatistic::kMean) {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  }
  const std::size_t half = values.size() / 2;
  std::nth_element(
      values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half), values.end());
  const double upper = values[half];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half));
  return (lower + upper) / 2.0;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// The ideal durations with the ops that `keep` selects measured.
template <class Keep>
std::vector<double> mixed(const std::vector<double>& ideal,
                          const std::vector<double>& measured,
                          const std::vector<Op>& ops,
                          Keep keep) {
  std::vector<double> d = ideal;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    if (keep(ops[v])) d[v] = measured[v];
  }
  return d;
}

struct Context {
  const OpGraph& graph;
  const std::vector<double>& measured;
  const std::vector<double>& ideal;
  double t_meas;
  double t_ideal;
  [[nodiscard]] double ratio(const std::vector<double>& d) const {
    return mean(graph.replay(d).step_time) / t_ideal;
  }
  [[nodiscard]] Mitigation mitigation(std::string name,
                                      const OpGraph::Result& r,
                                      std::string cost_name,
                                      double cost) const {
    Mitigation m;
    m.name = std::move(name);
    m.mean_step_time = mean(r.step_time);
    m.slowdown = m.mean_step_time / t_ideal;
    const double s = t_meas / t_ideal;
    m.recovered = s > 1.0 ? (s - m.slowdown) / (s - 1.0) : 0.0;
    m.cost_name = std::move(cost_name);
    m.cost = cost;
    return m;
  }
};

/// (a) The reduction goes ahead without the k replicas that would finish last on their own.
Mitigation backup_replicas(const Context& c, int k) {
  const auto& layout = c.graph.timeline().layout;
  const auto dp = static_cast<std::size_t>(layout.dp_size);
  OpGraph::Options alone;
  alone.replica_local = true;
  const auto solo = c.graph.replay(c.measured, alone);
  std::vector<std::uint8_t> dropped(c.graph.steps() * dp, 0);
  for (std::size_t s = 0; s < c.graph.steps(); ++s) {
    std::vector<std::size_t> order(dp);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return solo.replica_end[s * dp + a] > solo.replica_end[s * dp + b];
    });
    for (int j = 0; j < k; ++j) dropped[s * dp + order[static_cast<std::size_t>(j)]] = 1;
  }
  OpGraph::Options options;
  options.dropped_replicas = dropped;
  return c.mitigation("backup_replicas",
                      c.graph.replay(c.measured, options),
                      "samples_dropped",
                      static_cast<double>(k) / static_cast<double>(dp));
}

/// (b) DropCompute: each replica's micro-batches whose last backward (stage 0) would end after
/// deadline × the ideal replay's time for it are skipped on every stage.
Mitigation drop_compute(const Context& c, double deadline) {
  const auto& ops = c.graph.timeline().ops;
  const auto measured_run = c.graph.replay(c.measured);
  const auto ideal_run = c.graph.replay(c.ideal);
  // Micro-batch k of a rank = its k-th forward and k-th backward in recorded order.
  std::vector<int> number(ops.size(), -1);
  std::map<std::tuple<std::int64_t, int, int, OpType>, int> counter;
  // (step, dp) → the ideal end of the last stage-0 backward; (step, dp, k) → measured end.
  std::map<std::pair<std::int64_t, int>, double> limit;
  std::map<std::tuple<std::int64_t, int, int>, double> finish;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    const Op& op = ops[v];
    if (!is_compute(op.type)) continue;
    number[v] = counter[{op.step, op.dp, op.stage, op.type}]++;
    if (op.stage == 0 && op.type == OpType::kBackwardCompute) {
      double& l = limit[{op.step, op.dp}];
      l = std::max(l, ideal_run.end[v]);
      finish[{op.step, op.dp, number[v]}] = measured_run.end[v];
    }
  }
  std::vector<double> d = c.measured;
  std::size_t dropped = 0;
  for (const auto& [key, end] : finish) {
    const auto& [step, dp, k] = key;
    if (end > deadline * limit[{step, dp}]) ++dropped;
  }
  for (std::size_t v = 0; v < ops.size(); ++v) {
    if (number[v] < 0) continue;
    const auto at = finish.find({ops[v].step, ops[v].dp, number[v]});
    if (at != finish.end() && at->second > deadline * limit[{ops[v].step, ops[v].dp}]) d[v] = 0.0;
  }
  return c.mitigation(
      "drop_compute",
      c.graph.replay(d),
      "micro_batches_dropped",
      finish.empty() ? 0.0 : static_cast<double>(dropped) / static_cast<double>(finish.size()));
}

/// (c) Layers moved so that every stage's mean compute per step is equal: stage s's compute
/// durations scaled by (mean over stages of C̄) / C̄_s.
Mitigation rebalance_stages(const Context& c) {
  const auto& t = c.graph.timeline();
  const auto pp = static_cast<std::size_t>(t.layout.pp_size);
  std::vector<double> total(pp, 0.0);
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    if (is_compute(t.ops[v].type)) total[static_cast<std::size_t>(t.ops[v].stage)] += c.measured[v];
  }
  const double target = mean(total);
  std::vector<double> d = c.measured;
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    const double own = total[static_cast<std::size_t>(t.ops[v].stage)];
    if (is_compute(t.ops[v].type) && own > 0.0) d[v] *= target / own;
  }
  double moved = 0.0;
  for (const double x : total) moved += std::max(0.0, x - target);
  const double all = std::accumulate(total.begin(), total.end(), 0.0);
  return c.mitigation(
      "rebalance_stages", c.graph.replay(d), "compute_moved", all > 0 ? moved / all : 0.0);
}

/// (d) A spare replica repeats the slowest replica's micro-batches; each of its computes takes
/// the smaller of its own time and the fastest replica's time for the same op.
Mitigation replicate_slowest(const Context& c, const std::vector<double>& by_dp) {
  const auto& t = c.graph.timeline();
  const auto slow = static_cast<int>(std::max_element(by_dp.begin(), by_dp.end()) - by_dp.begin());
  const auto fast = static_cast<int>(std::min_element(by_dp.begin(), by_dp.end()) - by_dp.begin());
  std::map<std::tuple<std::int64_t, int, OpType, int>, double> peer;
  std::map<std::tuple<std::int64_t, int, int, OpType>, int> counter;
  std::vector<int> number(t.ops.size(), -1);
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    const Op& op = t.ops[v];
    if (!is_compute(op.type)) continue;
    number[v] = counter[{op.step, op.dp, op.stage, op.type}]++;
    if (op.dp == fast) peer[{op.step, op.stage, op.type, number[v]}] = c.measured[v];
  }
  std::vector<double> d = c.measured;
  for (std::size_t v = 0; v < t.ops.size(); ++v) {
    if (number[v] < 0 || t.ops[v].dp != slow) continue;
    const auto at = peer.find({t.ops[v].step, t.ops[v].stage, t.ops[v].type, number[v]});
    if (at != peer.end()) d[v] = std::min(d[v], at->second);
  }
  return c.mitigation("replicate_slowest",
                      c.graph.replay(d),
                      "extra_replicas",
                      1.0 / static_cast<double>(t.layout.dp_size));
}

}  // namespace

std::string attribution_type(OpType type) {
  if (type == OpType::kForwardSend || type == OpType::kForwardRecv) return "forward-pp-comm";
  if (type == OpType::kBackwardSend || type == OpType::kBackwardRecv) return "backward-pp-comm";
  return std::string(op_type_name(type));
}

std::vector<double> ideal_durations(const OpGraph& graph,
                                    const std::vector<double>& measured,
                                    const WhatIfOptions& options) {
  const auto& ops = graph.timeline().ops;
  std::vector<std::vector<double>> by_type(kOpTypes);
  for (std::size_t v = 0; v < ops.size(); ++v) {
    by_type[static_cast<std::size_t>(ops[v].type)].push_back(measured[v]);
  }
  std::vector<double> value(kOpTypes);
  for (int k = 0; k < kOpTypes; ++k) {
    const auto type = static_cast<OpType>(k);
    value[static_cast<std::size_t>(k)] =
        statistic(by_type[static_cast<std::size_t>(k)],
                  is_communication(type) ? options.communication : options.compute);
  }
  std::vector<double> out(ops.size());
  for (std::size_t v = 0; v < ops.size(); ++v)
    out[v] = value[static_cast<std::size_t>(ops[v].type)];
  return out;
}

namespace {

/// S_t, S_w (overall and per step) and the per-stage slowdowns.
void attribute(const Context& c, WhatIfReport& out) {
  const auto& ops = c.graph.timeline().ops;
  const auto& layout = c.graph.timeline().layout;
  std::map<std::string, bool> names;
  for (const Op& op : ops) names[attribution_type(op.type)] = true;
  for (const auto& entry : names) {
    const std::string& name = entry.first;
    out.by_op_type.emplace_back(name, c.ratio(mixed(c.ideal, c.measured, ops, [&](const Op& op) {
      return attribution_type(op.type) == name;
    })));
  }
  const auto steps = c.graph.steps();
  out.by_dp_rank_per_step.assign(steps,
                                 std::vector<double>(static_cast<std::size_t>(layout.dp_size)));
  for (int r = 0; r < layout.dp_size; ++r) {
    const auto run =
        c.graph.replay(mixed(c.ideal, c.measured, ops, [&](const Op& op) { return op.dp == r; }));
    out.by_dp_rank.push_back(mean(run.step_time) / c.t_ideal);
    for (std::size_t s = 0; s < steps; ++s) {
      out.by_dp_rank_per_step[s][static_cast<std::size_t>(r)] =
          run.step_time[s] / out.ideal.step_time[s];
    }
  }
  for (int p = 0; p < layout.pp_size; ++p) {
    out.by_stage.push_back(
        c.ratio(mixed(c.ideal, c.measured, ops, [&](const Op& op) { return op.stage == p; })));
  }
}

/// M_W (the ⌈share · ranks⌉ ranks of largest min(S_dp, S_stage), ties to the lower (dp, stage))
/// and M_S (the last stage).
void explain(const Context& c, double share, WhatIfReport& out) {
  const auto& ops = c.graph.timeline().ops;
  const auto& layout = c.graph.timeline().layout;
  const auto explained = [&](auto selected) {
    const double removed =
        mean(c.graph.replay(mixed(c.measured, c.ideal, ops, selected)).step_time);
    return c.t_meas > c.t_ideal ? (c.t_meas - removed) / (c.t_meas - c.t_ideal) : 0.0;
  };
  std::vector<std::tuple<double, int, int>> scores;
  for (int r = 0; r < layout.dp_size; ++r) {
    for (int p = 0; p < layout.pp_size; ++p) {
      scores.emplace_back(std::min(out.by_dp_rank[static_cast<std::size_t>(r)],
                                   out.by_stage[static_cast<std::size_t>(p)]),
                          r,
                          p);
    }
  }
  std::stable_sort(scores.begin(), scores.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) > std::get<0>(b);
  });
  const auto n =
      static_cast<std::size_t>(std::ceil(static_cast<double>(scores.size()) * share - 1e-9));
  for (std::size_t k = 0; k < std::min(n, scores.size()); ++k) {
    out.m_w_ranks.emplace_back(std::get<1>(scores[k]), std::get<2>(scores[k]));
  }
  out.m_w = explained([&](const Op& op) {
    return std::find(out.m_w_ranks.begin(), out.m_w_ranks.end(), std::pair{op.dp, op.stage}) !=
           out.m_w_ranks.end();
  });
  out.m_s = explained([&](const Op& op) { return op.stage == layout.pp_size - 1; });
}

}  // namespace

WhatIfReport analyse_whatif(const OpGraph& graph, const WhatIfOptions& options) {
  const OpTimeline& t = graph.timeline();
  WhatIfReport out;
  const std::vector<double> measured = graph.recorded_durations();
  out.ideal_durations = ideal_durations(graph, measured, options);
  OpGraph::Options with_launch;
  const std::vector<double> launch = graph.launch_delays();
  with_launch.launch_delays = launch;
  const auto launched = graph.replay(measured, with_launch);
  const auto replayed = graph.replay(measured);
  out.ideal = graph.replay(out.ideal_durations);
  for (std::size_t s = 0; s < graph.steps(); ++s) {
    out.steps.push_back({t.steps[s],
                         graph.recorded_step_times()[s],
                         launched.step_time[s],
                         replayed.step_time[s],
                         out.ideal.step_time[s]});
  }
  const Context c{
      graph, measured, out.ideal_durations, mean(replayed.step_time), mean(out.ideal.step_time)};
  out.slowdown = c.t_meas / c.t_ideal;
  attribute(c, out);
  explain(c, options.worker_share, out);
  const int dp = t.layout.dp_size;
  if (dp > options.backup_replicas) {
    out.mitigations.push_back(backup_replicas(c, options.backup_replicas));
  }
  out.mitigations.push_back(drop_compute(c, options.deadline));
  out.mitigations.push_back(rebalance_stages(c));
  if (dp > 1) out.mitigations.push_back(replicate_slowest(c, out.by_dp_rank));
  return out;
}

}  // namespace stragglersim::replay

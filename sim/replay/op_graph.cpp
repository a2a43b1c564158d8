#include "sim/replay/op_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "fit/chrome_trace_json.h"
#include "models/base/invariant.h"

namespace stragglersim::replay {

namespace {

// Clock skew between ranks: a recv that starts this long after the last compute it could feed
// is an unlaunched (no-op) recv, as in the artifact (5·10⁻⁵ s).
constexpr double kMatchEps = 5e-5;

using Index = std::uint32_t;
using Ops = std::vector<Index>;

/// The ops of one rank by type, each list in recorded (start) order.
struct RankOps {
  std::array<Ops, kOpTypes> of;
  [[nodiscard]] const Ops& operator[](OpType t) const { return of[static_cast<std::size_t>(t)]; }
};

[[noreturn]] void fail_rank(const Op& op, const std::string& path, const std::string& message) {
  sim::fail_file(path,
                 fmt::format("step {}, dp {}, stage {}: {}", op.step, op.dp, op.stage, message));
}

}  // namespace

namespace {

void chain(std::vector<std::vector<Index>>& deps, const Ops& ops, const Ops& before = {}) {
  Ops last = before;
  for (const Index v : ops) {
    deps[v].insert(deps[v].end(), last.begin(), last.end());
    last = {v};
  }
}

}  // namespace

OpGraph::OpGraph(const OpTimeline& timeline) : timeline_(&timeline) {
  const auto& ops = timeline.ops;
  step_of_.resize(ops.size());
  step_start_.assign(timeline.steps.size(), std::numeric_limits<double>::infinity());
  std::vector<double> last_end(timeline.steps.size(), -std::numeric_limits<double>::infinity());
  std::size_t s = 0;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    while (timeline.steps[s] != ops[v].step) ++s;
    step_of_[v] = s;
    step_start_[s] = std::min(step_start_[s], ops[v].start);
    last_end[s] = std::max(last_end[s], ops[v].start + ops[v].duration);
  }
  recorded_.resize(step_start_.size());
  for (std::size_t k = 0; k < recorded_.size(); ++k) recorded_[k] = last_end[k] - step_start_[k];

  deps_build_.assign(ops.size(), {});
  group_of_.assign(ops.size(), -1);
  p2p_id_.assign(ops.size(), -1);
  const JobLayout& layout = timeline.layout;
  const bool use_dp = layout.dp_size * layout.dsp_size > 1;
  const bool overlap_dp = std::any_of(ops.begin(), ops.end(), [](const Op& op) {
    return op.type == OpType::kSeparateGradsAllReduce;
  });
  for (std::size_t begin = 0; begin < ops.size();) {
    std::size_t end = begin;
    while (end < ops.size() && ops[end].step == ops[begin].step && ops[end].dp == ops[begin].dp &&
           ops[end].stage == ops[begin].stage) {
      ++end;
    }
    add_rank_edges(begin, end, use_dp, overlap_dp);
    begin = end;
  }
  add_groups(use_dp);
  order_ops();
  deps_build_.clear();
  deps_build_.shrink_to_fit();
}

namespace {

/// Per send/recv type: the launched ones matched, in order, to the computes they feed or follow
/// (the artifact's get_peer_op_and_match_compute). Unlaunched ones: a recv that starts after the
/// last compute of its direction began, a send that ends before the first one ended (the
/// profiler records them though they never ran), and those whose peer chunk is outside the model.
struct P2pMatch {
  std::vector<std::int32_t>
      compute;  ///< per op of the type: index into the direction's computes, −1 unmatched
  std::vector<bool> no_op;
};

P2pMatch match_p2p(const std::vector<Op>& ops,
                   const Ops& comm,
                   const Ops& computes,
                   bool recv,
                   bool forward,
                   const JobLayout& layout,
                   const std::string& path) {
  P2pMatch m;
  m.compute.assign(comm.size(), -1);
  m.no_op.assign(comm.size(), true);
  if (computes.empty()) return m;
  double last_start = -std::numeric_limits<double>::infinity();
  double first_end = std::numeric_limits<double>::infinity();
  for (const Index c : computes) {
    last_start = std::max(last_start, ops[c].start);
    first_end = std::min(first_end, ops[c].start + ops[c].duration);
  }
  const auto launched = [&](Index v) {
    return recv ? ops[v].start <= last_start + kMatchEps
                : ops[v].start + ops[v].duration >= first_end - kMatchEps;
  };
  const auto count = static_cast<std::size_t>(std::count_if(comm.begin(), comm.end(), launched));
  std::size_t next = 0;
  const int stage = ops[computes.front()].stage;
  if (count != computes.size()) {
    if ((stage != 0 && stage != layout.pp_size - 1) ||
        (count != 0 && count + 1 != computes.size())) {
      fail_rank(ops[computes.front()],
                path,
                fmt::format("{} launched {} ops for {} computes (expected one per compute inside "
                            "the pipeline)",
                            count,
                            recv ? "recv" : "send",
                            computes.size()));
    }
    if (recv && count + 1 == computes.size()) next = 1;
  }
  const int chunks = layout.vpp_size * layout.pp_size;
  // Which way the peer is: forward send and backward recv talk to the next stage.
  const int delta = (forward != recv) ? 1 : -1;
  for (std::size_t k = 0; k < comm.size(); ++k) {
    if (!launched(comm[k]) || next >= computes.size()) continue;
    const Op& c = ops[computes[next]];
    const int peer_chunk = c.chunk * layout.pp_size + c.stage + delta;
    m.no_op[k] = peer_chunk < 0 || peer_chunk >= chunks;
    m.compute[k] = static_cast<std::int32_t>(next);
    ++next;
  }
  return m;
}

}  // namespace

void OpGraph::add_rank_edges(std::size_t begin, std::size_t end, bool use_dp, bool overlap_dp) {
  const auto& ops = timeline_->ops;
  const JobLayout& layout = timeline_->layout;
  auto& deps = deps_build_;
  RankOps r;
  for (std::size_t v = begin; v < end; ++v) {
    r.of[static_cast<std::size_t>(ops[v].type)].push_back(static_cast<Index>(v));
  }
  const auto by_start = [&](Index a, Index b) {
    return std::tie(ops[a].start, a) < std::tie(ops[b].start, b);
  };
  Ops compute = r[OpType::kForwardCompute];
  compute.insert(
      compute.end(), r[OpType::kBackwardCompute].begin(), r[OpType::kBackwardCompute].end());
  std::sort(compute.begin(), compute.end(), by_start);
  chain(deps, compute);
  for (const OpType t :
       {OpType::kForwardSend, OpType::kForwardRecv, OpType::kBackwardSend, OpType::kBackwardRecv}) {
    chain(deps, r[t]);
    const bool recv = t == OpType::kForwardRecv || t == OpType::kBackwardRecv;
    const bool forward = t == OpType::kForwardSend || t == OpType::kForwardRecv;
    const Ops& computes = r[forward ? OpType::kForwardCompute : OpType::kBackwardCompute];
    const P2pMatch m = match_p2p(ops, r[t], computes, recv, forward, layout, timeline_->path);
    std::int32_t id = 0;
    for (std::size_t k = 0; k < r[t].size(); ++k) {
      const Index v = r[t][k];
      if (!m.no_op[k]) p2p_id_[v] = id++;
      if (m.compute[k] < 0) continue;
      const auto c = static_cast<std::size_t>(m.compute[k]);
      if (recv) {
        // compute[i−1] → recv → compute[i]
        deps[computes[c]].push_back(v);
        if (c > 0) deps[v].push_back(computes[c - 1]);
      } else {
        deps[v].push_back(computes[c]);
      }
    }
  }
  // The first backward send/recv waits for the forward two computes before the first backward
  // (1F1B's warm-up ends there).
  const auto first_bwd = std::find_if(compute.begin(), compute.end(), [&](Index v) {
    return ops[v].type == OpType::kBackwardCompute;
  });
  const auto i = first_bwd - compute.begin();
  if (first_bwd != compute.end() && i >= 2 && ops[compute[i - 2]].type == OpType::kForwardCompute &&
      ops[compute[i - 1]].type == OpType::kForwardCompute) {
    for (const OpType t : {OpType::kBackwardRecv, OpType::kBackwardSend}) {
      if (!r[t].empty()) deps[r[t].front()].push_back(compute[i - 2]);
    }
  }
  Ops last_ops;
  Index last_compute = compute.empty() ? 0 : compute.front();
  for (const Index v : compute) {
    if (ops[v].start + ops[v].duration > ops[last_compute].start + ops[last_compute].duration) {
      last_compute = v;
    }
  }
  if (!compute.empty()) last_ops = {last_compute};
  if (use_dp) {
    Ops dp_comm = r[OpType::kParamsAllGather];
    dp_comm.insert(dp_comm.end(),
                   r[OpType::kGradsReduceScatter].begin(),
                   r[OpType::kGradsReduceScatter].end());
    std::sort(dp_comm.begin(), dp_comm.end(), by_start);
    chain(deps, dp_comm);
    // The last all-gather of each model chunk → the chunk's first forward.
    std::vector<bool> gathered(static_cast<std::size_t>(layout.vpp_size) + 1, false);
    const Ops& gathers = r[OpType::kParamsAllGather];
    for (auto g = gathers.rbegin(); g != gathers.rend(); ++g) {
      const auto chunk = static_cast<std::size_t>(std::min(ops[*g].chunk, layout.vpp_size));
      if (gathered[chunk]) continue;
      gathered[chunk] = true;
      for (const Index f : r[OpType::kForwardCompute]) {
        if (ops[f].chunk == ops[*g].chunk) {
          deps[f].push_back(*g);
          break;
        }
      }
    }
    if (overlap_dp) {
      // The first reduce-scatter of each chunk waits for the chunk's last backward.
      std::vector<bool> reduced(static_cast<std::size_t>(layout.vpp_size) + 1, false);
      for (const Index g : r[OpType::kGradsReduceScatter]) {
        const auto chunk = static_cast<std::size_t>(std::min(ops[g].chunk, layout.vpp_size));
        if (reduced[chunk]) continue;
        reduced[chunk] = true;
        Index last = g;
        for (const Index b : r[OpType::kBackwardCompute]) {
          if (ops[b].chunk == ops[g].chunk &&
              (last == g ||
               ops[b].start + ops[b].duration > ops[last].start + ops[last].duration)) {
            last = b;
          }
        }
        if (last != g) deps[g].push_back(last);
      }
    }
  }
  Ops post;
  const auto first_of = [&](OpType t) {
    if (!r[t].empty()) post.push_back(r[t].front());
  };
  if (!r[OpType::kGc].empty()) {
    deps[r[OpType::kGc].front()].insert(
        deps[r[OpType::kGc].front()].end(), last_ops.begin(), last_ops.end());
    last_ops = {r[OpType::kGc].front()};
  }
  first_of(OpType::kLayernormGradsAllReduce);
  const Op& any = ops[begin];
  if (any.stage == 0 || any.stage == layout.pp_size - 1) first_of(OpType::kEmbeddingGradsAllReduce);
  if (use_dp && overlap_dp) {
    if (!r[OpType::kGradsReduceScatter].empty())
      last_ops.push_back(r[OpType::kGradsReduceScatter].back());
    first_of(OpType::kSeparateGradsAllReduce);
  } else if (use_dp) {
    post.insert(
        post.end(), r[OpType::kGradsReduceScatter].begin(), r[OpType::kGradsReduceScatter].end());
  }
  first_of(OpType::kOptimizerClipMainGrad);
  first_of(OpType::kOptimizer);
  chain(deps, post, last_ops);
}

void OpGraph::add_groups(bool use_dp) {
  const auto& ops = timeline_->ops;
  const JobLayout& layout = timeline_->layout;
  // Keys: (kind, step, dp or −1, stage, number); kind 0 forward p2p, 1 backward p2p, 2 a
  // data-parallel collective (number: type · 2²⁰ + its order on the rank), 3 embedding, 4 clip.
  using Key = std::tuple<int, std::int64_t, int, int, std::int64_t>;
  std::map<Key, std::vector<Index>> keyed;
  std::map<std::tuple<std::int64_t, int, int, OpType>, std::int64_t> seen_on_rank;
  const auto wrap = [&](int stage) { return (stage + layout.pp_size) % layout.pp_size; };
  for (std::size_t v = 0; v < ops.size(); ++v) {
    const Op& op = ops[v];
    const auto n = seen_on_rank[{op.step, op.dp, op.stage, op.type}]++;
    const auto index = static_cast<Index>(v);
    switch (op.type) {
      case OpType::kForwardSend:
      case OpType::kForwardRecv:
      case OpType::kBackwardSend:
      case OpType::kBackwardRecv: {
        if (p2p_id_[v] < 0) {
          groups_.push_back({index});
          group_dp_synced_.push_back(0);
          break;
        }
        const bool forward = op.type == OpType::kForwardSend || op.type == OpType::kForwardRecv;
        const bool send = op.type == OpType::kForwardSend || op.type == OpType::kBackwardSend;
        const int sender = send ? op.stage : wrap(op.stage + (forward ? -1 : 1));
        keyed[{forward ? 0 : 1, op.step, op.dp, sender, p2p_id_[v]}].push_back(index);
        break;
      }
      case OpType::kParamsAllGather:
      case OpType::kGradsReduceScatter:
      case OpType::kSeparateGradsAllReduce:
        if (use_dp) {
          keyed[{2, op.step, -1, op.stage, static_cast<std::int64_t>(op.type) * (1 << 20) + n}]
              .push_back(index);
        }
        break;
      case OpType::kEmbeddingGradsAllReduce:
        if (n == 0) keyed[{3, op.step, op.dp, 0, 0}].push_back(index);
        break;
      case OpType::kOptimizerClipMainGrad:
        if (n == 0) keyed[{4, op.step, -1, 0, 0}].push_back(index);
        break;
      default:
        break;
    }
  }
  for (auto& [key, members] : keyed) {
    const int kind = std::get<0>(key);
    if (kind <= 1 && members.size() != 2) {
      const Op& op = ops[members.front()];
      fail_rank(op,
                timeline_->path,
                fmt::format("{} has no peer on the {} stage (expected each launched send paired "
                            "with a recv)",
                            op_type_name(op.type),
                            kind == 0 ? "next" : "previous"));
    }
    std::sort(members.begin(), members.end());
    groups_.push_back(std::move(members));
    group_dp_synced_.push_back(kind == 2 || kind == 4 ? 1 : 0);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (const Index v : groups_[g]) group_of_[v] = static_cast<std::int32_t>(g);
  }
}

void OpGraph::order_ops() {
  const std::size_t n = ops();
  dep_offset_.assign(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    dep_offset_[v + 1] = dep_offset_[v] + static_cast<Index>(deps_build_[v].size());
  }
  deps_.clear();
  deps_.reserve(dep_offset_[n]);
  std::vector<std::uint32_t> succ_offset(n + 1, 0);
  for (const auto& d : deps_build_) {
    deps_.insert(deps_.end(), d.begin(), d.end());
    for (const Index u : d) ++succ_offset[u + 1];
  }
  for (std::size_t v = 0; v < n; ++v) succ_offset[v + 1] += succ_offset[v];
  std::vector<Index> succ(deps_.size());
  {
    std::vector<std::uint32_t> fill(succ_offset.begin(), succ_offset.end() - 1);
    for (std::size_t v = 0; v < n; ++v) {
      for (const Index u : deps_build_[v]) succ[fill[u]++] = static_cast<Index>(v);
    }
  }
  std::vector<std::uint32_t> waiting(n);
  std::deque<Index> ready;
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = dep_offset_[v + 1] - dep_offset_[v];
    if (waiting[v] == 0) ready.push_back(static_cast<Index>(v));
  }
  std::vector<std::uint32_t> arrived(groups_.size(), 0);
  const auto release = [&](Index u) {
    for (std::uint32_t k = succ_offset[u]; k < succ_offset[u + 1]; ++k) {
      if (--waiting[succ[k]] == 0) ready.push_back(succ[k]);
    }
  };
  order_.clear();
  order_.reserve(n + groups_.size());
  while (!ready.empty()) {
    const Index v = ready.front();
    ready.pop_front();
    order_.push_back(v);
    const std::int32_t g = group_of_[v];
    if (g < 0) {
      release(v);
    } else if (++arrived[static_cast<std::size_t>(g)] ==
               groups_[static_cast<std::size_t>(g)].size()) {
      order_.push_back(-static_cast<std::int64_t>(g) - 1);
      for (const Index m : groups_[static_cast<std::size_t>(g)]) release(m);
    }
  }
  if (order_.size() != n + groups_.size()) {
    for (std::size_t v = 0; v < n; ++v) {
      if (waiting[v] > 0) {
        fail_rank(timeline_->ops[v],
                  timeline_->path,
                  fmt::format("the dependency graph has a cycle through {} (event {}) (expected "
                              "a schedule the 1F1B model can order)",
                              op_type_name(timeline_->ops[v].type),
                              timeline_->ops[v].event));
      }
    }
    STRAGGLERSIM_ASSERT(false, "a cycle without a waiting op");
  }
}

std::vector<double> OpGraph::recorded_durations() const {
  const auto& ops = timeline_->ops;
  std::vector<double> out(ops.size());
  for (std::size_t v = 0; v < ops.size(); ++v) out[v] = ops[v].duration;
  for (const auto& members : groups_) {
    double arrival = -std::numeric_limits<double>::infinity();
    for (const Index m : members) arrival = std::max(arrival, ops[m].start);
    for (const Index m : members) out[m] = std::max(0.0, ops[m].start + ops[m].duration - arrival);
  }
  return out;
}

std::vector<double> OpGraph::launch_delays() const {
  const auto& ops = timeline_->ops;
  std::vector<double> out(ops.size());
  for (std::size_t v = 0; v < ops.size(); ++v) {
    double ready = step_start_[step_of_[v]];
    for (std::uint32_t k = dep_offset_[v]; k < dep_offset_[v + 1]; ++k) {
      const Op& u = ops[deps_[k]];
      ready = std::max(ready, u.start + u.duration);
    }
    out[v] = std::max(0.0, ops[v].start - ready);
  }
  return out;
}

OpGraph::Result OpGraph::replay(std::span<const double> durations, const Options& options) const {
  const auto& ops = timeline_->ops;
  const int dp_size = timeline_->layout.dp_size;
  STRAGGLERSIM_ASSERT(durations.size() == ops.size(), "one duration per op");
  Result r;
  r.start.assign(ops.size(), 0.0);
  r.end.assign(ops.size(), 0.0);
  const auto replica = [&](Index v) {
    return step_of_[v] * static_cast<std::size_t>(dp_size) + static_cast<std::size_t>(ops[v].dp);
  };
  const auto dropped = [&](Index v) {
    return !options.dropped_replicas.empty() && options.dropped_replicas[replica(v)] != 0;
  };
  for (const std::int64_t item : order_) {
    if (item >= 0) {
      const auto v = static_cast<Index>(item);
      double start = 0.0;
      for (std::uint32_t k = dep_offset_[v]; k < dep_offset_[v + 1]; ++k) {
        start = std::max(start, r.end[deps_[k]]);
      }
      if (!options.launch_delays.empty()) start += options.launch_delays[v];
      r.start[v] = start;
      if (group_of_[v] < 0) r.end[v] = start + durations[v];
      continue;
    }
    const auto g = static_cast<std::size_t>(-item - 1);
    const auto& members = groups_[g];
    const bool synced = group_dp_synced_[g] != 0;
    double barrier = 0.0;
    bool any_active = false;
    for (const Index m : members) {
      if (!(synced && dropped(m))) {
        barrier = std::max(barrier, r.start[m]);
        any_active = true;
      }
    }
    for (const Index m : members) {
      double at = barrier;
      if (synced && (options.replica_local || dropped(m) || !any_active)) {
        // The replica's own members only (members are in dp order within a step).
        at = 0.0;
        for (const Index o : members) {
          if (ops[o].dp == ops[m].dp) at = std::max(at, r.start[o]);
        }
      }
      r.end[m] = at + durations[m];
    }
  }
  r.step_time.assign(step_start_.size(), 0.0);
  r.replica_end.assign(step_start_.size() * static_cast<std::size_t>(dp_size), 0.0);
  for (std::size_t v = 0; v < ops.size(); ++v) {
    if (ops[v].type != OpType::kOptimizer) continue;
    const auto k = static_cast<Index>(v);
    r.replica_end[replica(k)] = std::max(r.replica_end[replica(k)], r.end[v]);
    if (!dropped(k)) r.step_time[step_of_[v]] = std::max(r.step_time[step_of_[v]], r.end[v]);
  }
  return r;
}

}  // namespace stragglersim::replay

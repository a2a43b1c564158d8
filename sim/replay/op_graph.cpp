#include "sim/replay/op_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
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

/// Each op of `in_order` waits for the one before it, the first for `first_waits_for`.
void chain(std::vector<std::vector<Index>>& deps,
           const Ops& in_order,
           const Ops& first_waits_for = {}) {
  Ops last = first_waits_for;
  for (const Index v : in_order) {
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

namespace {

/// The in-rank edges of one (step, dp, stage) rank (the artifact's setup_pp_dependency).
class RankEdges {
 public:
  RankEdges(const std::vector<Op>& ops,
            const JobLayout& layout,
            const std::string& path,
            std::vector<std::vector<Index>>& deps,
            std::vector<std::int32_t>& p2p_id,
            std::size_t begin,
            std::size_t end)
      : ops_(ops), layout_(layout), path_(path), deps_(deps), p2p_id_(p2p_id), begin_(begin) {
    for (std::size_t v = begin; v < end; ++v) {
      r_.of[static_cast<std::size_t>(ops[v].type)].push_back(static_cast<Index>(v));
    }
    compute_ = r_[OpType::kForwardCompute];
    const Ops& backward = r_[OpType::kBackwardCompute];
    compute_.insert(compute_.end(), backward.begin(), backward.end());
    std::sort(compute_.begin(), compute_.end(), [&](Index a, Index b) { return earlier(a, b); });
  }

  void add(bool use_dp, bool overlap_dp) {
    chain(deps_, compute_);
    for (const OpType t : {OpType::kForwardSend,
                           OpType::kForwardRecv,
                           OpType::kBackwardSend,
                           OpType::kBackwardRecv}) {
      add_p2p(t);
    }
    add_first_backward();
    if (use_dp) add_data_parallel(overlap_dp);
    add_post_compute(use_dp, overlap_dp);
  }

 private:
  [[nodiscard]] bool earlier(Index a, Index b) const {
    return std::tie(ops_[a].start, a) < std::tie(ops_[b].start, b);
  }
  [[nodiscard]] double end_of(Index v) const { return ops_[v].start + ops_[v].duration; }

  /// A send/recv stream: its chain, its matched computes, its pairing numbers.
  void add_p2p(OpType t) {
    chain(deps_, r_[t]);
    const bool recv = t == OpType::kForwardRecv || t == OpType::kBackwardRecv;
    const bool forward = t == OpType::kForwardSend || t == OpType::kForwardRecv;
    const Ops& computes = r_[forward ? OpType::kForwardCompute : OpType::kBackwardCompute];
    const P2pMatch m = match_p2p(ops_, r_[t], computes, recv, forward, layout_, path_);
    std::int32_t id = 0;
    for (std::size_t k = 0; k < r_[t].size(); ++k) {
      const Index v = r_[t][k];
      if (!m.no_op[k]) p2p_id_[v] = id++;
      if (m.compute[k] < 0) continue;
      const auto c = static_cast<std::size_t>(m.compute[k]);
      if (recv) {
        // compute[i−1] → recv → compute[i]
        deps_[computes[c]].push_back(v);
        if (c > 0) deps_[v].push_back(computes[c - 1]);
      } else {
        deps_[v].push_back(computes[c]);
      }
    }
  }

  /// The first backward send/recv waits for the forward two computes before the first backward
  /// (1F1B's warm-up ends there).
  void add_first_backward() {
    const auto first = std::find_if(compute_.begin(), compute_.end(), [&](Index v) {
      return ops_[v].type == OpType::kBackwardCompute;
    });
    const auto i = static_cast<std::size_t>(first - compute_.begin());
    if (first == compute_.end() || i < 2 || ops_[compute_[i - 2]].type != OpType::kForwardCompute ||
        ops_[compute_[i - 1]].type != OpType::kForwardCompute) {
      return;
    }
    for (const OpType t : {OpType::kBackwardRecv, OpType::kBackwardSend}) {
      if (!r_[t].empty()) deps_[r_[t].front()].push_back(compute_[i - 2]);
    }
  }

  void add_data_parallel(bool overlap_dp) {
    Ops dp_comm = r_[OpType::kParamsAllGather];
    const Ops& reduce = r_[OpType::kGradsReduceScatter];
    dp_comm.insert(dp_comm.end(), reduce.begin(), reduce.end());
    std::sort(dp_comm.begin(), dp_comm.end(), [&](Index a, Index b) { return earlier(a, b); });
    chain(deps_, dp_comm);
    // The last all-gather of each model chunk → the chunk's first forward.
    std::set<int> gathered;
    const Ops& gathers = r_[OpType::kParamsAllGather];
    // Newest first, by index: clang 14's ranges reject reverse_view over libstdc++ 12's vector.
    for (std::size_t i = gathers.size(); i-- > 0;) {
      const Index g = gathers[i];
      if (!gathered.insert(ops_[g].chunk).second) continue;
      for (const Index f : r_[OpType::kForwardCompute]) {
        if (ops_[f].chunk == ops_[g].chunk) {
          deps_[f].push_back(g);
          break;
        }
      }
    }
    if (!overlap_dp) return;
    // Overlapped reduction: the first reduce-scatter of each chunk waits for its last backward.
    std::set<int> reduced;
    for (const Index g : reduce) {
      if (!reduced.insert(ops_[g].chunk).second) continue;
      std::optional<Index> last;
      for (const Index b : r_[OpType::kBackwardCompute]) {
        if (ops_[b].chunk == ops_[g].chunk && (!last || end_of(b) > end_of(*last))) last = b;
      }
      if (last) deps_[g].push_back(*last);
    }
  }

  /// last compute → gc → layernorm → embedding → reduce-scatters → clip → optimizer.
  void add_post_compute(bool use_dp, bool overlap_dp) {
    Ops last_ops;
    if (!compute_.empty()) {
      last_ops = {*std::max_element(compute_.begin(), compute_.end(), [&](Index a, Index b) {
        return end_of(a) < end_of(b);
      })};
    }
    if (const Ops& gc = r_[OpType::kGc]; !gc.empty()) {
      deps_[gc.front()].insert(deps_[gc.front()].end(), last_ops.begin(), last_ops.end());
      last_ops = {gc.front()};
    }
    Ops post;
    const auto first_of = [&](OpType t) {
      if (!r_[t].empty()) post.push_back(r_[t].front());
    };
    first_of(OpType::kLayernormGradsAllReduce);
    const int stage = ops_[begin_].stage;
    if (stage == 0 || stage == layout_.pp_size - 1) first_of(OpType::kEmbeddingGradsAllReduce);
    const Ops& reduce = r_[OpType::kGradsReduceScatter];
    if (use_dp && overlap_dp) {
      if (!reduce.empty()) last_ops.push_back(reduce.back());
      first_of(OpType::kSeparateGradsAllReduce);
    } else if (use_dp) {
      post.insert(post.end(), reduce.begin(), reduce.end());
    }
    first_of(OpType::kOptimizerClipMainGrad);
    first_of(OpType::kOptimizer);
    chain(deps_, post, last_ops);
  }

  const std::vector<Op>& ops_;
  const JobLayout& layout_;
  const std::string& path_;
  std::vector<std::vector<Index>>& deps_;
  std::vector<std::int32_t>& p2p_id_;
  std::size_t begin_;
  RankOps r_;
  Ops compute_;
};

}  // namespace

void OpGraph::add_rank_edges(std::size_t begin, std::size_t end, bool use_dp, bool overlap_dp) {
  RankEdges(timeline_->ops, timeline_->layout, timeline_->path, deps_build_, p2p_id_, begin, end)
      .add(use_dp, overlap_dp);
}

namespace {

// Group keys: (kind, step, dp or −1, stage, number); kind 0 forward p2p, 1 backward p2p, 2 a
// data-parallel collective (number: type · 2²⁰ + its order on the rank), 3 embedding, 4 clip,
// 5 an op that completes alone (number: its index).
using GroupKey = std::tuple<int, std::int64_t, int, int, std::int64_t>;
constexpr int kAlone = 5;

/// The collective group op v belongs to, or nothing for a plain op.
std::optional<GroupKey> group_key(const Op& op,
                                  std::size_t v,
                                  std::int64_t order_on_rank,
                                  std::int32_t p2p_id,
                                  const JobLayout& layout,
                                  bool use_dp) {
  const auto wrap = [&](int stage) { return (stage + layout.pp_size) % layout.pp_size; };
  if (is_pipeline_p2p(op.type)) {
    if (p2p_id < 0) return GroupKey{kAlone, op.step, op.dp, op.stage, static_cast<std::int64_t>(v)};
    const bool forward = op.type == OpType::kForwardSend || op.type == OpType::kForwardRecv;
    const bool send = op.type == OpType::kForwardSend || op.type == OpType::kBackwardSend;
    const int sender = send ? op.stage : wrap(op.stage + (forward ? -1 : 1));
    return GroupKey{forward ? 0 : 1, op.step, op.dp, sender, p2p_id};
  }
  switch (op.type) {
    case OpType::kParamsAllGather:
    case OpType::kGradsReduceScatter:
    case OpType::kSeparateGradsAllReduce:
      if (!use_dp) return std::nullopt;
      return GroupKey{
          2, op.step, -1, op.stage, static_cast<std::int64_t>(op.type) * (1 << 20) + order_on_rank};
    case OpType::kEmbeddingGradsAllReduce:
      if (order_on_rank > 0) return std::nullopt;
      return GroupKey{3, op.step, op.dp, 0, 0};
    case OpType::kOptimizerClipMainGrad:
      if (order_on_rank > 0) return std::nullopt;
      return GroupKey{4, op.step, -1, 0, 0};
    default:
      return std::nullopt;
  }
}

}  // namespace

void OpGraph::add_groups(bool use_dp) {
  const auto& ops = timeline_->ops;
  std::map<GroupKey, std::vector<Index>> keyed;
  std::map<std::tuple<std::int64_t, int, int, OpType>, std::int64_t> seen_on_rank;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    const Op& op = ops[v];
    const auto n = seen_on_rank[{op.step, op.dp, op.stage, op.type}]++;
    if (const auto key = group_key(op, v, n, p2p_id_[v], timeline_->layout, use_dp)) {
      keyed[*key].push_back(static_cast<Index>(v));
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
    groups_.push_back(std::move(members));
    group_dp_synced_.push_back(kind == 2 || kind == 4 ? 1 : 0);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (const Index v : groups_[g]) group_of_[v] = static_cast<std::int32_t>(g);
  }
}

namespace {

/// The successors of every op (CSR: offsets, then the successor lists).
std::pair<std::vector<std::uint32_t>, std::vector<Index>> successors(
    const std::vector<std::vector<Index>>& deps) {
  const std::size_t n = deps.size();
  std::vector<std::uint32_t> offset(n + 1, 0);
  for (const auto& d : deps) {
    for (const Index u : d) ++offset[u + 1];
  }
  for (std::size_t v = 0; v < n; ++v) offset[v + 1] += offset[v];
  std::vector<Index> succ(offset[n]);
  std::vector<std::uint32_t> fill(offset.begin(), offset.end() - 1);
  for (std::size_t v = 0; v < n; ++v) {
    for (const Index u : deps[v]) succ[fill[u]++] = static_cast<Index>(v);
  }
  return {std::move(offset), std::move(succ)};
}

}  // namespace

void OpGraph::order_ops() {
  const std::size_t n = ops();
  dep_offset_.assign(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    dep_offset_[v + 1] = dep_offset_[v] + static_cast<Index>(deps_build_[v].size());
  }
  deps_.clear();
  deps_.reserve(dep_offset_[n]);
  for (const auto& d : deps_build_) deps_.insert(deps_.end(), d.begin(), d.end());
  const auto csr = successors(deps_build_);
  const std::vector<std::uint32_t>& succ_offset = csr.first;
  const std::vector<Index>& succ = csr.second;
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

// Ring, double binary tree, halving–doubling, direct and hierarchical all-reduce schedules
// (docs/model.md §3 "Collectives").
#include <algorithm>
#include <numeric>

#include "models/base/invariant.h"
#include "sim/collectives/schedule_builders.h"

namespace stragglersim::sim::collectives::detail {

namespace {

int modulo(int a, int m) { return ((a % m) + m) % m; }

// The height of every node of `tree` (leaves 0) and its depth (root 0).
struct TreeLevels {
  std::vector<int> height;
  std::vector<int> depth;
};

TreeLevels levels_of(const std::vector<TreeNode>& tree) {
  const auto n = tree.size();
  TreeLevels levels{std::vector<int>(n, 0), std::vector<int>(n, 0)};
  // Depths by walking up; heights by pushing each node's height to its ancestors.
  for (std::size_t v = 0; v < n; ++v) {
    int steps = 0;
    for (int u = tree[v].parent; u >= 0; u = tree[static_cast<std::size_t>(u)].parent) {
      ++steps;
      auto& h = levels.height[static_cast<std::size_t>(u)];
      h = std::max(h, steps);
    }
    levels.depth[v] = steps;
  }
  return levels;
}

// One tree of the double binary tree on elements [begin, end): reduce rounds by height (a node
// sends its partial sum in the round of its height, after every child's), broadcast rounds by
// depth from round `down`.
void add_tree(Schedule& schedule,
              const std::vector<TreeNode>& tree,
              Eigen::Index begin,
              Eigen::Index end,
              int down) {
  if (begin == end) {
    return;
  }
  const TreeLevels levels = levels_of(tree);
  for (std::size_t v = 0; v < tree.size(); ++v) {
    const TreeNode& node = tree[v];
    const int rank = static_cast<int>(v);
    if (node.parent >= 0) {
      schedule.transfers.push_back(
          Transfer{levels.height[v], rank, node.parent, begin, end, true, false});
    }
    for (const int child :
         {std::min(node.child0, node.child1), std::max(node.child0, node.child1)}) {
      if (child >= 0) {
        schedule.transfers.push_back(
            Transfer{down + levels.depth[v], rank, child, begin, end, false, false});
      }
    }
  }
}

}  // namespace

void add_chunks(Schedule& schedule,
                int round,
                int source,
                int destination,
                Eigen::Index first,
                Eigen::Index last,
                Eigen::Index parts,
                bool reduce,
                bool intra) {
  const Eigen::Index begin = chunk_begin(first, parts, schedule.elements);
  const Eigen::Index end = chunk_begin(last, parts, schedule.elements);
  if (begin < end) {
    schedule.transfers.push_back(Transfer{round, source, destination, begin, end, reduce, intra});
  }
}

namespace {

/// m − 1 ring steps among `members` from `first_round`: in step s member i sends chunk
/// (i + offset − s) mod m of m to member i + 1, reducing into it when `reduce`.
int ring_pass(
    Schedule& schedule, const std::vector<int>& members, int first_round, int offset, bool reduce) {
  const int m = static_cast<int>(members.size());
  for (int s = 0; s + 1 < m; ++s) {
    for (int i = 0; i < m; ++i) {
      const int chunk = modulo(i - s + offset, m);
      add_chunks(schedule,
                 first_round + s,
                 members[static_cast<std::size_t>(i)],
                 members[static_cast<std::size_t>((i + 1) % m)],
                 chunk,
                 chunk + 1,
                 m,
                 reduce);
    }
  }
  return first_round + std::max(m - 1, 0);
}

}  // namespace

int ring_reduce_scatter(Schedule& schedule,
                        const std::vector<int>& members,
                        int first_round,
                        int shift) {
  return ring_pass(schedule, members, first_round, shift, true);
}

int ring_all_gather(Schedule& schedule, const std::vector<int>& members, int first_round) {
  return ring_pass(schedule, members, first_round, 1, false);
}

void build_ring(Schedule& schedule) {
  std::vector<int> members(static_cast<std::size_t>(schedule.ranks));
  std::iota(members.begin(), members.end(), 0);
  ring_all_gather(schedule, members, ring_reduce_scatter(schedule, members, 0, 0));
}

std::vector<TreeNode> nccl_binary_tree(int ranks) {
  std::vector<TreeNode> tree(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    int bit = 1;
    while (bit < ranks && (bit & rank) == 0) {
      bit <<= 1;
    }
    TreeNode& node = tree[static_cast<std::size_t>(rank)];
    if (rank == 0) {
      node.child1 = ranks > 1 ? bit >> 1 : -1;
      continue;
    }
    const int up = (rank ^ bit) | (bit << 1);
    node.parent = up < ranks ? up : (rank ^ bit);
    int low = bit >> 1;
    node.child0 = low == 0 ? -1 : rank - low;
    // The right child: the largest rank + low' in range, low' ≤ low a power of two.
    while (low > 0 && rank + low >= ranks) {
      low >>= 1;
    }
    node.child1 = low == 0 ? -1 : rank + low;
  }
  return tree;
}

std::vector<TreeNode> nccl_second_tree(int ranks) {
  const std::vector<TreeNode> first = nccl_binary_tree(ranks);
  const bool mirror = ranks % 2 == 0;
  // The rank of the second tree at the first tree's position p, and back.
  auto place = [&](int p) { return p < 0 ? -1 : (mirror ? ranks - 1 - p : (p + 1) % ranks); };
  std::vector<TreeNode> second(static_cast<std::size_t>(ranks));
  for (int p = 0; p < ranks; ++p) {
    const TreeNode& node = first[static_cast<std::size_t>(p)];
    second[static_cast<std::size_t>(place(p))] =
        TreeNode{place(node.parent), place(node.child0), place(node.child1)};
  }
  return second;
}

void build_tree(Schedule& schedule) {
  const int n = schedule.ranks;
  const std::vector<TreeNode> a = nccl_binary_tree(n);
  const std::vector<TreeNode> b = nccl_second_tree(n);
  // Both trees broadcast after the taller one's reduction (NCCL's two are equally tall).
  int height = 0;
  for (const auto* tree : {&a, &b}) {
    const std::vector<int> h = levels_of(*tree).height;
    height = std::max(height, h.empty() ? 0 : *std::max_element(h.begin(), h.end()));
  }
  const Eigen::Index half = schedule.elements / 2;
  add_tree(schedule, a, 0, half, height);
  add_tree(schedule, b, half, schedule.elements, height);
}

namespace {

// Recursive halving then doubling among `part` (2^levels ranks) from `round`: in halving step s
// participant v pairs with v XOR p/2^(s+1) and reduces into it the half of its chunk range on
// the partner's side of that bit, so that v ends with chunk v; doubling step s copies v's range
// to v XOR 2^s. Returns the next free round.
int halving_doubling_rounds(Schedule& schedule, const std::vector<int>& part, int round) {
  const int p = static_cast<int>(part.size());
  int levels = 0;
  while ((1 << levels) < p) {
    ++levels;
  }
  std::vector<int> lo(part.size(), 0);
  std::vector<int> hi(part.size(), p);
  const auto rank = [&](int v) { return part[static_cast<std::size_t>(v)]; };
  for (int s = 0; s < levels; ++s) {
    const int mask = p >> (s + 1);
    for (int v = 0; v < p; ++v) {
      const auto i = static_cast<std::size_t>(v);
      const int mid = (lo[i] + hi[i]) / 2;
      const bool upper = (v & mask) != 0;
      add_chunks(schedule,
                 round + s,
                 rank(v),
                 rank(v ^ mask),
                 upper ? lo[i] : mid,
                 upper ? mid : hi[i],
                 p,
                 true);
      (upper ? lo[i] : hi[i]) = mid;  // the send above read v's own range only
    }
  }
  round += levels;
  for (int s = 0; s < levels; ++s) {
    const int mask = 1 << s;
    for (int v = 0; v < p; ++v) {
      const auto i = static_cast<std::size_t>(v);
      add_chunks(schedule, round + s, rank(v), rank(v ^ mask), lo[i], hi[i], p, false);
    }
    for (int v = 0; v < p; ++v) {
      const auto i = static_cast<std::size_t>(v);
      ((v & mask) == 0 ? hi[i] : lo[i]) += (v & mask) == 0 ? mask : -mask;
    }
  }
  return round + levels;
}

}  // namespace

void build_halving_doubling(Schedule& schedule) {
  const int n = schedule.ranks;
  int p = 1;
  while (p * 2 <= n) {
    p *= 2;
  }
  const int extra = n - p;
  // Pre-step: rank 2i+1 (i < extra) hands its vector to rank 2i, which takes part for both;
  // post-step: rank 2i copies the result back.
  std::vector<int> part;
  for (int i = 0; i < n; ++i) {
    if (i >= 2 * extra || i % 2 == 0) {
      part.push_back(i);
    }
  }
  for (int i = 0; i < extra; ++i) {
    add_chunks(schedule, 0, 2 * i + 1, 2 * i, 0, 1, 1, true);
  }
  const int round = halving_doubling_rounds(schedule, part, extra > 0 ? 1 : 0);
  for (int i = 0; i < extra; ++i) {
    add_chunks(schedule, round, 2 * i, 2 * i + 1, 0, 1, 1, false);
  }
}

void build_direct(Schedule& schedule) {
  const int n = schedule.ranks;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      if (i != j) {
        add_chunks(schedule, 0, i, j, j, j + 1, n, true);
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      if (i != j) {
        add_chunks(schedule, 1, j, i, j, j + 1, n, false);
      }
    }
  }
}

void build_hierarchical(Schedule& schedule, int node_size) {
  const int n = schedule.ranks;
  const int g = node_size;
  std::vector<int> leaders;
  for (int leader = 0; leader < n; leader += g) {
    leaders.push_back(leader);
  }
  int round = 0;
  if (g > 1) {
    for (const int leader : leaders) {
      for (int member = leader + 1; member < leader + g; ++member) {
        add_chunks(schedule, 0, member, leader, 0, 1, 1, true, true);
      }
    }
    round = 1;
  }
  round = ring_all_gather(schedule, leaders, ring_reduce_scatter(schedule, leaders, round, 0));
  if (g > 1) {
    for (const int leader : leaders) {
      for (int member = leader + 1; member < leader + g; ++member) {
        add_chunks(schedule, round, leader, member, 0, 1, 1, false, true);
      }
    }
  }
}

}  // namespace stragglersim::sim::collectives::detail

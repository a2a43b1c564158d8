#pragma once
// The schedule builders behind build_schedule (sim/collectives/collective.h), one per kind, and
// the ring and chunk helpers they share. Each appends its transfers in round order, and within a
// round in the order reductions into one receiver are applied.

#include <Eigen/Core>
#include <vector>

#include "sim/collectives/collective.h"

namespace stragglersim::sim::collectives::detail {

/// The first element of chunk c of `parts`: ⌊c·elements/parts⌋.
[[nodiscard]] inline Eigen::Index chunk_begin(Eigen::Index c,
                                              Eigen::Index parts,
                                              Eigen::Index elements) {
  return c * elements / parts;
}

/// Appends a transfer of chunks [first, last) of `parts` (empty ones are left out).
void add_chunks(Schedule& schedule,
                int round,
                int source,
                int destination,
                Eigen::Index first,
                Eigen::Index last,
                Eigen::Index parts,
                bool reduce,
                bool intra = false);

/// Ring reduce-scatter among `members` (in ring order) from round `first_round`, with
/// members.size() chunks: in round first_round + s member i reduces chunk (i − s + shift) mod m
/// into member i + 1. Afterwards member i holds chunk (i + 1 + shift) mod m reduced. Returns the
/// next free round.
int ring_reduce_scatter(Schedule& schedule,
                        const std::vector<int>& members,
                        int first_round,
                        int shift);

/// The ring all-gather after ring_reduce_scatter(…, shift = 0): in round first_round + s member i
/// copies chunk (i + 1 − s) mod m to member i + 1. Returns the next free round.
int ring_all_gather(Schedule& schedule, const std::vector<int>& members, int first_round);

void build_ring(Schedule& schedule);
void build_tree(Schedule& schedule);
void build_halving_doubling(Schedule& schedule);
void build_direct(Schedule& schedule);
void build_hierarchical(Schedule& schedule, int node_size);
void build_stragglar(Schedule& schedule, int straggler);

/// NCCL's binary tree over ranks 0 … n−1 (ncclGetBtree): rank 0 is the root with one child, odd
/// ranks are leaves. parent −1 for the root, children −1 where absent.
struct TreeNode {
  int parent = -1;
  int child0 = -1;
  int child1 = -1;
};
[[nodiscard]] std::vector<TreeNode> nccl_binary_tree(int ranks);
/// The second tree of NCCL's double binary tree: the first mirrored (rank r ↦ n − 1 − r) for
/// even n, shifted by one rank (r ↦ r + 1 mod n) for odd n.
[[nodiscard]] std::vector<TreeNode> nccl_second_tree(int ranks);

}  // namespace stragglersim::sim::collectives::detail

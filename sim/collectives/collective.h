#pragma once
// Collectives (docs/model.md §3 "Collectives"): the all-reduce algorithms by which data-parallel
// ranks synchronise, as explicit schedules of transfers that one description serves three ways:
//   timing    every rank's completion time from every rank's ready time (its compute end), on
//             the α–β model below, so one late rank's delay propagates exactly as the
//             algorithm's dependencies say;
//   data      the reduction itself, executed on one buffer per rank in the schedule's order, so
//             the simulated backend and the real ones (threads, MPI) that execute the same
//             transfers return the same bytes;
//   theory    the max-plus offsets: the last completion is max_j (ready_j + w_j) exactly.
//
// The α–β model (a documented choice): every rank has one full-duplex port. A schedule is a
// sequence of rounds; in a round a rank sends and/or receives some transfers. Rank i's part in
// round k starts once i has finished its previous round (or is ready, for its first) and every
// rank sending to i in round k has finished its own round before k (the data it sends exists);
// its port works for α_link + max(bytes sent, bytes received by i in round k)/B_link, and the
// part ends then or, if later, when the port of a rank sending to i ends its own part of round
// k (a sender's messages share its port and all arrive at its end: a leader sending g − 1
// copies delivers the last after (g − 1)·S/B). With transfers on both link classes in one part,
// α is the larger latency and each direction sums its transfers' bytes/B. A rank's completion is
// the end of its last round in which it receives (it then holds the whole result); rounds in
// which it only sends still occupy its port. Rounds are a total order of the transfers, not a
// barrier: ranks not in a round do not wait for it, and a sender does not wait for its receiver
// (eager sends).
//
// The data: transfer t of round k carries elements [begin, end) of its sender's buffer as it was
// after the rounds before k; the receiver adds them into (reduce) or copies them over (copy) the
// same elements of its own buffer. Several transfers reducing into one receiver in one round are
// added in the order of the schedule's list. IEEE addition is commutative, so the bytes depend
// only on these orders, which the schedule fixes: the same for every backend, thread count and
// timing.

#include <Eigen/Core>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/options_check.h"

namespace stragglersim::sim::collectives {

enum class CollectiveKind {
  kRing,             ///< reduce-scatter then all-gather around a ring: 2(n−1) rounds of S/n
  kTree,             ///< NCCL's double binary tree: two trees, each reducing and broadcasting S/2,
                     ///< unpipelined (one message per tree edge and direction)
  kHalvingDoubling,  ///< recursive halving then doubling (Rabenseifner), any n
  kDirect,           ///< each rank sends its shard to its owner, owners send the sums to all
  kHierarchical,     ///< nodes of g: intra-node reduce, ring among node leaders, intra broadcast
  kStragglar,        ///< StragglAR (Devraj et al. 2025): ring reduce-scatter among the n−1 ready
                     ///< ranks, then R rounds of S/(n−1) with the persistent straggler
};

/// The accepted kind names, in the table's order ("ring", "tree", ...).
[[nodiscard]] std::span<const std::string_view> kind_names();
[[nodiscard]] std::string_view kind_name(CollectiveKind kind);

/// One class of links: latency α (s) and bandwidth B (bytes/s).
struct LinkCost {
  double latency = 0.0;
  double bandwidth = std::numeric_limits<double>::infinity();
};

struct CollectiveOptions {
  CollectiveKind kind = CollectiveKind::kRing;
  LinkCost link;       ///< every link; for hierarchical, the links between nodes
  LinkCost intra;      ///< hierarchical: the links within a node
  int node_size = 1;   ///< hierarchical: g, ranks per node (divides n)
  int straggler = -1;  ///< stragglar: the persistent straggler's rank (required)
  /// The first violated constraint for `ranks` ranks, named by config key: ranks ≥ 1
  /// ("workers"), latency ≥ 0 and bandwidth > 0 ("latency", "bandwidth", "intra_latency",
  /// "intra_bandwidth"), node_size ≥ 1 dividing ranks (hierarchical), straggler in [0, ranks)
  /// (stragglar: "missing" while −1) and ranks ≥ 2 (stragglar; "workers").
  [[nodiscard]] Validation validate(int ranks) const;
};

/// One message of a schedule (see above). `intra`: it travels on a link within a node
/// (hierarchical's `intra` cost); otherwise on `link`.
struct Transfer {
  int round = 0;
  int source = 0;
  int destination = 0;
  Eigen::Index begin = 0;
  Eigen::Index end = 0;
  bool reduce = true;
  bool intra = false;
};

struct Schedule {
  int ranks = 0;
  Eigen::Index elements = 0;  ///< the length of the reduced vector
  int rounds = 0;
  /// Sorted by round; within a round, in the order reductions into one receiver are applied.
  std::vector<Transfer> transfers;
};

/// The schedule of `options.kind` over `ranks` ranks and a vector of `elements` entries (chunk
/// boundaries ⌊c·elements/parts⌋). Illegal: options failing validate(ranks), elements < 1.
[[nodiscard]] Schedule build_schedule(const CollectiveOptions& options,
                                      int ranks,
                                      Eigen::Index elements);

/// Every rank's completion time (the α–β model above) from its ready time; a transfer of e
/// elements carries e·bytes_per_element bytes. Illegal: spans not of `schedule.ranks` entries.
void complete_times(const Schedule& schedule,
                    const CollectiveOptions& options,
                    double bytes_per_element,
                    std::span<const double> ready,
                    std::span<double> completion);

/// The max-plus offsets w_j: max_i completion_i = max_j (ready_j + w_j) for every ready vector
/// (the recursion is a max of sums, so this is exact).
[[nodiscard]] std::vector<double> completion_offsets(const Schedule& schedule,
                                                     const CollectiveOptions& options,
                                                     double bytes_per_element);

/// Executes the schedule's data movement: column i of `buffers` (elements × ranks) is rank i's
/// contribution before, and the reduced vector after (every column the same bytes).
void execute(const Schedule& schedule, Eigen::MatrixXd& buffers);

}  // namespace stragglersim::sim::collectives

#pragma once
// One rank's part of a collective's schedule (sim/collectives/collective.h), as the real backends
// run it (docs/backends.md "Collectives"): each rank walks the rounds it takes part in, in
// increasing order, and in each round first sends every transfer it is the source of (the
// elements of its buffer as they are after its earlier rounds: a snapshot, taken before this
// round's receipts are applied), then waits for every transfer it is the destination of and
// applies them in the schedule's list order: reduce adds the payload into its elements, copy
// overwrites them. Every transfer has one sender and one receiver, and a round-k payload exists
// once its sender finished its rounds before k, so the ranks need no barrier and the bytes are
// collectives::execute's (the same element-wise additions in the same order), whatever the
// interleaving of the ranks.

#include <Eigen/Core>
#include <cstddef>
#include <span>
#include <vector>

#include "sim/collectives/collective.h"

namespace stragglersim::sim {

/// One round of one rank: the transfers it sends and receives there (indices into
/// Schedule::transfers, in list order).
struct RankStep {
  int round = 0;
  std::vector<std::size_t> sends;
  std::vector<std::size_t> receives;
};

/// The steps of `rank` in `schedule`, rounds ascending, only the rounds it takes part in.
/// Illegal: a rank outside [0, schedule.ranks).
[[nodiscard]] std::vector<RankStep> rank_program(const collectives::Schedule& schedule, int rank);

/// A rank's contribution to the collective: v = a·y, its decode weight times its coded message
/// added to zero (the term combine_messages adds), or zero (`dimension` entries) when a = 0 (not
/// heard).
[[nodiscard]] Eigen::VectorXd contribution(double weight,
                                           const Eigen::Ref<const Eigen::VectorXd>& message,
                                           Eigen::Index dimension);

/// How a rank's payloads reach the others (threads: shared-memory slots; MPI: point-to-point).
class TransferChannel {
 public:
  virtual ~TransferChannel() = default;
  /// Hands transfer `index`'s payload (its elements of the sender's buffer) to its destination;
  /// the channel copies it before returning.
  virtual void send(std::size_t index, std::span<const double> payload) = 0;
  /// Waits for transfer `index`'s payload and copies it into `payload` (its length); false when
  /// the run stops while waiting (the collective is abandoned).
  virtual bool receive(std::size_t index, std::span<double> payload) = 0;
};

/// Runs one step (above) on `buffer` (the rank's vector, schedule.elements entries); `scratch`
/// holds a payload between receipt and application. False when a receive was abandoned.
bool run_step(const collectives::Schedule& schedule,
              const RankStep& step,
              Eigen::VectorXd& buffer,
              TransferChannel& channel,
              std::vector<double>& scratch);

/// Runs every step of `program` in order; false when abandoned.
bool run_program(const collectives::Schedule& schedule,
                 std::span<const RankStep> program,
                 Eigen::VectorXd& buffer,
                 TransferChannel& channel,
                 std::vector<double>& scratch);

}  // namespace stragglersim::sim

#include "sim/backends/collective_program.h"

#include "models/base/invariant.h"

namespace stragglersim::sim {

std::vector<RankStep> rank_program(const collectives::Schedule& schedule, int rank) {
  STRAGGLERSIM_ASSERT(rank >= 0 && rank < schedule.ranks, "a rank of the schedule");
  std::vector<RankStep> program;
  for (std::size_t t = 0; t < schedule.transfers.size(); ++t) {
    const collectives::Transfer& transfer = schedule.transfers[t];
    if (transfer.source != rank && transfer.destination != rank) {
      continue;
    }
    if (program.empty() || program.back().round != transfer.round) {
      STRAGGLERSIM_ASSERT(program.empty() || program.back().round < transfer.round,
                          "a schedule's transfers are sorted by round");
      program.push_back(RankStep{transfer.round, {}, {}});
    }
    // A transfer from a rank to itself (none of the built schedules has one) is both: its
    // payload is the snapshot taken with the round's other sends.
    if (transfer.source == rank) {
      program.back().sends.push_back(t);
    }
    if (transfer.destination == rank) {
      program.back().receives.push_back(t);
    }
  }
  return program;
}

Eigen::VectorXd contribution(double weight,
                             const Eigen::Ref<const Eigen::VectorXd>& message,
                             Eigen::Index dimension) {
  if (weight == 0.0) {
    return Eigen::VectorXd::Zero(dimension);
  }
  STRAGGLERSIM_ASSERT(message.size() == dimension, "a heard worker's message");
  // Added to zero, as combine_messages adds a message (a product −0 becomes +0).
  Eigen::VectorXd v = Eigen::VectorXd::Zero(dimension);
  v.noalias() += weight * message;
  return v;
}

bool run_step(const collectives::Schedule& schedule,
              const RankStep& step,
              Eigen::VectorXd& buffer,
              TransferChannel& channel,
              std::vector<double>& scratch) {
  // Every send of the round before any receipt is applied: the payloads are the buffer as it
  // was after the earlier rounds, as collectives::execute defines them.
  for (const std::size_t t : step.sends) {
    const collectives::Transfer& transfer = schedule.transfers[t];
    channel.send(t,
                 std::span<const double>(buffer.data() + transfer.begin,
                                         static_cast<std::size_t>(transfer.end - transfer.begin)));
  }
  for (const std::size_t t : step.receives) {
    const collectives::Transfer& transfer = schedule.transfers[t];
    const Eigen::Index length = transfer.end - transfer.begin;
    scratch.resize(static_cast<std::size_t>(length));
    if (!channel.receive(t, scratch)) {
      return false;
    }
    const Eigen::Map<const Eigen::VectorXd> payload(scratch.data(), length);
    if (transfer.reduce) {
      buffer.segment(transfer.begin, length) += payload;
    } else {
      buffer.segment(transfer.begin, length) = payload;
    }
  }
  return true;
}

bool run_program(const collectives::Schedule& schedule,
                 std::span<const RankStep> program,
                 Eigen::VectorXd& buffer,
                 TransferChannel& channel,
                 std::vector<double>& scratch) {
  STRAGGLERSIM_ASSERT(buffer.size() == schedule.elements, "a buffer of the schedule's length");
  for (const RankStep& step : program) {
    if (!run_step(schedule, step, buffer, channel, scratch)) {
      return false;
    }
  }
  return true;
}

}  // namespace stragglersim::sim

// The rank programs the real backends run (collective_program.h) against the schedule engine's
// reference data semantics, collectives::execute, for every kind and every rank count 1..9: each
// transfer is in exactly one step of its sender and one of its receiver, rounds ascending, and
// the buffers after the programs are execute's to the last bit, whether the ranks run round by
// round in a shuffled order (one thread) or concurrently on their own threads through a mailbox
// channel (whatever the interleaving).

#include "sim/backends/collective_program.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

namespace stragglersim::sim {
namespace {

using collectives::CollectiveKind;
using collectives::CollectiveOptions;
using collectives::Schedule;

/// The options of `kind` for n ranks (hierarchical: nodes of 2 when n is even, else 1;
/// stragglar: the last rank straggles), or nullopt when the kind has no schedule for n.
std::optional<CollectiveOptions> program_options_for(CollectiveKind kind, int n) {
  CollectiveOptions o;
  o.kind = kind;
  o.link.latency = 1e-3;
  o.link.bandwidth = 1e9;
  o.intra = o.link;
  o.node_size = kind == CollectiveKind::kHierarchical && n % 2 == 0 ? 2 : 1;
  o.straggler = n - 1;
  if (o.validate(n)) {
    return std::nullopt;
  }
  return o;
}

/// Rank i's contribution: distinct, non-integer entries, so that any change of the summation
/// order shows in the bytes.
Eigen::MatrixXd program_inputs(Eigen::Index elements, int n) {
  Eigen::MatrixXd b(elements, n);
  for (int i = 0; i < n; ++i) {
    for (Eigen::Index e = 0; e < elements; ++e) {
      b(e, i) = std::sin(1.7 * static_cast<double>(e) + 0.37 * static_cast<double>(i)) /
                (1.0 + 0.1 * static_cast<double>(i * i));
    }
  }
  return b;
}

bool same_bytes(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

/// A channel over a map of posted payloads, for ranks run round by round on one thread (every
/// send of a round before its receives, so a receive always finds its payload).
class ProgramQueueChannel final : public TransferChannel {
 public:
  void send(std::size_t index, std::span<const double> payload) override {
    posted_[index].assign(payload.begin(), payload.end());
  }
  bool receive(std::size_t index, std::span<double> payload) override {
    const auto it = posted_.find(index);
    REQUIRE(it != posted_.end());
    REQUIRE(it->second.size() == payload.size());
    std::copy(it->second.begin(), it->second.end(), payload.begin());
    posted_.erase(it);
    return true;
  }
  [[nodiscard]] bool empty() const { return posted_.empty(); }

 private:
  std::map<std::size_t, std::vector<double>> posted_;
};

/// A channel between threads: one mailbox for all, each payload under its transfer index.
class ProgramMailboxChannel final : public TransferChannel {
 public:
  void send(std::size_t index, std::span<const double> payload) override {
    {
      const std::lock_guard lock(mutex_);
      posted_[index].assign(payload.begin(), payload.end());
    }
    cv_.notify_all();
  }
  bool receive(std::size_t index, std::span<double> payload) override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return posted_.count(index) != 0; });
    std::copy(posted_[index].begin(), posted_[index].end(), payload.begin());
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::size_t, std::vector<double>> posted_;
};

const std::vector<CollectiveKind> kProgramKinds = {CollectiveKind::kRing,
                                                   CollectiveKind::kTree,
                                                   CollectiveKind::kHalvingDoubling,
                                                   CollectiveKind::kDirect,
                                                   CollectiveKind::kHierarchical,
                                                   CollectiveKind::kStragglar};

}  // namespace

TEST_CASE("collective program: every transfer is one send and one receive in round order",
          "[sim][collectives]") {
  for (const CollectiveKind kind : kProgramKinds) {
    for (int n = 1; n <= 9; ++n) {
      const auto options = program_options_for(kind, n);
      if (!options) {
        continue;
      }
      INFO(collectives::kind_name(kind) << " n=" << n);
      const Schedule s = collectives::build_schedule(*options, n, 37);
      std::vector<int> sent(s.transfers.size(), 0);
      std::vector<int> received(s.transfers.size(), 0);
      for (int r = 0; r < n; ++r) {
        const std::vector<RankStep> program = rank_program(s, r);
        for (std::size_t k = 0; k < program.size(); ++k) {
          CHECK((k == 0 || program[k - 1].round < program[k].round));
          CHECK(std::is_sorted(program[k].sends.begin(), program[k].sends.end()));
          CHECK(std::is_sorted(program[k].receives.begin(), program[k].receives.end()));
          for (const std::size_t t : program[k].sends) {
            CHECK(s.transfers[t].source == r);
            CHECK(s.transfers[t].round == program[k].round);
            ++sent[t];
          }
          for (const std::size_t t : program[k].receives) {
            CHECK(s.transfers[t].destination == r);
            CHECK(s.transfers[t].round == program[k].round);
            ++received[t];
          }
        }
      }
      CHECK(std::all_of(sent.begin(), sent.end(), [](int c) { return c == 1; }));
      CHECK(std::all_of(received.begin(), received.end(), [](int c) { return c == 1; }));
    }
  }
}

TEST_CASE("collective program: ranks run round by round in any order give execute's bytes",
          "[sim][collectives]") {
  std::mt19937 shuffle(5);  // the rank order only; the bytes must not depend on it
  for (const CollectiveKind kind : kProgramKinds) {
    for (int n = 1; n <= 9; ++n) {
      const auto options = program_options_for(kind, n);
      if (!options) {
        continue;
      }
      for (const Eigen::Index elements : {Eigen::Index{1}, Eigen::Index{7}, Eigen::Index{64}}) {
        INFO(collectives::kind_name(kind) << " n=" << n << " elements=" << elements);
        const Schedule s = collectives::build_schedule(*options, n, elements);
        Eigen::MatrixXd expected = program_inputs(elements, n);
        const Eigen::MatrixXd inputs = expected;
        collectives::execute(s, expected);

        std::vector<std::vector<RankStep>> programs;
        std::vector<Eigen::VectorXd> buffers;
        for (int r = 0; r < n; ++r) {
          programs.push_back(rank_program(s, r));
          buffers.emplace_back(inputs.col(r));
        }
        ProgramQueueChannel channel;
        std::vector<double> scratch;
        std::vector<int> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        for (int round = 0; round < s.rounds; ++round) {
          for (const bool receiving : {false, true}) {
            std::shuffle(order.begin(), order.end(), shuffle);
            for (const int r : order) {
              for (const RankStep& step : programs[static_cast<std::size_t>(r)]) {
                if (step.round != round) {
                  continue;
                }
                RankStep half = step;
                (receiving ? half.sends : half.receives).clear();
                REQUIRE(run_step(s, half, buffers[static_cast<std::size_t>(r)], channel, scratch));
              }
            }
          }
        }
        CHECK(channel.empty());
        for (int r = 0; r < n; ++r) {
          CHECK(same_bytes(buffers[static_cast<std::size_t>(r)], expected.col(r)));
        }
      }
    }
  }
}

TEST_CASE("collective program: ranks on their own threads give execute's bytes",
          "[sim][collectives][threads]") {
  for (const CollectiveKind kind : kProgramKinds) {
    for (const int n : {2, 4, 5, 8}) {
      const auto options = program_options_for(kind, n);
      if (!options) {
        continue;
      }
      INFO(collectives::kind_name(kind) << " n=" << n);
      const Schedule s = collectives::build_schedule(*options, n, 29);
      Eigen::MatrixXd expected = program_inputs(29, n);
      std::vector<Eigen::VectorXd> buffers;
      for (int r = 0; r < n; ++r) {
        buffers.emplace_back(expected.col(r));
      }
      collectives::execute(s, expected);
      ProgramMailboxChannel channel;
      std::vector<char> completed(static_cast<std::size_t>(n), 0);
      {
        std::vector<std::thread> ranks;
        for (int r = 0; r < n; ++r) {
          ranks.emplace_back([&, r] {
            const auto i = static_cast<std::size_t>(r);
            std::vector<double> scratch;
            completed[i] = run_program(s, rank_program(s, r), buffers[i], channel, scratch) ? 1 : 0;
          });
        }
        for (auto& t : ranks) {
          t.join();
        }
      }
      for (int r = 0; r < n; ++r) {
        CHECK(completed[static_cast<std::size_t>(r)] == 1);
        CHECK(same_bytes(buffers[static_cast<std::size_t>(r)], expected.col(r)));
      }
    }
  }
}

TEST_CASE("collective program: a contribution is the weight times the message or zero",
          "[sim][collectives]") {
  Eigen::VectorXd y(3);
  y << 1.5, -2.0, 0.1;
  const Eigen::VectorXd v = contribution(0.25, y, 3);
  CHECK(v(0) == 0.375);
  CHECK(v(1) == -0.5);
  CHECK(v(2) == 0.25 * 0.1);
  // Added to zero as combine_messages adds: a product −0 is +0.
  const Eigen::VectorXd negative_zero = contribution(-1.0, Eigen::VectorXd::Zero(1), 1);
  CHECK_FALSE(std::signbit(negative_zero(0)));
  // Not heard: zero whatever the message holds (here, nothing).
  CHECK(contribution(0.0, Eigen::VectorXd(), 3) == Eigen::VectorXd::Zero(3));
}

}  // namespace stragglersim::sim

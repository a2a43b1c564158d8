// StragglAR (Devraj, Ding, Vijaya Kumar, Kleinberg, Singh, "Accelerating AllReduce with a
// Persistent Straggler", arXiv 2505.23523): docs/model.md §3 "Collectives".
//
// Phase 2 for n = 2^k ranks, m = n − 1 chunks, R = m − 1 + k rounds (the paper's n − 2 + log2 n).
// The non-straggler ranks are positions 0 … m−1 (rank order skipping the straggler); position t
// holds chunk t reduced over them after phase 1. In round t < m the straggler and position t
// exchange chunk t (both reduce: both then hold the final chunk t). The others spread the final
// chunks with the invariant, from round k on: before round r every position holds every chunk
// older than r − k and exactly one of the k "active" chunks r − k … r − 1, chunk r − j on 2^(j−1)
// positions, and position r holds the oldest, r − k. In round r the holders of the oldest pair
// off with the holders of the newer ones and swap (two copies): the oldest is then everywhere,
// every newer chunk has doubled, and each former oldest holder holds one newer chunk. The pairing
// sends position p ∈ (r, r + k) the chunk p − k it must hold when its own exchange comes; the
// rest pair in rank order. After round m − 1 the straggler, holding everything, sends chunk m − 1
// to the one oldest holder left without a partner, so chunk m − 1 also finishes by round R − 1.
// Rounds 1 … k − 1 fill the window: every holder sends its chunk to a position holding nothing
// (position t − 1 + k receiving chunk t − 1 in round t, positions 1 … k − 1 staying empty until
// their exchange).
//
// Other n ≥ 3 (the paper's synthesizer has no closed form there): a greedy phase 2 with the same
// exchanges. Each round every free position that lacks a final chunk is matched to a free holder
// of one it lacks (a maximum matching, the receivers lacking most tried first), which sends it the
// chunk held by the fewest positions (the lowest on a tie); from round m on the straggler, holding
// everything, is one more sender. It reaches n − 2 + ⌈log2 n⌉ + {0, 1, 2} rounds for n ≤ 96
// (docs/model.md §3 "Collectives" has the table).
#include <algorithm>
#include <cstdint>

#include "models/base/invariant.h"
#include "sim/collectives/schedule_builders.h"

namespace stragglersim::sim::collectives::detail {

namespace {

struct ChunkMove {
  int from = 0;  ///< position
  int to = 0;    ///< position
  int chunk = 0;
};

/// Appends, in `round`, chunk `move.chunk` of the rank_of.size() − 1 chunks from position
/// `move.from` to `move.to` (rank_of: position → rank).
void send_chunk(
    Schedule& schedule, const std::vector<int>& rank_of, int round, ChunkMove move, bool reduce) {
  add_chunks(schedule,
             round,
             rank_of[static_cast<std::size_t>(move.from)],
             rank_of[static_cast<std::size_t>(move.to)],
             move.chunk,
             move.chunk + 1,
             static_cast<Eigen::Index>(rank_of.size()) - 1,
             reduce);
}

class StragglarPhaseTwo {
 public:
  StragglarPhaseTwo(Schedule& schedule, std::vector<int> rank_of, int first_round)
      : schedule_(schedule),
        rank_of_(std::move(rank_of)),
        m_(static_cast<int>(rank_of_.size()) - 1),
        first_round_(first_round),
        holds_(static_cast<std::size_t>(m_), -1) {
    while ((1 << k_) < m_ + 1) {
      ++k_;
    }
  }

  void build() {
    const int rounds = m_ - 1 + k_;
    for (int r = 0; r < rounds; ++r) {
      std::vector<int> next = holds_;
      if (r < m_) {
        send(r, r, m_, r, true);
        send(r, m_, r, r, true);
      }
      if (r >= 1 && r < k_) {
        fill_round(r, next);
      } else if (r >= k_) {
        window_round(r, next);
      }
      if (r < m_) {
        next[static_cast<std::size_t>(r)] = r;
      }
      holds_ = std::move(next);
    }
  }

 private:
  [[nodiscard]] int holds(int p) const { return holds_[static_cast<std::size_t>(p)]; }

  void send(int r, int from, int to, int chunk, bool reduce) {
    send_chunk(schedule_, rank_of_, first_round_ + r, {from, to, chunk}, reduce);
  }

  void copy(int r, int from, int to, int chunk, std::vector<int>& next) {
    send(r, from, to, chunk, false);
    next[static_cast<std::size_t>(to)] = chunk;
  }

  // Round r < k: the window fills by one-way copies into empty positions.
  void fill_round(int r, std::vector<int>& next) {
    const int target = r - 1 + k_;
    copy(r, r - 1, target, r - 1, next);
    std::vector<int> fresh;
    for (int p = k_; p < m_; ++p) {
      const bool reserved = p == target || (p >= r + k_ && p <= 2 * k_ - 2);
      if (holds(p) < 0 && !reserved) {
        fresh.push_back(p);
      }
    }
    std::size_t next_fresh = 0;
    for (int p = 0; p < m_; ++p) {
      if (holds(p) >= 0 && p != r - 1) {
        STRAGGLERSIM_ASSERT(next_fresh < fresh.size(), "stragglar: a free position per holder");
        copy(r, p, fresh[next_fresh++], holds(p), next);
      }
    }
  }

  // Round r ≥ k: the oldest active chunk's holders swap with the newer chunks' holders.
  void window_round(int r, std::vector<int>& next) {
    const int oldest = r - k_;
    const int busy = r < m_ ? r : -1;
    STRAGGLERSIM_ASSERT(busy < 0 || holds(busy) == oldest,
                        "stragglar: the partner holds the oldest");
    std::vector<int> old_holders;
    std::vector<int> new_holders;
    for (int p = 0; p < m_; ++p) {
      if (p != busy) {
        (holds(p) == oldest ? old_holders : new_holders).push_back(p);
      }
    }
    std::vector<std::pair<int, int>> pairs;
    std::vector<bool> taken(static_cast<std::size_t>(m_), false);
    for (const int o : old_holders) {
      if (o > r && o < r + k_ && o < m_ && o - k_ <= r - 1) {
        const auto q = std::find_if(new_holders.begin(), new_holders.end(), [&](int p) {
          return !taken[static_cast<std::size_t>(p)] && holds(p) == o - k_;
        });
        STRAGGLERSIM_ASSERT(q != new_holders.end(), "stragglar: a holder of the partner's chunk");
        pairs.emplace_back(o, *q);
        taken[static_cast<std::size_t>(o)] = taken[static_cast<std::size_t>(*q)] = true;
      }
    }
    std::vector<int> rest_old;
    std::vector<int> rest_new;
    for (const int o : old_holders) {
      if (!taken[static_cast<std::size_t>(o)]) rest_old.push_back(o);
    }
    for (const int q : new_holders) {
      if (!taken[static_cast<std::size_t>(q)]) rest_new.push_back(q);
    }
    if (busy < 0) {
      STRAGGLERSIM_ASSERT(rest_old.size() == rest_new.size() + 1,
                          "stragglar: one left for the straggler");
      copy(r, m_, rest_old.back(), m_ - 1, next);
      rest_old.pop_back();
    }
    STRAGGLERSIM_ASSERT(rest_old.size() == rest_new.size(), "stragglar: the holders pair off");
    for (std::size_t i = 0; i < rest_old.size(); ++i) {
      pairs.emplace_back(rest_old[i], rest_new[i]);
    }
    for (const auto& [o, q] : pairs) {
      const int newer = holds(q);
      copy(r, o, q, oldest, next);
      next[static_cast<std::size_t>(q)] = newer;
      copy(r, q, o, newer, next);
    }
  }

  Schedule& schedule_;
  std::vector<int> rank_of_;  // position → rank; position m_ is the straggler
  int m_;
  int first_round_;
  int k_ = 0;
  std::vector<int> holds_;  // each position's active chunk (−1: none yet)
};

/// The greedy phase 2 for any n ≥ 3 (see the file comment).
class StragglarGreedyPhaseTwo {
 public:
  StragglarGreedyPhaseTwo(Schedule& schedule, std::vector<int> rank_of, int first_round)
      : schedule_(schedule),
        rank_of_(std::move(rank_of)),
        m_(static_cast<int>(rank_of_.size()) - 1),
        first_round_(first_round),
        have_(static_cast<std::size_t>(m_ + 1), std::vector<bool>(static_cast<std::size_t>(m_))) {}

  void build() {
    for (int r = 0; !complete(); ++r) {
      round(r);
    }
  }

 private:
  [[nodiscard]] bool has(int p, int c) const {
    return have_[static_cast<std::size_t>(p)][static_cast<std::size_t>(c)];
  }
  [[nodiscard]] int count(int p) const {
    return static_cast<int>(std::count(have_[static_cast<std::size_t>(p)].begin(),
                                       have_[static_cast<std::size_t>(p)].end(),
                                       true));
  }
  [[nodiscard]] bool complete() const {
    for (int p = 0; p <= m_; ++p) {
      if (count(p) < m_) {
        return false;
      }
    }
    return true;
  }
  [[nodiscard]] bool useful(int s, int q) const {
    for (int c = 0; c < m_; ++c) {
      if (has(s, c) && !has(q, c)) {
        return true;
      }
    }
    return false;
  }

  void send(int r, int from, int to, int chunk, bool reduce) {
    send_chunk(schedule_, rank_of_, first_round_ + r, {from, to, chunk}, reduce);
  }

  // Kuhn's augmenting path from receiver q over the senders not yet visited.
  bool augment(int q, std::vector<bool>& visited, std::vector<int>& receiver_of) const {
    for (const int s : senders_) {
      if (!visited[static_cast<std::size_t>(s)] && useful(s, q)) {
        visited[static_cast<std::size_t>(s)] = true;
        int& current = receiver_of[static_cast<std::size_t>(s)];
        if (current < 0 || augment(current, visited, receiver_of)) {
          current = q;
          return true;
        }
      }
    }
    return false;
  }

  void round(int r) {
    const int busy = r < m_ ? r : -1;
    senders_.clear();
    std::vector<int> receivers;
    for (int p = 0; p < m_; ++p) {
      if (p != busy && count(p) > 0) {
        senders_.push_back(p);
      }
      if (p != busy && count(p) < m_) {
        receivers.push_back(p);
      }
    }
    if (busy < 0) {
      senders_.push_back(m_);  // the straggler, free once every exchange is done
    }
    std::stable_sort(
        receivers.begin(), receivers.end(), [&](int a, int b) { return count(a) < count(b); });
    std::vector<int> receiver_of(static_cast<std::size_t>(m_ + 1), -1);
    for (const int q : receivers) {
      std::vector<bool> visited(static_cast<std::size_t>(m_ + 1), false);
      augment(q, visited, receiver_of);
    }
    std::vector<int> holders(static_cast<std::size_t>(m_), 0);
    for (int p = 0; p < m_; ++p) {
      for (int c = 0; c < m_; ++c) {
        holders[static_cast<std::size_t>(c)] += has(p, c) ? 1 : 0;
      }
    }
    if (busy >= 0) {
      send(r, busy, m_, busy, true);
      send(r, m_, busy, busy, true);
    }
    std::vector<std::pair<int, int>> received;  // (position, chunk), applied after the round
    for (const int s : senders_) {
      const int q = receiver_of[static_cast<std::size_t>(s)];
      if (q < 0) {
        continue;
      }
      int chunk = -1;
      for (int c = 0; c < m_; ++c) {
        if (has(s, c) && !has(q, c) &&
            (chunk < 0 ||
             holders[static_cast<std::size_t>(c)] < holders[static_cast<std::size_t>(chunk)])) {
          chunk = c;
        }
      }
      send(r, s, q, chunk, false);
      received.emplace_back(q, chunk);
    }
    for (const auto& [q, c] : received) {
      have_[static_cast<std::size_t>(q)][static_cast<std::size_t>(c)] = true;
    }
    if (busy >= 0) {
      have_[static_cast<std::size_t>(busy)][static_cast<std::size_t>(busy)] = true;
      have_[static_cast<std::size_t>(m_)][static_cast<std::size_t>(busy)] = true;
    }
  }

  Schedule& schedule_;
  std::vector<int> rank_of_;  // position → rank; position m_ is the straggler
  int m_;
  int first_round_;
  std::vector<std::vector<bool>> have_;  // per position, the final chunks it holds
  std::vector<int> senders_;             // this round's free holders
};

bool power_of_two(int n) { return n >= 1 && (n & (n - 1)) == 0; }

}  // namespace

void build_stragglar(Schedule& schedule, int straggler) {
  std::vector<int> rank_of;
  for (int r = 0; r < schedule.ranks; ++r) {
    if (r != straggler) {
      rank_of.push_back(r);
    }
  }
  // Phase 1: shift −1 leaves position t with chunk t.
  const int first = ring_reduce_scatter(schedule, rank_of, 0, -1);
  rank_of.push_back(straggler);
  if (power_of_two(schedule.ranks)) {
    StragglarPhaseTwo(schedule, std::move(rank_of), first).build();
  } else {
    StragglarGreedyPhaseTwo(schedule, std::move(rank_of), first).build();
  }
}

}  // namespace stragglersim::sim::collectives::detail

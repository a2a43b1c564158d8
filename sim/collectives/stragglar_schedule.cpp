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
#include <algorithm>

#include "models/base/invariant.h"
#include "sim/collectives/schedule_builders.h"

namespace stragglersim::sim::collectives::detail {

namespace {

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
    add_chunks(schedule_,
               first_round_ + r,
               rank_of_[static_cast<std::size_t>(from)],
               rank_of_[static_cast<std::size_t>(to)],
               chunk,
               chunk + 1,
               m_,
               reduce);
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
  StragglarPhaseTwo(schedule, std::move(rank_of), first).build();
}

}  // namespace stragglersim::sim::collectives::detail

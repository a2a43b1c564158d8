// StragglAR's schedule (docs/model.md §3 "Collectives"): its data, its phase-2 round count
// against the paper's n − 2 + log2 n (powers of two) and its synthesizer (other n), and the port
// limits of phase 2.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "tests/sim/collectives/collective_support.h"

namespace stragglersim::sim::collectives {
namespace {

using test_support::options_of;
using test_support::random_contributions;
using test_support::reduced;

CollectiveOptions stragglar_options(int straggler) {
  CollectiveOptions o = options_of(CollectiveKind::kStragglar, 0.0, 1.0);
  o.straggler = straggler;
  return o;
}

int stragglar_log2(int n) {
  int k = 0;
  while ((1 << k) < n) {
    ++k;
  }
  return k;
}

}  // namespace

TEST_CASE("collectives: stragglar reduces to the sum for every straggler position",
          "[collectives][stragglar]") {
  for (const int n : {2, 3, 4, 5, 6, 7, 8, 12, 16}) {
    for (int straggler = 0; straggler < n; ++straggler) {
      for (const Eigen::Index elements : {1, 7, 45}) {
        CAPTURE(n, straggler, elements);
        const Eigen::MatrixXd x = random_contributions(elements, n, 21U);
        const Eigen::MatrixXd y =
            reduced(build_schedule(stragglar_options(straggler), n, elements), x);
        for (Eigen::Index i = 0; i < elements; ++i) {
          long double sum = 0.0L;
          double magnitude = 0.0;
          for (int j = 0; j < n; ++j) {
            sum += static_cast<long double>(x(i, j));
            magnitude += std::abs(x(i, j));
          }
          for (int j = 0; j < n; ++j) {
            REQUIRE(std::abs(y(i, j) - static_cast<double>(sum)) <= n * 1.2e-16 * magnitude);
            REQUIRE(y(i, j) == y(i, 0));
          }
        }
      }
    }
  }
}

TEST_CASE("collectives: stragglar reduces chunk t over the ring then adds the straggler's",
          "[collectives][stragglar]") {
  // Phase 1 (ring among the non-stragglers p_0 … p_(m−1)) leaves chunk t summed from position
  // t + 1 around to t; phase 2 adds the straggler's chunk t to it.
  const int n = 8;
  const int straggler = 3;
  const int m = n - 1;
  std::vector<int> position;
  for (int r = 0; r < n; ++r) {
    if (r != straggler) {
      position.push_back(r);
    }
  }
  const Eigen::Index elements = 29;
  const Eigen::MatrixXd x = random_contributions(elements, n, 8U);
  const Eigen::MatrixXd y = reduced(build_schedule(stragglar_options(straggler), n, elements), x);
  for (int t = 0; t < m; ++t) {
    for (Eigen::Index i = t * elements / m; i < (t + 1) * elements / m; ++i) {
      double acc = x(i, position[static_cast<std::size_t>((t + 1) % m)]);
      for (int k = 2; k <= m; ++k) {
        acc += x(i, position[static_cast<std::size_t>((t + k) % m)]);
      }
      acc += x(i, straggler);
      for (int j = 0; j < n; ++j) {
        REQUIRE(y(i, j) == acc);
      }
    }
  }
}

/// Phase 2 of `s` (n ranks): each rank sends at most one chunk and receives at most one per
/// round, the straggler exchanges chunk t with position t in round t (both reduce), every other
/// transfer is a copy of one chunk. Returns the phase-2 round count.
int stragglar_phase_two_rounds(const Schedule& s, int n, int straggler, Eigen::Index chunk) {
  const int phase1 = n - 2;
  std::vector<int> sends(static_cast<std::size_t>(n) * static_cast<std::size_t>(s.rounds), 0);
  std::vector<int> receives(sends.size(), 0);
  for (const auto& t : s.transfers) {
    if (t.round < phase1) {
      continue;
    }
    REQUIRE(t.end - t.begin == chunk);  // one chunk of S/(n − 1)
    const auto at = [&](int rank) {
      return static_cast<std::size_t>(t.round) * static_cast<std::size_t>(n) +
             static_cast<std::size_t>(rank);
    };
    REQUIRE(++sends[at(t.source)] == 1);
    REQUIRE(++receives[at(t.destination)] == 1);
    const int phase2_round = t.round - phase1;
    const bool exchange = t.source == straggler || t.destination == straggler;
    if (exchange && phase2_round < n - 1) {
      REQUIRE(t.reduce);
      REQUIRE(t.begin == chunk * phase2_round);
    } else {
      REQUIRE(!t.reduce);
    }
  }
  return s.rounds - phase1;
}

TEST_CASE("collectives: stragglar phase 2 takes the paper's n - 2 + log2 n rounds",
          "[collectives][stragglar]") {
  // Phase 1 is n − 2 ring rounds among the n − 1 others; phase 2 must take n − 2 + log2 n
  // (arXiv 2505.23523, the optimum for powers of two).
  for (int k = 1; k <= 7; ++k) {
    const int n = 1 << k;
    const int straggler = n / 2;
    CAPTURE(n);
    const Schedule s = build_schedule(stragglar_options(straggler), n, 4 * (n - 1));
    REQUIRE(stragglar_phase_two_rounds(s, n, straggler, 4) == n - 2 + stragglar_log2(n));
  }
}

TEST_CASE("collectives: stragglar's greedy phase 2 for other n, against the paper's synthesizer",
          "[collectives][stragglar]") {
  // The greedy matcher's round counts, as an independent implementation of the same rule (a
  // Python transcription of the file comment of sim/collectives/stragglar_schedule.cpp) gives
  // them; never below the lower bound n − 2 + ⌈log2 n⌉, and at most the rounds the paper's
  // synthesizer reports (arXiv 2505.23523: n = 6: 7, 12: 15, 48: 57, 96: 108) but for n = 24,
  // where it takes 28 against the synthesizer's 27.
  const std::vector<std::pair<int, int>> expected = {{3, 3},
                                                     {5, 6},
                                                     {6, 7},
                                                     {7, 9},
                                                     {9, 11},
                                                     {10, 12},
                                                     {11, 14},
                                                     {12, 15},
                                                     {13, 16},
                                                     {14, 17},
                                                     {15, 18},
                                                     {17, 20},
                                                     {18, 22},
                                                     {19, 23},
                                                     {24, 28},
                                                     {48, 54},
                                                     {96, 103}};
  const std::vector<std::pair<int, int>> synthesizer = {{6, 7}, {12, 15}, {48, 57}, {96, 108}};
  for (const auto& [n, rounds] : expected) {
    for (const int straggler : {0, n / 2, n - 1}) {
      CAPTURE(n, straggler);
      const Schedule s = build_schedule(stragglar_options(straggler), n, 2 * (n - 1));
      const int measured = stragglar_phase_two_rounds(s, n, straggler, 2);
      REQUIRE(measured == rounds);
      REQUIRE(measured >= n - 2 + stragglar_log2(n));
    }
  }
  for (const auto& [n, rounds] : synthesizer) {
    CAPTURE(n);
    const auto ours = std::find_if(
        expected.begin(), expected.end(), [n = n](const auto& e) { return e.first == n; });
    REQUIRE(ours->second <= rounds);
  }
}

}  // namespace stragglersim::sim::collectives

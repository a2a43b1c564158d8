// The ring, tree, halving–doubling, direct and hierarchical schedules (docs/model.md §3
// "Collectives"): their data against the sum and the documented orders, written out here.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "sim/collectives/schedule_builders.h"
#include "tests/sim/collectives/collective_support.h"

namespace stragglersim::sim::collectives {
namespace {

using test_support::options_of;
using test_support::random_contributions;
using test_support::reduced;

// Every column within rounding of the long-double row sum, and every column bitwise equal.
void classic_check_sum(const Schedule& schedule, const Eigen::MatrixXd& x) {
  const Eigen::MatrixXd y = reduced(schedule, x);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    long double sum = 0.0L;
    double magnitude = 0.0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      sum += static_cast<long double>(x(i, j));
      magnitude += std::abs(x(i, j));
    }
    const double tolerance = static_cast<double>(x.cols()) * 1.2e-16 * magnitude;
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      REQUIRE(std::abs(y(i, j) - static_cast<double>(sum)) <= tolerance);
      REQUIRE(y(i, j) == y(i, 0));
    }
  }
}

// Chunk c of `parts` over `elements`.
Eigen::Index classic_chunk(Eigen::Index c, Eigen::Index parts, Eigen::Index elements) {
  return c * elements / parts;
}

// acc = x_first; acc += x_(first+1) … cyclically over `order`, element i.
double classic_fold(const Eigen::MatrixXd& x, Eigen::Index i, const std::vector<int>& order) {
  double acc = x(i, order[0]);
  for (std::size_t k = 1; k < order.size(); ++k) {
    acc += x(i, order[k]);
  }
  return acc;
}

}  // namespace

TEST_CASE("collectives: ring tree halving_doubling and direct reduce to the sum on every rank",
          "[collectives]") {
  for (const auto kind : {CollectiveKind::kRing,
                          CollectiveKind::kTree,
                          CollectiveKind::kHalvingDoubling,
                          CollectiveKind::kDirect}) {
    for (int n = 1; n <= 8; ++n) {
      for (const Eigen::Index elements : {1, 7, 60}) {
        CAPTURE(kind_name(kind), n, elements);
        const Schedule s = build_schedule(options_of(kind, 0.0, 1.0), n, elements);
        classic_check_sum(s, random_contributions(elements, n, 11U + static_cast<unsigned>(n)));
      }
    }
  }
}

TEST_CASE("collectives: hierarchical reduces to the sum for every node size dividing n",
          "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    for (int g = 1; g <= n; ++g) {
      if (n % g != 0) {
        continue;
      }
      CollectiveOptions o = options_of(CollectiveKind::kHierarchical, 0.0, 1.0);
      o.node_size = g;
      for (const Eigen::Index elements : {1, 9, 48}) {
        CAPTURE(n, g, elements);
        classic_check_sum(build_schedule(o, n, elements), random_contributions(elements, n, 5U));
      }
    }
  }
}

TEST_CASE("collectives: ring sums chunk c starting from rank c around the ring", "[collectives]") {
  // Chunk c leaves rank c in round 0 and each next rank adds its own: x_c + x_(c+1) + … .
  for (int n = 1; n <= 8; ++n) {
    const Eigen::Index elements = 23;
    const Eigen::MatrixXd x = random_contributions(elements, n, 3U);
    const Eigen::MatrixXd y =
        reduced(build_schedule(options_of(CollectiveKind::kRing, 0.0, 1.0), n, elements), x);
    for (int c = 0; c < n; ++c) {
      std::vector<int> order;
      for (int k = 0; k < n; ++k) {
        order.push_back((c + k) % n);
      }
      for (Eigen::Index i = classic_chunk(c, n, elements); i < classic_chunk(c + 1, n, elements);
           ++i) {
        for (int j = 0; j < n; ++j) {
          REQUIRE(y(i, j) == classic_fold(x, i, order));
        }
      }
    }
  }
}

TEST_CASE("collectives: direct adds chunk j into rank j in ascending rank order", "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    const Eigen::Index elements = 17;
    const Eigen::MatrixXd x = random_contributions(elements, n, 4U);
    const Eigen::MatrixXd y =
        reduced(build_schedule(options_of(CollectiveKind::kDirect, 0.0, 1.0), n, elements), x);
    for (int c = 0; c < n; ++c) {
      std::vector<int> order{c};
      for (int k = 0; k < n; ++k) {
        if (k != c) {
          order.push_back(k);
        }
      }
      for (Eigen::Index i = classic_chunk(c, n, elements); i < classic_chunk(c + 1, n, elements);
           ++i) {
        for (int j = 0; j < n; ++j) {
          REQUIRE(y(i, j) == classic_fold(x, i, order));
        }
      }
    }
  }
}

TEST_CASE("collectives: hierarchical sums each node at its leader then rings the node sums",
          "[collectives]") {
  // Node a's sum: x_(ag) + x_(ag+1) + … in member order; then the ring over the N node sums.
  for (const auto& [n, g] :
       std::vector<std::pair<int, int>>{{4, 2}, {6, 2}, {6, 3}, {8, 4}, {8, 8}}) {
    const int nodes = n / g;
    const Eigen::Index elements = 13;
    const Eigen::MatrixXd x = random_contributions(elements, n, 6U);
    CollectiveOptions o = options_of(CollectiveKind::kHierarchical, 0.0, 1.0);
    o.node_size = g;
    const Eigen::MatrixXd y = reduced(build_schedule(o, n, elements), x);
    Eigen::MatrixXd node_sums(elements, nodes);
    for (int a = 0; a < nodes; ++a) {
      std::vector<int> members;
      for (int k = 0; k < g; ++k) {
        members.push_back(a * g + k);
      }
      for (Eigen::Index i = 0; i < elements; ++i) {
        node_sums(i, a) = classic_fold(x, i, members);
      }
    }
    for (int c = 0; c < nodes; ++c) {
      std::vector<int> order;
      for (int k = 0; k < nodes; ++k) {
        order.push_back((c + k) % nodes);
      }
      for (Eigen::Index i = classic_chunk(c, nodes, elements);
           i < classic_chunk(c + 1, nodes, elements);
           ++i) {
        for (int j = 0; j < n; ++j) {
          REQUIRE(y(i, j) == classic_fold(node_sums, i, order));
        }
      }
    }
  }
}

TEST_CASE("collectives: NCCL's double binary tree makes each rank interior in at most one tree",
          "[collectives]") {
  // Even n (mirror): every rank is interior in exactly one tree. Odd n (shift): every rank but
  // rank 0, which is tree 1's root (one child) and interior in tree 2 too (NCCL's construction).
  for (int n = 2; n <= 64; ++n) {
    const auto a = detail::nccl_binary_tree(n);
    const auto b = detail::nccl_second_tree(n);
    int roots = 0;
    for (int r = 0; r < n; ++r) {
      const auto& u = a[static_cast<std::size_t>(r)];
      const auto& v = b[static_cast<std::size_t>(r)];
      const bool interior_a = u.child0 >= 0 || u.child1 >= 0;
      const bool interior_b = v.child0 >= 0 || v.child1 >= 0;
      CAPTURE(n, r);
      if (n % 2 == 0 || r != 0) {
        REQUIRE(interior_a != interior_b);
      }
      // Parent and child links agree, in both trees.
      for (const auto* tree : {&a, &b}) {
        const auto& node = (*tree)[static_cast<std::size_t>(r)];
        roots += node.parent < 0 ? 1 : 0;
        if (node.parent >= 0) {
          const auto& p = (*tree)[static_cast<std::size_t>(node.parent)];
          REQUIRE((p.child0 == r || p.child1 == r));
        }
      }
    }
    REQUIRE(roots == 2);
  }
}

TEST_CASE(
    "collectives: halving_doubling sends the whole vector before and after for n not a power of "
    "two",
    "[collectives]") {
  // n = 6: r = 2 extra ranks; ranks 1 and 3 hand their vectors to 0 and 2 (round 0) and get the
  // result back in the last round; 2·log2 4 rounds between.
  const Schedule s = build_schedule(options_of(CollectiveKind::kHalvingDoubling, 0.0, 1.0), 6, 12);
  REQUIRE(s.rounds == 6);
  std::vector<std::pair<int, int>> first;
  std::vector<std::pair<int, int>> last;
  for (const auto& t : s.transfers) {
    if (t.round == 0) {
      REQUIRE((t.begin == 0 && t.end == 12 && t.reduce));
      first.emplace_back(t.source, t.destination);
    }
    if (t.round == 5) {
      REQUIRE((t.begin == 0 && t.end == 12 && !t.reduce));
      last.emplace_back(t.source, t.destination);
    }
  }
  REQUIRE(first == std::vector<std::pair<int, int>>{{1, 0}, {3, 2}});
  REQUIRE(last == std::vector<std::pair<int, int>>{{0, 1}, {2, 3}});
}

}  // namespace stragglersim::sim::collectives

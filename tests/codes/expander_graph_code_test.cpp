#include "codes/expander_graph_code.h"

#include <catch2/catch.hpp>
#include <set>
#include <vector>

#include "codes/code_analysis.h"

using stragglersim::codes::ExpanderGraphCode;
using stragglersim::codes::for_each_straggler_pattern;

TEST_CASE("codes: expander code is a simple d-regular graph on the partitions",
          "[codes][expander]") {
  const auto params = GENERATE(
      std::pair{15, 3}, std::pair{20, 4}, std::pair{10, 1}, std::pair{30, 2}, std::pair{60, 6});
  const auto [n, d] = params;
  INFO("n = " << n << ", d = " << d);
  const ExpanderGraphCode code(n, d, 17);
  CHECK(code.workers() == n);
  CHECK(code.partitions() == 2 * n / d);
  std::set<std::pair<int, int>> edges;
  std::vector<int> degree(static_cast<std::size_t>(code.partitions()), 0);
  for (int e = 0; e < n; ++e) {
    const auto [u, v] = code.edge(e);
    CHECK(u < v);
    CHECK(edges.insert({u, v}).second);
    ++degree[static_cast<std::size_t>(u)];
    ++degree[static_cast<std::size_t>(v)];
    CHECK(code.support(e).size() == 2);
    CHECK(code.load(e) == Approx(d));
  }
  for (const int deg : degree) {
    CHECK(deg == d);
  }
}

TEST_CASE("codes: expander per-component formula equals the least-squares error",
          "[codes][expander]") {
  const auto params = GENERATE(
      std::pair{15, 3}, std::pair{20, 4}, std::pair{10, 1}, std::pair{30, 2}, std::pair{24, 3});
  const int n = params.first;
  const int d = params.second;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const ExpanderGraphCode code(n, d, seed);
    for (int s = 0; s <= n; s += std::max(1, n / 6)) {
      for_each_straggler_pattern(
          n, s, 0, 8, seed * 1000 + static_cast<std::uint64_t>(s), [&](std::span<const int> heard) {
            const double formula = code.component_error(heard);
            const auto opt = code.decode_optimal(heard);
            INFO("n = " << n << ", d = " << d << ", seed " << seed << ", " << s << " stragglers");
            REQUIRE(formula == Approx(opt.error).margin(1e-9));
          });
    }
  }
}

namespace {

/// The components of a 2-regular graph (a union of cycles), each as its edges (workers) in
/// walking order, so that consecutive edges share a vertex.
std::vector<std::vector<int>> cycles_of(const ExpanderGraphCode& code) {
  const int k = code.partitions();
  std::vector<std::vector<int>> at(static_cast<std::size_t>(k));  // vertex -> incident edges
  for (int e = 0; e < code.workers(); ++e) {
    const auto [u, v] = code.edge(e);
    at[static_cast<std::size_t>(u)].push_back(e);
    at[static_cast<std::size_t>(v)].push_back(e);
  }
  std::vector<char> used(static_cast<std::size_t>(code.workers()), 0);
  std::vector<std::vector<int>> cycles;
  for (int start = 0; start < code.workers(); ++start) {
    if (used[static_cast<std::size_t>(start)] != 0) {
      continue;
    }
    std::vector<int> cycle;
    int e = start;
    int vertex = code.edge(start).second;
    while (used[static_cast<std::size_t>(e)] == 0) {
      used[static_cast<std::size_t>(e)] = 1;
      cycle.push_back(e);
      const auto& two = at[static_cast<std::size_t>(vertex)];
      e = two[0] == e ? two[1] : two[0];
      const auto [u, v] = code.edge(e);
      vertex = u == vertex ? v : u;
    }
    cycles.push_back(cycle);
  }
  return cycles;
}

}  // namespace

TEST_CASE("codes: expander components: even cycle is free and a path of three costs 1/3",
          "[codes][expander]") {
  // d = 2, k = n: a union of cycles. Losing every worker leaves k isolated partitions.
  const int n = 12;
  CHECK(ExpanderGraphCode(n, 2, 3).component_error(std::span<const int>{}) == Approx(12.0));
  // One worker (edge) alone: a component L = {u}, R = {v} costs 0; the other 10 partitions 1.
  const std::vector<int> one = {0};
  CHECK(ExpanderGraphCode(n, 2, 3).component_error(one) == Approx(10.0));
  bool even_seen = false;
  bool odd_seen = false;
  for (std::uint64_t seed = 1; seed <= 40 && !(even_seen && odd_seen); ++seed) {
    const ExpanderGraphCode code(n, 2, seed);
    for (const auto& cycle : cycles_of(code)) {
      INFO("seed " << seed << ", cycle of " << cycle.size() << " edges");
      const auto rest = static_cast<double>(n - static_cast<int>(cycle.size()));
      // Hearing exactly one whole cycle: an even cycle is bipartite with |L| = |R|, so it costs 0;
      // an odd one is not bipartite and is decoded exactly. Only the isolated rest costs 1 each.
      CHECK(code.component_error(cycle) == Approx(rest));
      CHECK(code.decode_optimal(cycle).error == Approx(rest).margin(1e-9));
      (cycle.size() % 2 == 0 ? even_seen : odd_seen) = true;
      // Two adjacent edges: a path of three vertices, L = 2 ends, R = the middle, (2 − 1)²/3.
      const std::vector<int> path = {cycle[0], cycle[1]};
      CHECK(code.component_error(path) == Approx(1.0 / 3.0 + (n - 3)));
      CHECK(code.decode_optimal(path).error == Approx(1.0 / 3.0 + (n - 3)).margin(1e-9));
    }
  }
  CHECK(even_seen);
  CHECK(odd_seen);
}

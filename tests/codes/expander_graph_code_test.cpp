#include "codes/expander_graph_code.h"

#include <catch2/catch.hpp>
#include <set>

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
  const auto [n, d] = params;
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

TEST_CASE("codes: expander components: even cycle is free and a path of three costs 1/3",
          "[codes][expander]") {
  // d = 2, k = n: a union of cycles. Losing every worker leaves k isolated partitions.
  const ExpanderGraphCode code(12, 2, 3);
  CHECK(code.component_error(std::span<const int>{}) == Approx(12.0));
  // One worker (edge) alone: a component L = {u}, R = {v} costs 0; the other 10 partitions 1.
  const std::vector<int> one = {0};
  CHECK(code.component_error(one) == Approx(10.0));
}

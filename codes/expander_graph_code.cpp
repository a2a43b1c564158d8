#include "codes/expander_graph_code.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <set>

#include "models/base/invariant.h"

namespace stragglersim::codes {
namespace {

int partitions_for(int workers, int d) {
  STRAGGLERSIM_ASSERT(workers >= 1 && d >= 1, "expander code needs workers >= 1 and d >= 1");
  STRAGGLERSIM_ASSERT((2 * workers) % d == 0, "expander code needs d | 2 workers");
  const int k = 2 * workers / d;
  STRAGGLERSIM_ASSERT(k >= d + 1, "expander code needs 2 workers / d >= d + 1");
  return k;
}

Eigen::MatrixXd graph_assignment(const std::vector<std::pair<int, int>>& edges, int vertices) {
  Eigen::MatrixXd b = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(edges.size()), vertices);
  for (std::size_t e = 0; e < edges.size(); ++e) {
    b(static_cast<Eigen::Index>(e), edges[e].first) = 1.0;
    b(static_cast<Eigen::Index>(e), edges[e].second) = 1.0;
  }
  return b;
}

}  // namespace

std::vector<std::pair<int, int>> ExpanderGraphCode::random_regular_graph(int vertices,
                                                                         int d,
                                                                         std::uint64_t seed) {
  STRAGGLERSIM_ASSERT(vertices >= d + 1 && d >= 1 && (vertices * d) % 2 == 0,
                      "no simple d-regular graph on that many vertices");
  boost::random::mt19937_64 engine(seed);
  constexpr int kMaxRestarts = 10000;
  for (int attempt = 0; attempt < kMaxRestarts; ++attempt) {
    // Half-edges ("points"): vertex v owns d of them. Pick two remaining points uniformly and
    // keep the pair only if it makes a new, loop-free edge; a dead end restarts the pairing.
    std::vector<int> points;
    points.reserve(static_cast<std::size_t>(vertices) * static_cast<std::size_t>(d));
    for (int v = 0; v < vertices; ++v) {
      points.insert(points.end(), static_cast<std::size_t>(d), v);
    }
    std::set<std::pair<int, int>> edges;
    bool stuck = false;
    while (!points.empty() && !stuck) {
      const int last = static_cast<int>(points.size()) - 1;
      boost::random::uniform_int_distribution<int> pick(0, last);
      bool placed = false;
      // Enough tries that a legal pair, when one exists, is found with overwhelming probability.
      for (int trial = 0; trial < 50 * (last + 1) && !placed; ++trial) {
        const int x = pick(engine);
        const int y = pick(engine);
        const int u =
            std::min(points[static_cast<std::size_t>(x)], points[static_cast<std::size_t>(y)]);
        const int v =
            std::max(points[static_cast<std::size_t>(x)], points[static_cast<std::size_t>(y)]);
        if (x == y || u == v || edges.contains({u, v})) {
          continue;
        }
        edges.insert({u, v});
        // Remove the two points (larger index first so the smaller stays valid).
        for (const int idx : {std::max(x, y), std::min(x, y)}) {
          points[static_cast<std::size_t>(idx)] = points.back();
          points.pop_back();
        }
        placed = true;
      }
      stuck = !placed;
    }
    if (!stuck) {
      return {edges.begin(), edges.end()};
    }
  }
  STRAGGLERSIM_ASSERT(false, "random regular graph: too many restarts");
  return {};
}

Validation ExpanderGraphCode::Options::validate() const {
  if (auto v = options_check::integer_in_range("d", d, 1, workers)) {
    return v;
  }
  // Glasgow & Wootters: partitions are the vertices of a d-regular graph, workers its edges,
  // so k = 2n/d.
  if ((2 * workers) % d != 0 || 2 * workers / d < d + 1) {
    return Violation{"d",
                     "no d-regular graph with one edge per worker",
                     fmt::format("d dividing 2·workers = {} with 2·workers/d > d", 2 * workers)};
  }
  const int k = 2 * workers / d;
  if (partitions != 0 && partitions != k) {
    return Violation{"partitions",
                     "code 'expander' has k = 2n/d partitions",
                     fmt::format("{} or no partitions key", k)};
  }
  return std::nullopt;
}

ExpanderGraphCode::ExpanderGraphCode(const Options& options)
    : ExpanderGraphCode(options_check::require_valid(options).workers, options.d, options.seed) {}

ExpanderGraphCode::ExpanderGraphCode(int workers, int d, std::uint64_t seed)
    : ExpanderGraphCode(random_regular_graph(partitions_for(workers, d), d, seed),
                        partitions_for(workers, d),
                        d) {}

ExpanderGraphCode::ExpanderGraphCode(std::vector<std::pair<int, int>> edges, int vertices, int d)
    : GradientCode(graph_assignment(edges, vertices)), edges_(std::move(edges)), d_(d) {}

std::pair<int, int> ExpanderGraphCode::edge(int worker) const {
  STRAGGLERSIM_ASSERT(worker >= 0 && worker < workers(), "worker out of range");
  return edges_[static_cast<std::size_t>(worker)];
}

double ExpanderGraphCode::component_error(std::span<const int> heard) const {
  const auto k = static_cast<std::size_t>(partitions());
  std::vector<std::vector<int>> adjacency(k);
  std::vector<char> seen(static_cast<std::size_t>(workers()), 0);
  for (const int e : heard) {
    STRAGGLERSIM_ASSERT(e >= 0 && e < workers(), "worker out of range");
    if (seen[static_cast<std::size_t>(e)] != 0) {
      continue;
    }
    seen[static_cast<std::size_t>(e)] = 1;
    const auto [u, v] = edges_[static_cast<std::size_t>(e)];
    adjacency[static_cast<std::size_t>(u)].push_back(v);
    adjacency[static_cast<std::size_t>(v)].push_back(u);
  }
  // Two-colour each component by breadth-first search; a clash means an odd cycle.
  std::vector<int> colour(k, -1);
  std::vector<int> queue;
  double error = 0.0;
  for (std::size_t start = 0; start < k; ++start) {
    if (colour[start] >= 0) {
      continue;
    }
    colour[start] = 0;
    queue.assign(1, static_cast<int>(start));
    std::array<int, 2> count = {0, 0};
    bool bipartite = true;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const auto u = static_cast<std::size_t>(queue[head]);
      ++count[static_cast<std::size_t>(colour[u])];
      for (const int w : adjacency[u]) {
        const auto wi = static_cast<std::size_t>(w);
        if (colour[wi] < 0) {
          colour[wi] = 1 - colour[u];
          queue.push_back(w);
        } else if (colour[wi] == colour[u]) {
          bipartite = false;
        }
      }
    }
    if (bipartite) {
      const double diff = count[0] - count[1];
      error += diff * diff / static_cast<double>(count[0] + count[1]);
    }
  }
  return error;
}

std::optional<double> ExpanderGraphCode::one_step_weight(int heard) const {
  STRAGGLERSIM_ASSERT(heard >= 1, "the one-step weight needs at least one worker heard");
  return partitions() / (2.0 * heard);
}

}  // namespace stragglersim::codes

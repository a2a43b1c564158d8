#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "codes/gradient_code.h"

namespace stragglersim::codes {

/// Graph assignment scheme on a random d-regular graph (Glasgow, Wootters, "Approximate
/// Gradient Coding with Optimal Decoding", IEEE JSAIT 2021, Definition II.2): the k partitions
/// (data blocks) are the vertices of a simple d-regular graph G and the n workers are its edges,
/// so n = k·d/2, every worker holds exactly the two partitions at the ends of its edge
/// (B_{e,u} = B_{e,v} = 1), every partition is replicated d times and the normalised load is
/// 2n/k = d. Random d-regular graphs are spectral expanders with high probability.
///
/// Optimal decoding error (their characterisation of α*): let G_K be the graph on all k
/// partitions whose edges are the workers heard. A connected component C of G_K that is not
/// bipartite is decoded exactly; a bipartite component C = L ∪ R contributes
/// (|L| − |R|)² / |C| (an isolated partition, L = {v}, R = ∅, contributes 1). component_error
/// computes this sum combinatorially; decode_optimal solves the least-squares problem.
///
/// One-step decoding: a_e = k / (2r) on the r distinct workers heard (unbiased when the heard set
/// is a uniformly random r-subset: a partition has d·r/n = 2r/k heard holders on average).
///
/// The graph is drawn by random pairing of the k·d half-edges with incremental rejection of loops
/// and repeated edges, restarting on a dead end (Steger–Wormald), from mt19937_64(seed).
///
/// Illegal: workers < 1, d < 1, d not dividing 2·workers, k = 2·workers/d < d + 1.
class ExpanderGraphCode final : public GradientCode {
 public:
  struct Options {
    int workers = 1;
    int partitions = 0;  ///< 0: k = 2n/d; anything else must equal it
    int d = 1;           ///< graph degree
    std::uint64_t seed = 1;
    /// The first violated constraint: 1 ≤ d ≤ n, d | 2n with 2n/d > d, k = 2n/d.
    [[nodiscard]] Validation validate() const;
  };
  explicit ExpanderGraphCode(const Options& options);
  /// Shorthand for ExpanderGraphCode({.workers = workers, .d = d, .seed = seed}).
  ExpanderGraphCode(int workers, int d, std::uint64_t seed);
  [[nodiscard]] std::string name() const override { return "expander"; }
  [[nodiscard]] int stragglers_tolerated() const override { return 0; }
  [[nodiscard]] CodeStructure structure() const override {
    return {CodeLayout::kIrregular, 0, 0, 0, DecoderFamily::kLinearAlgebra, true};
  }
  [[nodiscard]] int degree() const { return d_; }
  /// The two partitions (graph vertices) held by `worker` (a graph edge), smaller first.
  [[nodiscard]] std::pair<int, int> edge(int worker) const;
  /// Σ over connected components C of G_K of (|L| − |R|)²/|C| if C = L ∪ R is bipartite, 0
  /// otherwise: the optimal decoding error (Glasgow & Wootters), computed without linear algebra.
  [[nodiscard]] double component_error(std::span<const int> heard) const;
  [[nodiscard]] std::optional<double> one_step_weight(int heard) const override;

  /// Edges of a random simple d-regular graph on `vertices` vertices (pairs, smaller first).
  [[nodiscard]] static std::vector<std::pair<int, int>> random_regular_graph(int vertices,
                                                                             int d,
                                                                             std::uint64_t seed);

 private:
  ExpanderGraphCode(std::vector<std::pair<int, int>> edges, int vertices, int d);
  std::vector<std::pair<int, int>> edges_;
  int d_;
};

}  // namespace stragglersim::codes

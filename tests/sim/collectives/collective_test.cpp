// The collective schedule engine (sim/collectives/collective.h): completion times against the
// textbook costs and per-algorithm closed forms derived here, against an independent
// implementation of the α–β round rule, the max-plus offsets, validate(), and StragglAR's
// published analytical comparison.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/sim/collectives/collective_support.h"

namespace stragglersim::sim::collectives {
namespace {

using test_support::options_of;

constexpr double kAlpha = 0.3;
constexpr double kBandwidth = 2.0;
constexpr double kAlphaIn = 0.05;
constexpr double kBandwidthIn = 16.0;
constexpr double kBytes = 1000.0;           // S
constexpr Eigen::Index kElements = 720720;  // divisible by 1 … 16: equal chunks

std::vector<double> coll_times(const CollectiveOptions& o,
                               int n,
                               const std::vector<double>& ready) {
  const Schedule s = build_schedule(o, n, kElements);
  std::vector<double> c(static_cast<std::size_t>(n));
  complete_times(s, o, kBytes / static_cast<double>(kElements), ready, c);
  return c;
}

double coll_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

int coll_log2(int n) {
  int k = 0;
  while ((1 << k) < n) {
    ++k;
  }
  return k;
}

bool coll_power_of_two(int n) { return (1 << coll_log2(n)) == n; }

// Ready vectors for n ranks: a jittered base, then one or two late ranks at every position.
std::vector<std::vector<double>> coll_ready_patterns(int n) {
  std::vector<double> base(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    base[static_cast<std::size_t>(i)] = 0.01 * static_cast<double>((i * 7) % 5);
  }
  std::vector<std::vector<double>> patterns{base};
  for (int a = 0; a < n; ++a) {
    for (int b = a; b < n; ++b) {
      for (const double late : {0.7, 40.0}) {
        std::vector<double> r = base;
        r[static_cast<std::size_t>(a)] += late;
        r[static_cast<std::size_t>(b)] += 2.5;
        patterns.push_back(r);
      }
    }
  }
  return patterns;
}

// The α–β round rule (collective.h) written out independently: round by round, each rank's
// start, its port time and its senders' port ends.
std::vector<double> coll_reference(const Schedule& s,
                                   const CollectiveOptions& o,
                                   double bytes_per_element,
                                   const std::vector<double>& ready) {
  const auto n = static_cast<std::size_t>(s.ranks);
  std::vector<double> end = ready;
  std::vector<double> done = ready;
  for (int k = 0; k < s.rounds; ++k) {
    std::vector<double> start = end;
    std::vector<double> latency(n, 0.0), out(n, 0.0), in(n, 0.0);
    std::vector<bool> in_round(n, false), receives(n, false);
    for (const Transfer& t : s.transfers) {
      if (t.round != k) {
        continue;
      }
      const LinkCost& l = t.intra ? o.intra : o.link;
      const double time = static_cast<double>(t.end - t.begin) * bytes_per_element / l.bandwidth;
      const auto src = static_cast<std::size_t>(t.source);
      const auto dst = static_cast<std::size_t>(t.destination);
      out[src] += time;
      in[dst] += time;
      latency[src] = std::max(latency[src], l.latency);
      latency[dst] = std::max(latency[dst], l.latency);
      in_round[src] = in_round[dst] = true;
      receives[dst] = true;
      start[dst] = std::max(start[dst], end[src]);
    }
    std::vector<double> port(n);
    for (std::size_t i = 0; i < n; ++i) {
      port[i] = start[i] + latency[i] + std::max(out[i], in[i]);
    }
    std::vector<double> next = end;
    for (std::size_t i = 0; i < n; ++i) {
      if (in_round[i]) {
        next[i] = port[i];
      }
    }
    for (const Transfer& t : s.transfers) {
      if (t.round == k) {
        const auto dst = static_cast<std::size_t>(t.destination);
        next[dst] = std::max(next[dst], port[static_cast<std::size_t>(t.source)]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (receives[i]) {
        done[i] = next[i];
      }
    }
    end = next;
  }
  return done;
}

void coll_require_close(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i] == Approx(expected[i]).epsilon(1e-12).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("collectives: with equal ready times every algorithm costs its textbook time",
          "[collectives]") {
  const double a = kAlpha;
  const double s_over_b = kBytes / kBandwidth;
  for (int n = 2; n <= 16; ++n) {
    CAPTURE(n);
    const std::vector<double> zero(static_cast<std::size_t>(n), 0.0);
    const double dn = static_cast<double>(n);
    // ring 2(n − 1)(α + S/(nB)); direct 2(α + (n − 1)S/(nB)).
    REQUIRE(coll_max(coll_times(options_of(CollectiveKind::kRing, a, kBandwidth), n, zero)) ==
            Approx(2.0 * (dn - 1.0) * (a + s_over_b / dn)).epsilon(1e-12));
    REQUIRE(coll_max(coll_times(options_of(CollectiveKind::kDirect, a, kBandwidth), n, zero)) ==
            Approx(2.0 * (a + (dn - 1.0) * s_over_b / dn)).epsilon(1e-12));
    // halving_doubling: 2 log2 p·α + 2(p − 1)S/(pB) on p = 2^⌊log2 n⌋, plus 2(α + S/B) when p < n.
    const int p = coll_power_of_two(n) ? n : (1 << (coll_log2(n) - 1));
    const double dp = static_cast<double>(p);
    const double hd = 2.0 * coll_log2(p) * a + 2.0 * (dp - 1.0) * s_over_b / dp +
                      (p < n ? 2.0 * (a + s_over_b) : 0.0);
    REQUIRE(coll_max(
                coll_times(options_of(CollectiveKind::kHalvingDoubling, a, kBandwidth), n, zero)) ==
            Approx(hd).epsilon(1e-12));
    if (coll_power_of_two(n)) {
      // tree, n = 2^m: the reduction climbs m − 1 levels where a parent takes two halves
      // (α + S/B each) and the root's one child (α + S/(2B)); the broadcast mirrors it:
      // 2mα + (2m − 1)S/B.
      const double m = coll_log2(n);
      REQUIRE(coll_max(coll_times(options_of(CollectiveKind::kTree, a, kBandwidth), n, zero)) ==
              Approx(2.0 * m * a + (2.0 * m - 1.0) * s_over_b).epsilon(1e-12));
      // stragglar, n = 2^k: n − 2 phase-1 rounds and n − 2 + k phase-2 rounds, each
      // α + S/((n − 1)B): the straggler's exchanges wait for phase 1.
      CollectiveOptions o = options_of(CollectiveKind::kStragglar, a, kBandwidth);
      o.straggler = n - 1;
      REQUIRE(coll_max(coll_times(o, n, zero)) ==
              Approx((2.0 * dn - 4.0 + m) * (a + s_over_b / (dn - 1.0))).epsilon(1e-12));
    }
  }
}

TEST_CASE("collectives: hierarchical costs an intra reduce a leader ring and an intra broadcast",
          "[collectives]") {
  // (α_in + (g − 1)S/B_in) + 2(N − 1)(α + S/(NB)) + (α_in + (g − 1)S/B_in).
  for (int n = 1; n <= 8; ++n) {
    for (int g = 1; g <= n; ++g) {
      if (n % g != 0) {
        continue;
      }
      CAPTURE(n, g);
      CollectiveOptions o =
          options_of(CollectiveKind::kHierarchical, kAlpha, kBandwidth, kAlphaIn, kBandwidthIn);
      o.node_size = g;
      const double nodes = static_cast<double>(n / g);
      const double intra = g > 1 ? kAlphaIn + (g - 1) * kBytes / kBandwidthIn : 0.0;
      const double expected =
          2.0 * intra + 2.0 * (nodes - 1.0) * (kAlpha + kBytes / (nodes * kBandwidth));
      const std::vector<double> zero(static_cast<std::size_t>(n), 0.0);
      REQUIRE(coll_max(coll_times(o, n, zero)) == Approx(expected).epsilon(1e-12).margin(1e-12));
    }
  }
}

TEST_CASE(
    "collectives: late ranks delay ring direct and halving_doubling as their closed forms say",
    "[collectives]") {
  // Ring and direct: every round pairs ranks whose dependencies reach everyone before the end,
  // so every rank completes at max_j r_j + the textbook cost. Halving–doubling on p = 2^⌊log2 n⌋
  // with e = n − p extra ranks: participant 2i starts at max(r_2i, r_(2i+1)) + α + S/B, the
  // others at r_j; the participants complete at E = max of those + 2 log2 p·α + 2(p − 1)S/(pB),
  // the extra ranks 2i + 1 at E + α + S/B.
  const double s_over_b = kBytes / kBandwidth;
  for (int n = 1; n <= 8; ++n) {
    const double dn = static_cast<double>(n);
    for (const auto& r : coll_ready_patterns(n)) {
      CAPTURE(n, r);
      const double top = coll_max(r);
      const double ring = n > 1 ? 2.0 * (dn - 1.0) * (kAlpha + s_over_b / dn) : 0.0;
      const double direct = n > 1 ? 2.0 * (kAlpha + (dn - 1.0) * s_over_b / dn) : 0.0;
      coll_require_close(coll_times(options_of(CollectiveKind::kRing, kAlpha, kBandwidth), n, r),
                         n > 1 ? std::vector<double>(r.size(), top + ring) : r);
      coll_require_close(coll_times(options_of(CollectiveKind::kDirect, kAlpha, kBandwidth), n, r),
                         n > 1 ? std::vector<double>(r.size(), top + direct) : r);
      const int p = 1 << (coll_power_of_two(n) ? coll_log2(n) : coll_log2(n) - 1);
      const int extra = n - p;
      const double whole = kAlpha + s_over_b;
      double start = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < n; ++j) {
        const auto u = static_cast<std::size_t>(j);
        if (j < 2 * extra) {
          start = j % 2 == 0 ? std::max(start, std::max(r[u], r[u + 1]) + whole) : start;
        } else {
          start = std::max(start, r[u]);
        }
      }
      const double dp = static_cast<double>(p);
      const double e = start + 2.0 * coll_log2(p) * kAlpha + 2.0 * (dp - 1.0) * s_over_b / dp;
      std::vector<double> hd(r.size(), e);
      for (int i = 0; i < extra; ++i) {
        hd[static_cast<std::size_t>(2 * i + 1)] = e + whole;
      }
      coll_require_close(
          coll_times(options_of(CollectiveKind::kHalvingDoubling, kAlpha, kBandwidth), n, r),
          n > 1 ? hd : r);
    }
  }
}

TEST_CASE("collectives: late ranks delay hierarchical leaders and members as its closed form says",
          "[collectives]") {
  // A leader's intra reduce ends at its node's latest ready + c_in, c_in = α_in + (g − 1)S/B_in;
  // the leader ring then ends everywhere at L = max_j r_j + c_in + 2(N − 1)(α + S/(NB)), the
  // leaders' completion; members receive the result from the leader's shared port at L + c_in.
  for (int n = 1; n <= 8; ++n) {
    for (int g = 1; g <= n; ++g) {
      if (n % g != 0) {
        continue;
      }
      CollectiveOptions o =
          options_of(CollectiveKind::kHierarchical, kAlpha, kBandwidth, kAlphaIn, kBandwidthIn);
      o.node_size = g;
      const double nodes = static_cast<double>(n / g);
      const double c_in = g > 1 ? kAlphaIn + (g - 1) * kBytes / kBandwidthIn : 0.0;
      for (const auto& r : coll_ready_patterns(n)) {
        CAPTURE(n, g, r);
        if (n == 1) {
          coll_require_close(coll_times(o, n, r), r);
          continue;
        }
        const double leaders =
            coll_max(r) + c_in + 2.0 * (nodes - 1.0) * (kAlpha + kBytes / (nodes * kBandwidth));
        std::vector<double> expected(r.size());
        for (int i = 0; i < n; ++i) {
          expected[static_cast<std::size_t>(i)] = i % g == 0 ? leaders : leaders + c_in;
        }
        coll_require_close(coll_times(o, n, r), expected);
      }
    }
  }
}

TEST_CASE("collectives: every rank's completion follows the round rule for every algorithm",
          "[collectives]") {
  // Tree and StragglAR have no short closed form with late ranks: every rank's completion is
  // checked against the rule of collective.h evaluated independently, round by round; the
  // other kinds too (their closed forms are checked above).
  for (int n = 1; n <= 8; ++n) {
    for (int kind = 0; kind < static_cast<int>(kind_names().size()); ++kind) {
      CollectiveOptions o =
          options_of(static_cast<CollectiveKind>(kind), kAlpha, kBandwidth, kAlphaIn, kBandwidthIn);
      o.node_size = n % 2 == 0 ? 2 : 1;
      o.straggler = n - 2;
      if (o.validate(n)) {
        continue;
      }
      const Schedule s = build_schedule(o, n, kElements);
      const double bpe = kBytes / static_cast<double>(kElements);
      for (const auto& r : coll_ready_patterns(n)) {
        CAPTURE(n, kind_name(o.kind), r);
        std::vector<double> c(r.size());
        complete_times(s, o, bpe, r, c);
        coll_require_close(c, coll_reference(s, o, bpe, r));
      }
    }
  }
}

TEST_CASE("collectives: the last completion is max over j of ready_j plus the offset w_j",
          "[collectives]") {
  boost::random::mt19937 gen(17U);
  boost::random::uniform_real_distribution<double> uniform(0.0, 30.0);
  for (int n = 1; n <= 8; ++n) {
    for (int kind = 0; kind < static_cast<int>(kind_names().size()); ++kind) {
      CollectiveOptions o =
          options_of(static_cast<CollectiveKind>(kind), kAlpha, kBandwidth, kAlphaIn, kBandwidthIn);
      o.node_size = n % 2 == 0 ? 2 : 1;
      o.straggler = 0;
      if (o.validate(n)) {
        continue;
      }
      const Schedule s = build_schedule(o, n, 61);  // unequal chunks
      const double bpe = 8.0;
      const std::vector<double> w = completion_offsets(s, o, bpe);
      for (int draw = 0; draw < 50; ++draw) {
        std::vector<double> r(static_cast<std::size_t>(n));
        for (double& x : r) {
          x = uniform(gen);
        }
        std::vector<double> c(r.size());
        complete_times(s, o, bpe, r, c);
        double bound = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < r.size(); ++j) {
          bound = std::max(bound, r[j] + w[j]);
        }
        CAPTURE(n, kind_name(o.kind), draw);
        REQUIRE(coll_max(c) == Approx(bound).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("collectives: validate names the key of every violated constraint", "[collectives]") {
  const auto field = [](const CollectiveOptions& o, int n) {
    const Validation v = o.validate(n);
    return v ? v->field : std::string("none");
  };
  CollectiveOptions o = options_of(CollectiveKind::kRing, 0.0, 1.0);
  REQUIRE(field(o, 4) == "none");
  REQUIRE(field(o, 0) == "workers");
  o.link.latency = -1e-9;
  REQUIRE(field(o, 4) == "latency");
  o.link.latency = 0.0;
  o.link.bandwidth = 0.0;
  REQUIRE(field(o, 4) == "bandwidth");
  o.link.bandwidth = 1.0;
  o.intra.latency = std::nan("");
  REQUIRE(field(o, 4) == "intra_latency");
  o.intra.latency = 0.0;
  o.intra.bandwidth = -2.0;
  REQUIRE(field(o, 4) == "intra_bandwidth");
  o.intra.bandwidth = 1.0;
  o.kind = CollectiveKind::kHierarchical;
  o.node_size = 3;
  REQUIRE(field(o, 4) == "node_size");
  REQUIRE(o.validate(4)->expected == "a divisor of 4");
  o.node_size = 0;
  REQUIRE(field(o, 4) == "node_size");
  o.node_size = 2;
  REQUIRE(field(o, 4) == "none");
  o.kind = CollectiveKind::kStragglar;
  REQUIRE(field(o, 4) == "straggler");
  REQUIRE(o.validate(4)->problem == "missing");
  o.straggler = 4;
  REQUIRE(field(o, 4) == "straggler");
  REQUIRE(o.validate(4)->expected == "an integer in [0, 3]");
  o.straggler = 3;
  REQUIRE(field(o, 4) == "none");
  o.straggler = 0;
  REQUIRE(field(o, 1) == "workers");
  REQUIRE(o.validate(1)->expected == "at least 2");
  for (const int n : {2, 3, 6, 12}) {
    CAPTURE(n);
    REQUIRE(field(o, n) == "none");
  }
}

TEST_CASE("collectives: kind names follow the enum", "[collectives]") {
  REQUIRE(kind_names().size() == 6);
  REQUIRE(kind_name(CollectiveKind::kRing) == "ring");
  REQUIRE(kind_name(CollectiveKind::kTree) == "tree");
  REQUIRE(kind_name(CollectiveKind::kHalvingDoubling) == "halving_doubling");
  REQUIRE(kind_name(CollectiveKind::kDirect) == "direct");
  REQUIRE(kind_name(CollectiveKind::kHierarchical) == "hierarchical");
  REQUIRE(kind_name(CollectiveKind::kStragglar) == "stragglar");
}

TEST_CASE("collectives: the engine reproduces StragglAR's analytical comparison with ring and RHD",
          "[collectives][stragglar]") {
  // Devraj et al., "Accelerating AllReduce with a Persistent Straggler" (arXiv 2505.23523), and
  // their repository's stragglar/simulation.py: α = 3/1000, β = 1000/(450·1024³) per byte,
  // S = 1 GiB; for n a power of two
  //   ring       2(n − 1)α + 2(n − 1)/n·Sβ
  //   RHD        2 log2 n·α + 2(n − 1)/n·Sβ
  //   StragglAR  (n − 2 + log2 n)α + (n − 2 + log2 n)/(n − 1)·Sβ
  // measured from the straggler's ready time, the straggler (rank n − 1) far later than every
  // other rank (StragglAR's phase 1 then costs nothing after it).
  const double alpha = 3.0 / 1000.0;
  const double beta = 1000.0 / (450.0 * std::pow(1024.0, 3));
  const double size = std::pow(1024.0, 3);
  const double late = 1e4;
  for (const int n : {4, 8, 16, 32, 64}) {
    CAPTURE(n);
    const double dn = n;
    const double lg = coll_log2(n);
    const Eigen::Index elements = static_cast<Eigen::Index>(n) * (n - 1) * 16;
    const double bpe = size / static_cast<double>(elements);
    std::vector<double> ready(static_cast<std::size_t>(n), 0.0);
    ready.back() = late;
    const auto measured = [&](CollectiveKind kind) {
      CollectiveOptions o = options_of(kind, alpha, 1.0 / beta);
      o.straggler = n - 1;
      const Schedule s = build_schedule(o, n, elements);
      std::vector<double> c(static_cast<std::size_t>(n));
      complete_times(s, o, bpe, ready, c);
      return coll_max(c) - late;
    };
    const double ring = 2.0 * (dn - 1.0) * alpha + 2.0 * (dn - 1.0) / dn * size * beta;
    const double rhd = 2.0 * lg * alpha + 2.0 * (dn - 1.0) / dn * size * beta;
    const double sar = (dn - 2.0 + lg) * alpha + (dn - 2.0 + lg) / (dn - 1.0) * size * beta;
    const double t_ring = measured(CollectiveKind::kRing);
    const double t_sar = measured(CollectiveKind::kStragglar);
    REQUIRE(t_ring == Approx(ring).epsilon(1e-9));
    REQUIRE(measured(CollectiveKind::kHalvingDoubling) == Approx(rhd).epsilon(1e-9));
    REQUIRE(t_sar == Approx(sar).epsilon(1e-9));
    REQUIRE(t_ring / t_sar == Approx(ring / sar).epsilon(1e-9));
    // The speedup over ring grows towards 2(n − 1)²/(n(n − 2 + log2 n)), above 1 from n = 4.
    REQUIRE(t_ring / t_sar > 1.0);
  }
}

}  // namespace stragglersim::sim::collectives

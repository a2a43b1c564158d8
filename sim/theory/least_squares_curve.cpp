#include "sim/theory/least_squares_curve.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "models/base/invariant.h"
#include "models/base/log_gamma.h"

namespace stragglersim::sim {
namespace {

/// First and second moments of (x_t, x_{t−1}).
struct IterateMoments {
  Eigen::VectorXd mx, mp;         ///< E[x_t], E[x_{t−1}]
  Eigen::MatrixXd sxx, sxp, spp;  ///< E[x_t x_tᵀ], E[x_t x_{t−1}ᵀ], E[x_{t−1} x_{t−1}ᵀ]
};

struct Problem {
  const LeastSquaresCurveInputs* in = nullptr;
  Eigen::MatrixXd h;  ///< Σ_g H_g
  Eigen::VectorXd b;  ///< Σ_g h_g
};

/// E[u_g u_gᵀ] summed over g (u_g = H_g y − h_g) and E[UUᵀ] for U = Σ_g u_g, given y's moments.
Eigen::MatrixXd outer(const Eigen::MatrixXd& hm,
                      const Eigen::VectorXd& off,
                      const Eigen::VectorXd& my,
                      const Eigen::MatrixXd& syy) {
  const Eigen::VectorXd hmy = hm * my;
  return hm * syy * hm - hmy * off.transpose() - off * hmy.transpose() + off * off.transpose();
}

void advance(const Problem& pr, double momentum, IterateMoments& s) {
  const auto& in = *pr.in;
  const double g = in.step;
  const double a0 = 1.0 - g * in.l2;
  const double m = in.moments.mean;
  const double cross = in.moments.groups > 1 ? in.moments.cross : in.moments.second;
  const double b1 = 1.0 + momentum;
  // y = (1 + β)x_t − βx_{t−1}.
  const Eigen::VectorXd my = b1 * s.mx - momentum * s.mp;
  const Eigen::MatrixXd syy =
      b1 * b1 * s.sxx - momentum * b1 * (s.sxp + s.sxp.transpose()) + momentum * momentum * s.spp;
  const Eigen::MatrixXd syx = b1 * s.sxx - momentum * s.sxp.transpose();
  Eigen::MatrixXd per_group = Eigen::MatrixXd::Zero(my.size(), my.size());
  for (std::size_t k = 0; k < in.hessians.size(); ++k) {
    per_group += outer(in.hessians[k], in.offsets[k], my, syy);
  }
  const Eigen::MatrixXd y_u = syy * pr.h - my * pr.b.transpose();  // E[y Uᵀ]
  Eigen::MatrixXd next =
      a0 * a0 * syy - a0 * g * m * (y_u + y_u.transpose()) +
      g * g * (cross * outer(pr.h, pr.b, my, syy) + (in.moments.second - cross) * per_group);
  const Eigen::VectorXd mnext = a0 * my - g * m * (pr.h * my - pr.b);
  Eigen::MatrixXd snext_prev = a0 * syx - g * m * (pr.h * syx - pr.b * s.mx.transpose());
  s.spp = s.sxx;
  s.mp = s.mx;
  s.sxx = 0.5 * (next + next.transpose());
  s.sxp = std::move(snext_prev);
  s.mx = mnext;
}

double gap(const Eigen::MatrixXd& q, const Eigen::VectorXd& x_star, const IterateMoments& s) {
  const Eigen::VectorXd e = s.mx - x_star;
  const Eigen::MatrixXd cov = s.sxx - s.mx * s.mx.transpose();
  return 0.5 * ((q * cov).trace() + e.dot(q * e));
}

}  // namespace

std::vector<double> least_squares_expected_gap(const LeastSquaresCurveInputs& in, int iterations) {
  STRAGGLERSIM_ASSERT(!in.hessians.empty() && in.hessians.size() == in.offsets.size() &&
                          in.step > 0.0 && in.l2 >= 0.0 && iterations >= 0 &&
                          in.moments.groups == static_cast<int>(in.hessians.size()),
                      "the least-squares curve needs one H_g and h_g per group, step > 0, l2 >= 0");
  const Eigen::Index p = in.hessians.front().rows();
  Problem pr{&in, Eigen::MatrixXd::Zero(p, p), Eigen::VectorXd::Zero(p)};
  for (std::size_t k = 0; k < in.hessians.size(); ++k) {
    pr.h += in.hessians[k];
    pr.b += in.offsets[k];
  }
  const Eigen::MatrixXd q = pr.h + in.l2 * Eigen::MatrixXd::Identity(p, p);
  // Minimum-norm minimiser: also right when Q is singular (λ₂ = 0, m < p).
  const Eigen::VectorXd x_star = q.completeOrthogonalDecomposition().solve(pr.b);
  IterateMoments s{Eigen::VectorXd::Zero(p),
                   Eigen::VectorXd::Zero(p),
                   Eigen::MatrixXd::Zero(p, p),
                   Eigen::MatrixXd::Zero(p, p),
                   Eigen::MatrixXd::Zero(p, p)};
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(iterations) + 1);
  out.push_back(gap(q, x_star, s));
  for (int t = 0; t < iterations; ++t) {
    const double momentum =
        in.optimizer == CurveOptimizer::kNesterov && t >= 1 ? (t - 1.0) / (t + 2.0) : 0.0;
    advance(pr, momentum, s);
    out.push_back(gap(q, x_star, s));
  }
  return out;
}

namespace {

/// Σ_k f(b, k) over set partitions of a block of b slots into k parts, f = S(b, k)(−1)^{k−1}(k−1)!
/// (Stirling numbers of the second kind times the Möbius function of the partition lattice).
double block_mobius(int b, int k) {
  static constexpr std::array<std::array<double, 5>, 5> kTable{
      {{0, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 1, -1, 0, 0}, {0, 1, -3, 2, 0}, {0, 1, -7, 12, -6}}};
  return kTable[static_cast<std::size_t>(b)][static_cast<std::size_t>(k)];
}

/// ĉ(σ) for a slot pattern with the given block sizes (a = their sum).
double pattern_coefficient(const CoverageLaw& law, const std::vector<int>& blocks) {
  int a = 0;
  for (const int b : blocks) {
    a += b;
  }
  // Walk every choice of k_B ∈ [1, b_B] per block.
  double total = 0.0;
  std::vector<int> k(blocks.size(), 1);
  while (true) {
    double w = 1.0;
    int j = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      w *= block_mobius(blocks[i], k[i]);
      j += k[i];
    }
    total += w * law.product_moment(a, j);
    std::size_t i = 0;
    while (i < blocks.size() && k[i] == blocks[i]) {
      k[i] = 1;
      ++i;
    }
    if (i == blocks.size()) {
      break;
    }
    ++k[i];
  }
  return total;
}

double log_binomial(int n, int k) {
  return models::log_gamma(n + 1.0) - models::log_gamma(k + 1.0) - models::log_gamma(n - k + 1.0);
}

}  // namespace

double CoverageLaw::product_moment(int a, int j) const {
  const int k = static_cast<int>(covered.size()) - 1;
  STRAGGLERSIM_ASSERT(k >= 1 && a >= 0 && a <= 4 && j >= 0, "product moments need K >= 1, a <= 4");
  if (j > k) {
    return 0.0;
  }
  double out = 0.0;
  for (int n = std::max(j, 1); n <= k; ++n) {
    const double pn = covered[static_cast<std::size_t>(n)];
    if (pn == 0.0) {
      continue;
    }
    double w = 1.0;
    if (rescale == codes::Rescale::kExpected) {
      w = 1.0 / (1.0 - expected_q);
    } else if (rescale == codes::Rescale::kEmpirical) {
      w = static_cast<double>(k) / n;
    }
    out += pn * std::pow(w, a) * std::exp(log_binomial(k - j, n - j) - log_binomial(k, n));
  }
  if (j == 0 && a == 0) {
    out += covered[0];
  }
  return out;
}

namespace {

/// A dense four-mode tensor, column-major (first mode fastest), with its mode sizes.
struct Tensor4 {
  Eigen::VectorXd v;
  std::array<Eigen::Index, 4> dims{};
  [[nodiscard]] Eigen::Index size() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

/// Mode products that count their flops (2 per multiply-add) and, unless counting only, do them.
/// Each applies a matrix to the first mode and rotates the modes one place, so four calls apply
/// one matrix per mode and restore the order.
struct Engine {
  bool count_only = false;
  double flops = 0.0;

  Tensor4 apply(const Eigen::MatrixXd& m, const Tensor4& in) {
    const Eigen::Index rest = in.dims[1] * in.dims[2] * in.dims[3];
    Tensor4 out{{}, {in.dims[1], in.dims[2], in.dims[3], m.rows()}};
    flops += 2.0 * static_cast<double>(m.size()) * static_cast<double>(rest);
    if (!count_only) {
      out.v.resize(out.size());
      Eigen::Map<Eigen::MatrixXd>(out.v.data(), rest, m.rows()).noalias() =
          Eigen::Map<const Eigen::MatrixXd>(in.v.data(), in.dims[0], rest).transpose() *
          m.transpose();
    }
    return out;
  }

  /// The modes rotated one place (the identity on the first mode), a transposing copy.
  [[nodiscard]] Tensor4 rotate(const Tensor4& in) const {
    const Eigen::Index rest = in.dims[1] * in.dims[2] * in.dims[3];
    Tensor4 out{{}, {in.dims[1], in.dims[2], in.dims[3], in.dims[0]}};
    if (!count_only) {
      out.v.resize(out.size());
      Eigen::Map<Eigen::MatrixXd>(out.v.data(), rest, in.dims[0]) =
          Eigen::Map<const Eigen::MatrixXd>(in.v.data(), in.dims[0], rest).transpose();
    }
    return out;
  }

  /// apply(m_g, in) for the groups g = first, …, first + count − 1, m_g the g-th block of `rows`
  /// rows of `stacked`, as one GEMM: the large operand is packed once instead of once per group.
  std::vector<Tensor4> apply_each(const Eigen::MatrixXd& stacked,
                                  Eigen::Index rows,
                                  Eigen::Index first,
                                  Eigen::Index count,
                                  const Tensor4& in) {
    const Eigen::Index rest = in.dims[1] * in.dims[2] * in.dims[3];
    flops += 2.0 * static_cast<double>(count * rows * stacked.cols()) * static_cast<double>(rest);
    std::vector<Tensor4> out(static_cast<std::size_t>(count),
                             Tensor4{{}, {in.dims[1], in.dims[2], in.dims[3], rows}});
    if (!count_only) {
      Eigen::MatrixXd all(rest, count * rows);
      all.noalias() = Eigen::Map<const Eigen::MatrixXd>(in.v.data(), in.dims[0], rest).transpose() *
                      stacked.middleRows(first * rows, count * rows).transpose();
      for (std::size_t g = 0; g < out.size(); ++g) {
        // Column-major: the columns of one group are one contiguous run, the rotated tensor.
        const auto column = static_cast<Eigen::Index>(g) * rows;
        out[g].v = Eigen::Map<const Eigen::VectorXd>(all.col(column).data(), rest * rows);
      }
    }
    return out;
  }

  /// apply([c·I, 0], in): the first `rows` coordinates of the first mode, scaled by c.
  Tensor4 apply_leading(double c, Eigen::Index rows, const Tensor4& in) {
    const Eigen::Index rest = in.dims[1] * in.dims[2] * in.dims[3];
    Tensor4 out{{}, {in.dims[1], in.dims[2], in.dims[3], rows}};
    flops += static_cast<double>(rows) * static_cast<double>(rest);
    if (!count_only) {
      out.v.resize(out.size());
      Eigen::Map<Eigen::MatrixXd>(out.v.data(), rest, rows) =
          c * Eigen::Map<const Eigen::MatrixXd>(in.v.data(), in.dims[0], rest)
                  .topRows(rows)
                  .transpose();
    }
    return out;
  }
};

/// Σ_g α_g-free pieces of one step, acting on w = (y_t, 1) (dimension p + 1) and producing x_{t+1}.
struct StepOperators {
  double fixed = 1.0;                  ///< B₀ = [(1 − γλ₂)I, 0]
  Eigen::MatrixXd sum;                 ///< Σ_g G_g
  std::vector<Eigen::MatrixXd> group;  ///< G_g = [−γH_g, γh_g]
  Eigen::MatrixXd stacked;             ///< the G_g one above the other
};

/// Doubles in one batch of stacked first products (8 MB).
constexpr Eigen::Index kBatchEntries = Eigen::Index{1} << 20;

/// Slot tokens of a representative pattern: 'B' takes B₀, 'S' takes Σ_g G_g (a block of one),
/// '2'..'4' start a block of that many slots taking the same G_g.
int active_slots(const std::string& key) {
  int n = 0;
  for (const char c : key) {
    n += c == 'B' || c == 'S' ? 1 : c - '0';
  }
  return n;
}

/// E[B(α)^{⊗k}] ⊗ I^{⊗(4−k)} applied to a tensor symmetric in its first k modes, evaluated pattern
/// by pattern; patterns sharing a prefix of slots share the mode products behind it.
class PatternEvaluator {
 public:
  PatternEvaluator(Engine& engine, const StepOperators& ops, Tensor4 input, int active)
      : engine_(engine), ops_(ops), active_(active) {
    memo_.emplace("", std::move(input));
  }

  const Tensor4& at(const std::string& key) {
    if (const auto it = memo_.find(key); it != memo_.end()) {
      return it->second;
    }
    const char last = key.back();
    const std::string prefix = key.substr(0, key.size() - 1);
    const Tensor4& base = at(prefix);
    if (last == 'B') {
      return memo_.emplace(key, engine_.apply_leading(ops_.fixed, ops_.sum.rows(), base))
          .first->second;
    }
    if (last == 'S') {
      return memo_.emplace(key, engine_.apply(ops_.sum, base)).first->second;
    }
    // Blocks of 2 .. (active slots left) from one chain of mode products per group.
    const int longest = active_ - active_slots(prefix);
    STRAGGLERSIM_ASSERT(last - '0' <= longest, "a group block longer than the free slots");
    std::vector<Tensor4> sums(static_cast<std::size_t>(longest) + 1);
    // Batches of groups keep the stacked products to about kBatchEntries doubles.
    const auto groups = static_cast<Eigen::Index>(ops_.group.size());
    const Eigen::Index rows = ops_.sum.rows();
    const Eigen::Index batch = std::max<Eigen::Index>(
        1, kBatchEntries / std::max<Eigen::Index>(1, base.size() / base.dims[0] * rows));
    for (Eigen::Index g0 = 0; g0 < groups; g0 += batch) {
      const Eigen::Index count = std::min(batch, groups - g0);
      std::vector<Tensor4> first = engine_.apply_each(ops_.stacked, rows, g0, count, base);
      for (Eigen::Index i = 0; i < count; ++i) {
        Tensor4 chain = std::move(first[static_cast<std::size_t>(i)]);
        for (int b = 2; b <= longest; ++b) {
          chain = engine_.apply(ops_.group[static_cast<std::size_t>(g0 + i)], chain);
          auto& s = sums[static_cast<std::size_t>(b)];
          if (engine_.count_only) {
            s.dims = chain.dims;
          } else if (s.v.size() == 0) {
            s = chain;
          } else {
            s.v += chain.v;
          }
        }
      }
    }
    for (int b = 2; b <= longest; ++b) {
      memo_.emplace(prefix + static_cast<char>('0' + b),
                    std::move(sums[static_cast<std::size_t>(b)]));
    }
    return memo_.at(key);
  }

 private:
  Engine& engine_;
  const StepOperators& ops_;
  int active_;
  std::map<std::string, Tensor4> memo_;  // node-based: references survive insertions
};

/// The block-size multisets of at most four slots, largest block first.
const std::array<std::vector<int>, 12>& shapes() {
  static const std::array<std::vector<int>, 12> all{
      {{}, {1}, {2}, {1, 1}, {3}, {2, 1}, {1, 1, 1}, {4}, {3, 1}, {2, 2}, {2, 1, 1}, {1, 1, 1, 1}}};
  return all;
}

double factorial(int n) {
  double out = 1.0;
  for (int i = 2; i <= n; ++i) {
    out *= i;
  }
  return out;
}

/// Number of (slot set, set partition) patterns on k slots whose blocks have the sizes `blocks`:
/// C(k, a)·a!/(Π b!·Π multiplicity!) = k!/((k − a)!·Π b!·Π multiplicity!).
double shape_count(int k, const std::vector<int>& blocks) {
  int a = 0;
  double denominator = 1.0;
  for (const int b : blocks) {
    a += b;
    denominator *= factorial(b);
  }
  for (int size = 1; size <= 4; ++size) {
    denominator *= factorial(static_cast<int>(std::count(blocks.begin(), blocks.end(), size)));
  }
  return factorial(k) / (factorial(k - a) * denominator);
}

/// (1/k!) Σ over the permutations of the first k modes (all of one size).
Tensor4 symmetrise_leading(const Tensor4& t, int k) {
  if (k < 2) {
    return t;
  }
  Tensor4 out{Eigen::VectorXd::Zero(t.size()), t.dims};
  const std::array<Eigen::Index, 4> stride{
      1, t.dims[0], t.dims[0] * t.dims[1], t.dims[0] * t.dims[1] * t.dims[2]};
  std::array<int, 4> perm{0, 1, 2, 3};
  do {
    std::array<Eigen::Index, 4> s{};
    for (std::size_t i = 0; i < 4; ++i) {
      s[i] = stride[static_cast<std::size_t>(perm[i])];
    }
    Eigen::Index at = 0;
    for (Eigen::Index l = 0; l < t.dims[3]; ++l) {
      for (Eigen::Index c = 0; c < t.dims[2]; ++c) {
        for (Eigen::Index j = 0; j < t.dims[1]; ++j) {
          const Eigen::Index base = j * s[1] + c * s[2] + l * s[3];
          for (Eigen::Index i = 0; i < t.dims[0]; ++i) {
            out.v(at++) += t.v(base + i * s[0]);
          }
        }
      }
    }
  } while (std::next_permutation(perm.begin(), perm.begin() + k));
  out.v /= factorial(k);
  return out;
}

/// Fixed data of the fourth-moment recursion.
struct SpreadSetup {
  Eigen::Index p = 0;        ///< features
  Eigen::Index carried = 0;  ///< coordinates carried into the next state: 1 (GD) or p + 1
  bool nesterov = false;
  StepOperators ops;
};

/// E[v^{⊗4}] for v = (y_t, x_t, 1) from E[z^{⊗4}], z = (x_t, x_{t−1}, 1), in place: on each mode
/// the x_{t−1} coordinates become y_t = (1 + β)x_t − βx_{t−1} (GD: v = z). 4·p·P³ multiply-adds.
void to_momentum_coordinates(Engine& engine, const SpreadSetup& s, double beta, Tensor4& z) {
  if (!s.nesterov) {
    return;
  }
  const Eigen::Index dim = z.dims[0];
  engine.flops += 4.0 * 3.0 * static_cast<double>(s.p) * std::pow(static_cast<double>(dim), 3);
  if (engine.count_only) {
    return;
  }
  Eigen::Index inner = 1;
  for (int mode = 0; mode < 4; ++mode) {
    const Eigen::Index outer = z.size() / (inner * dim);
    for (Eigen::Index o = 0; o < outer; ++o) {
      Eigen::Map<Eigen::MatrixXd> slice(z.v.data() + o * inner * dim, inner, dim);
      slice.middleCols(s.p, s.p) =
          (1.0 + beta) * slice.leftCols(s.p) - beta * slice.middleCols(s.p, s.p);
    }
    inner *= dim;
  }
}

/// E[w^{⊗k} ⊗ r^{⊗(4−k)}] gathered from E[v^{⊗4}]: w = (y_t, 1), r = (1) (GD) or (x_t, 1).
Tensor4 gather_block(const SpreadSetup& s, const Tensor4& v, int k) {
  const Eigen::Index dim = v.dims[0];
  std::vector<Eigen::Index> w_index;
  std::vector<Eigen::Index> r_index;
  for (Eigen::Index i = 0; i < s.p; ++i) {
    // Nesterov: y_t sits where x_{t−1} was; GD: y_t = x_t.
    w_index.push_back(s.nesterov ? s.p + i : i);
    if (s.nesterov) {
      r_index.push_back(i);
    }
  }
  w_index.push_back(dim - 1);
  r_index.push_back(dim - 1);
  std::array<const std::vector<Eigen::Index>*, 4> index{};
  Tensor4 out;
  for (std::size_t m = 0; m < 4; ++m) {
    index[m] = static_cast<int>(m) < k ? &w_index : &r_index;
    out.dims[m] = static_cast<Eigen::Index>(index[m]->size());
  }
  out.v.resize(out.size());
  Eigen::Index at = 0;
  for (const Eigen::Index l : *index[3]) {
    for (const Eigen::Index c : *index[2]) {
      for (const Eigen::Index j : *index[1]) {
        const Eigen::Index base = dim * (j + dim * (c + dim * l));
        for (const Eigen::Index i : *index[0]) {
          out.v(at++) = v.v(base + i);
        }
      }
    }
  }
  return out;
}

/// E[z_{t+1}^{⊗4}] from E[z_t^{⊗4}]. The next state is (x⁺, r) with x⁺ = B(α)w,
/// B(α) = B₀ + Σ_g α_g G_g, and r carried; by symmetry only the blocks with the k slots of x⁺
/// first are needed: E[x⁺^{⊗k} ⊗ r^{⊗(4−k)}] = E[B(α)^{⊗k}] E[w^{⊗k} ⊗ r^{⊗(4−k)}], k = 0..4.
// Scatter: each slot of the next state is in x⁺ (index < p) or in r; the block with those of
// x⁺ first, in order, holds the value.
Tensor4 scatter_blocks(const std::array<Tensor4, 5>& block, Eigen::Index p, Eigen::Index dim) {
  Tensor4 out{{}, {dim, dim, dim, dim}};
  out.v.resize(out.size());
  Eigen::Index at = 0;
  std::array<Eigen::Index, 4> idx{};
  for (idx[3] = 0; idx[3] < dim; ++idx[3]) {
    for (idx[2] = 0; idx[2] < dim; ++idx[2]) {
      for (idx[1] = 0; idx[1] < dim; ++idx[1]) {
        for (idx[0] = 0; idx[0] < dim; ++idx[0]) {
          std::array<Eigen::Index, 4> order{};
          std::size_t k = 0;
          for (std::size_t i = 0; i < 4; ++i) {
            if (idx[i] < p) {
              order[k++] = idx[i];
            }
          }
          std::size_t n = k;
          for (std::size_t i = 0; i < 4; ++i) {
            if (idx[i] >= p) {
              order[n++] = idx[i] - p;
            }
          }
          const Tensor4& b = block[k];
          out.v(at++) = b.v(order[0] +
                            b.dims[0] * (order[1] + b.dims[1] * (order[2] + b.dims[2] * order[3])));
        }
      }
    }
  }
  return out;
}

Tensor4 spread_step(Engine& engine,
                    const SpreadSetup& s,
                    const std::array<std::vector<double>, 5>& weights,
                    double beta,
                    Tensor4 z) {
  to_momentum_coordinates(engine, s, beta, z);
  std::array<Tensor4, 5> block;
  for (int k = 0; k <= 4; ++k) {
    Tensor4 x;
    if (engine.count_only) {
      x.dims = {k > 0 ? s.p + 1 : s.carried,
                k > 1 ? s.p + 1 : s.carried,
                k > 2 ? s.p + 1 : s.carried,
                k > 3 ? s.p + 1 : s.carried};
    } else {
      x = gather_block(s, z, k);
    }

    PatternEvaluator eval(engine, s.ops, std::move(x), k);
    // Every pattern ends with the 4 − k carried modes first and the k slots of x⁺ after them.
    Tensor4 acc;
    acc.dims = {k < 4 ? s.carried : s.p,
                k < 3 ? s.carried : s.p,
                k < 2 ? s.carried : s.p,
                k < 1 ? s.carried : s.p};
    if (!engine.count_only) {
      acc.v = Eigen::VectorXd::Zero(acc.size());
    }
    for (std::size_t i = 0; i < shapes().size(); ++i) {
      const auto& shape = shapes()[i];
      std::string key;
      int a = 0;
      for (const int b : shape) {
        key += b == 1 ? 'S' : static_cast<char>('0' + b);
        a += b;
      }
      if (a > k) {
        continue;
      }
      key += std::string(static_cast<std::size_t>(k - a), 'B');
      const Tensor4& r = eval.at(key);
      if (!engine.count_only) {
        acc.v += weights[static_cast<std::size_t>(k)][i] * r.v;
      }
    }
    for (int j = k; j < 4; ++j) {
      acc = engine.rotate(acc);
    }
    block[static_cast<std::size_t>(k)] = engine.count_only ? acc : symmetrise_leading(acc, k);
  }
  const Eigen::Index dim = s.p + s.carried;
  if (engine.count_only) {
    return Tensor4{{}, {dim, dim, dim, dim}};
  }
  return scatter_blocks(block, s.p, dim);
}

SpreadSetup spread_setup(const LeastSquaresCurveInputs& in) {
  SpreadSetup s;
  s.p = in.hessians.front().rows();
  s.nesterov = in.optimizer == CurveOptimizer::kNesterov;
  s.carried = s.nesterov ? s.p + 1 : 1;
  const Eigen::Index p = s.p;
  s.ops.fixed = 1.0 - in.step * in.l2;
  s.ops.sum = Eigen::MatrixXd::Zero(p, p + 1);
  for (std::size_t k = 0; k < in.hessians.size(); ++k) {
    Eigen::MatrixXd g(p, p + 1);
    g.leftCols(p) = -in.step * in.hessians[k];
    g.col(p) = in.step * in.offsets[k];
    s.ops.sum += g;
    s.ops.group.push_back(std::move(g));
  }
  s.ops.stacked.resize(static_cast<Eigen::Index>(s.ops.group.size()) * p, p + 1);
  for (std::size_t k = 0; k < s.ops.group.size(); ++k) {
    s.ops.stacked.middleRows(static_cast<Eigen::Index>(k) * p, p) = s.ops.group[k];
  }
  return s;
}

std::array<std::vector<double>, 5> pattern_weights(const CoverageLaw& law) {
  std::array<std::vector<double>, 5> out;
  for (int k = 0; k <= 4; ++k) {
    for (const auto& shape : shapes()) {
      int a = 0;
      for (const int b : shape) {
        a += b;
      }
      out[static_cast<std::size_t>(k)].push_back(
          a <= k ? shape_count(k, shape) * pattern_coefficient(law, shape) : 0.0);
    }
  }
  return out;
}

}  // namespace

double least_squares_gap_spread_flops(const LeastSquaresCurveInputs& in) {
  STRAGGLERSIM_ASSERT(!in.hessians.empty() && in.hessians.size() == in.offsets.size(),
                      "the gap spread needs one H_g and h_g per group");
  const SpreadSetup s = spread_setup(in);
  Engine engine{true, 0.0};
  const Eigen::Index dim = s.p + s.carried;
  // β ≠ 0: the densest change of coordinates.
  (void)spread_step(engine, s, {}, 0.5, Tensor4{{}, {dim, dim, dim, dim}});
  return engine.flops;
}

LeastSquaresGapSpread least_squares_gap_spread(const LeastSquaresCurveInputs& in,
                                               const CoverageLaw& law,
                                               int iterations,
                                               double max_work) {
  STRAGGLERSIM_ASSERT(!in.hessians.empty() && in.hessians.size() == in.offsets.size() &&
                          law.covered.size() == in.hessians.size() + 1 && in.step > 0.0 &&
                          iterations >= 0,
                      "the gap spread needs one H_g, h_g per group and P(N) for K groups");
  const SpreadSetup setup = spread_setup(in);
  const Eigen::Index p = setup.p;
  const Eigen::Index dim = p + setup.carried;  // (x_t[, x_{t−1}], 1)
  const Eigen::Index one = dim - 1;
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(p, p);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
  for (std::size_t k = 0; k < in.hessians.size(); ++k) {
    h += in.hessians[k];
    b += in.offsets[k];
  }
  const Eigen::MatrixXd q = h + in.l2 * Eigen::MatrixXd::Identity(p, p);
  const Eigen::VectorXd x_star = q.completeOrthogonalDecomposition().solve(b);
  // f − f* = ½ zᵀ Q̃ z with Q̃ acting on (x_t, 1) only.
  Eigen::MatrixXd qt = Eigen::MatrixXd::Zero(dim, dim);
  qt.topLeftCorner(p, p) = q;
  qt.block(0, one, p, 1) = -q * x_star;
  qt.block(one, 0, 1, p) = (-q * x_star).transpose();
  qt(one, one) = x_star.dot(q * x_star);
  const Eigen::Map<const Eigen::VectorXd> qv(qt.data(), dim * dim);

  const double flops = least_squares_gap_spread_flops(in);
  const int sd_iterations =
      static_cast<int>(std::min<double>(iterations, std::floor(max_work / flops)));
  const auto weights = pattern_weights(law);

  LeastSquaresGapSpread out;
  out.flops_per_iteration = flops;
  const Eigen::Index d2 = dim * dim;
  Tensor4 z{Eigen::VectorXd::Zero(d2 * d2), {dim, dim, dim, dim}};
  z.v(one + dim * one + d2 * one + d2 * dim * one) = 1.0;  // x₀ = 0 (and x_{−1} = 0)
  auto record = [&] {
    const Eigen::Map<const Eigen::MatrixXd> zm(z.v.data(), d2, d2);
    // E[zzᵀ] is the slice with the last two indices at the constant coordinate.
    const double mean = 0.5 * qv.dot(zm.col(one + dim * one));
    const double second = 0.25 * qv.dot(zm * qv);
    out.mean.push_back(mean);
    out.sd.push_back(std::sqrt(std::max(0.0, second - mean * mean)));
  };
  record();
  Engine engine;
  for (int t = 0; t < sd_iterations; ++t) {
    const double beta = setup.nesterov && t >= 1 ? (t - 1.0) / (t + 2.0) : 0.0;
    z = spread_step(engine, setup, weights, beta, z);
    record();
  }
  return out;
}

}  // namespace stragglersim::sim

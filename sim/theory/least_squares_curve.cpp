#include "sim/theory/least_squares_curve.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>

#include "models/base/invariant.h"

namespace stragglersim::sim {
namespace {

/// First and second moments of (x_t, x_{t−1}).
struct Moments {
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

void advance(const Problem& pr, double momentum, Moments& s) {
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

double gap(const Eigen::MatrixXd& q, const Eigen::VectorXd& x_star, const Moments& s) {
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
  Moments s{Eigen::VectorXd::Zero(p),
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

/// A dense P × P × P × P tensor, index i + P j + P² k + P³ l.
using Tensor = Eigen::VectorXd;

/// out(j, k, l, i') = Σ_i M(i', i)·in(i, j, k, l): M on the first mode, then the modes rotated
/// one place, so four calls apply one matrix to each mode and restore the order.
void apply_rotate(const Eigen::MatrixXd& m, const Tensor& in, Tensor& out, Eigen::Index p) {
  const Eigen::Index p3 = p * p * p;
  out.resize(in.size());
  Eigen::Map<Eigen::MatrixXd>(out.data(), p3, p).noalias() =
      Eigen::Map<const Eigen::MatrixXd>(in.data(), p, p3).transpose() * m.transpose();
}

/// (1/24) Σ over the permutations of the four modes.
Tensor symmetrise(const Tensor& t, Eigen::Index p) {
  Tensor out(t.size());
  const Eigen::Index p2 = p * p;
  const Eigen::Index p3 = p2 * p;
  std::array<int, 4> perm{0, 1, 2, 3};
  std::array<Eigen::Index, 4> stride{1, p, p2, p3};
  out.setZero();
  do {
    const Eigen::Index s0 = stride[static_cast<std::size_t>(perm[0])];
    const Eigen::Index s1 = stride[static_cast<std::size_t>(perm[1])];
    const Eigen::Index s2 = stride[static_cast<std::size_t>(perm[2])];
    const Eigen::Index s3 = stride[static_cast<std::size_t>(perm[3])];
    Eigen::Index at = 0;
    for (Eigen::Index l = 0; l < p; ++l) {
      for (Eigen::Index k = 0; k < p; ++k) {
        for (Eigen::Index j = 0; j < p; ++j) {
          const Eigen::Index base = j * s1 + k * s2 + l * s3;
          for (Eigen::Index i = 0; i < p; ++i) {
            out(at++) += t(base + i * s0);
          }
        }
      }
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return out / 24.0;
}

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
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
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

double least_squares_gap_spread_flops(const LeastSquaresCurveInputs& in) {
  STRAGGLERSIM_ASSERT(!in.hessians.empty(), "the gap spread needs at least one group");
  const auto p = static_cast<double>(in.hessians.front().rows());
  const double dim = in.optimizer == CurveOptimizer::kNesterov ? 2.0 * p + 1.0 : p + 1.0;
  return (6.0 * static_cast<double>(in.hessians.size()) + 20.0) * 2.0 * std::pow(dim, 5);
}

LeastSquaresGapSpread least_squares_gap_spread(const LeastSquaresCurveInputs& in,
                                               const CoverageLaw& law,
                                               int iterations,
                                               double max_work) {
  STRAGGLERSIM_ASSERT(!in.hessians.empty() && in.hessians.size() == in.offsets.size() &&
                          law.covered.size() == in.hessians.size() + 1 && in.step > 0.0 &&
                          iterations >= 0,
                      "the gap spread needs one H_g, h_g per group and P(N) for K groups");
  const Eigen::Index p = in.hessians.front().rows();
  const bool nesterov = in.optimizer == CurveOptimizer::kNesterov;
  const Eigen::Index dim = nesterov ? 2 * p + 1 : p + 1;  // (x_t[, x_{t−1}], 1)
  const Eigen::Index one = dim - 1;
  const double g = in.step;
  const double a0 = 1.0 - g * in.l2;
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

  const auto groups = static_cast<int>(in.hessians.size());
  const double flops = least_squares_gap_spread_flops(in);
  const int sd_iterations =
      static_cast<int>(std::min<double>(iterations, std::floor(max_work / flops)));

  LeastSquaresGapSpread out;
  out.flops_per_iteration = flops;
  const Eigen::Index d2 = dim * dim;
  Tensor z = Tensor::Zero(d2 * d2);
  z(one + dim * one + d2 * one + d2 * dim * one) = 1.0;  // x₀ = 0 (and x_{−1} = 0)
  auto record = [&] {
    const Eigen::Map<const Eigen::MatrixXd> zm(z.data(), d2, d2);
    // E[zzᵀ] is the slice with the last two indices at the constant coordinate.
    const double mean = 0.5 * qv.dot(zm.col(one + dim * one));
    const double second = 0.25 * qv.dot(zm * qv);
    out.mean.push_back(mean);
    out.sd.push_back(std::sqrt(std::max(0.0, second - mean * mean)));
  };
  record();
  // Shapes: {block sizes}, count among the 52 slot patterns.
  const double c0 = pattern_coefficient(law, {});
  const double c1 = 4.0 * pattern_coefficient(law, {1});
  const double c11 = 6.0 * pattern_coefficient(law, {1, 1});
  const double c2 = 6.0 * pattern_coefficient(law, {2});
  const double c111 = 4.0 * pattern_coefficient(law, {1, 1, 1});
  const double c21 = 12.0 * pattern_coefficient(law, {2, 1});
  const double c3 = 4.0 * pattern_coefficient(law, {3});
  const double c1111 = pattern_coefficient(law, {1, 1, 1, 1});
  const double c211 = 6.0 * pattern_coefficient(law, {2, 1, 1});
  const double c22 = 3.0 * pattern_coefficient(law, {2, 2});
  const double c31 = 4.0 * pattern_coefficient(law, {3, 1});
  const double c4 = pattern_coefficient(law, {4});

  std::vector<Eigen::MatrixXd> tg(static_cast<std::size_t>(groups));
  Eigen::MatrixXd t0;
  Tensor a;
  Tensor bb;
  Tensor c;
  Tensor d;
  Tensor e;
  for (int t = 0; t < sd_iterations; ++t) {
    const double beta = nesterov && t >= 1 ? (t - 1.0) / (t + 2.0) : 0.0;
    // x⁺ = a₀y − γΣ_g α_g (H_g y − h_g), y = (1 + β)x_t − βx_{t−1}.
    t0 = Eigen::MatrixXd::Zero(dim, dim);
    t0.topLeftCorner(p, p) = a0 * (1.0 + beta) * Eigen::MatrixXd::Identity(p, p);
    if (nesterov) {
      t0.block(0, p, p, p) = -a0 * beta * Eigen::MatrixXd::Identity(p, p);
      t0.block(p, 0, p, p) = Eigen::MatrixXd::Identity(p, p);
    }
    t0(one, one) = 1.0;
    Eigen::MatrixXd s = Eigen::MatrixXd::Zero(dim, dim);
    for (int k = 0; k < groups; ++k) {
      auto& m = tg[static_cast<std::size_t>(k)];
      m = Eigen::MatrixXd::Zero(dim, dim);
      const auto& hk = in.hessians[static_cast<std::size_t>(k)];
      m.topLeftCorner(p, p) = -g * (1.0 + beta) * hk;
      if (nesterov) {
        m.block(0, p, p, p) = g * beta * hk;
      }
      m.block(0, one, p, 1) = g * in.offsets[static_cast<std::size_t>(k)];
      s += m;
    }
    Tensor acc = Tensor::Zero(z.size());
    // Shapes of singletons only: S on the first a slots, T₀ on the rest.
    Tensor prefix = z;
    const std::array<double, 5> singles{c0, c1, c11, c111, c1111};
    for (int k = 0; k <= 4; ++k) {
      Tensor rest = prefix;
      for (int slot = k; slot < 4; ++slot) {
        apply_rotate(t0, rest, a, dim);
        rest.swap(a);
      }
      acc += singles[static_cast<std::size_t>(k)] * rest;
      if (k < 4) {
        apply_rotate(s, prefix, a, dim);
        prefix.swap(a);
      }
    }
    // Σ_g T_g on the first two, three, four slots.
    Tensor p2 = Tensor::Zero(z.size());
    Tensor p3 = Tensor::Zero(z.size());
    Tensor p4 = Tensor::Zero(z.size());
    for (const auto& m : tg) {
      apply_rotate(m, z, a, dim);
      apply_rotate(m, a, bb, dim);
      p2 += bb;
      apply_rotate(m, bb, c, dim);
      p3 += c;
      apply_rotate(m, c, d, dim);
      p4 += d;
    }
    acc += c4 * p4;
    apply_rotate(t0, p3, a, dim);
    acc += c3 * a;
    apply_rotate(s, p3, a, dim);
    acc += c31 * a;
    apply_rotate(t0, p2, a, dim);
    apply_rotate(t0, a, bb, dim);
    acc += c2 * bb;
    apply_rotate(s, p2, a, dim);
    apply_rotate(t0, a, bb, dim);
    acc += c21 * bb;
    apply_rotate(s, a, bb, dim);
    acc += c211 * bb;
    e = Tensor::Zero(z.size());
    for (const auto& m : tg) {
      apply_rotate(m, p2, a, dim);
      apply_rotate(m, a, bb, dim);
      e += bb;
    }
    acc += c22 * e;
    z = symmetrise(acc, dim);
    record();
  }
  return out;
}

}  // namespace stragglersim::sim

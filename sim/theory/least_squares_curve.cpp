#include "sim/theory/least_squares_curve.h"

#include <Eigen/Dense>
#include <algorithm>

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

}  // namespace stragglersim::sim

#include "models/optimum.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <deque>
#include <variant>
#include <vector>

#include "models/base/data_traffic.h"
#include "models/base/invariant.h"
#include "models/base/stop_request.h"
#include "models/dense_kernels.h"
#include "models/worker_pool.h"

namespace stragglersim::models {
namespace {

constexpr Eigen::Index kDenseFeatureLimit = 4000;
/// m·p² flops of one Gram matrix (or Newton Hessian) that the exact solvers may spend.
constexpr double kExactWorkLimit = 1e10;
/// Curvature pairs L-BFGS keeps.
constexpr std::size_t kLbfgsMemory = 20;
/// Conjugate gradient recomputes its residual from the data this often, so the recursion's
/// rounding cannot fake the certificate.
constexpr int kResidualRefresh = 50;
/// Newton stops when λ²/2 ≤ kNewtonTolerance·max(1, |f|) (λ² = ∇fᵀH⁻¹∇f, an estimate of
/// 2(f − f*) that is exact near x*): below f's rounding.
constexpr double kNewtonTolerance = 1e-16;
/// …or when the line search cannot decrease f, provided λ²/2 ≤ this·max(1, |f|).
constexpr double kNewtonLooseTolerance = 1e-10;
/// A predicted decrease t·λ² below this·max(1, |f|) is within f's rounding: the search ends.
constexpr double kRoundingTolerance = 1e-14;
/// Newton iterations before the solve is declared failed (logistic from x = 0 needs about 10).
constexpr int kNewtonIterations = 50;
/// Row chunks of one data pass of the solvers: fixed by the data, never by the thread count.
constexpr Eigen::Index kPassChunks = 64;
/// Rows below which a chunk is not worth a task.
constexpr Eigen::Index kMinChunkRows = 1024;
/// Rows of the scaled copy packed at a time: their features are read once from memory and then
/// from cache, one block of four columns after another (100 KB at p = 200).
constexpr Eigen::Index kPackRows = 64;
/// Tasks of a Newton Hessian: enough to share two to eight cores evenly.
constexpr Eigen::Index kHessianTasks = 8;

int pass_chunks(Eigen::Index m) {
  return static_cast<int>(std::clamp<Eigen::Index>(m / kMinChunkRows, 1, kPassChunks));
}

/// The dense features, the scaled copy √(D/m)·A of Newton's Hessian (its columns padded with
/// zeros to a multiple of internal::kGramBlock, packed for internal::dense_gram_columns) and its
/// Gram matrix, allocated once.
struct NewtonScratch {
  DenseRows features;
  Eigen::VectorXd scaled;  ///< packed as internal::gram_packed_index says
  DenseRows gram;
};

DenseRows dense_features(const Dataset& data) {
  return std::visit([](const auto& a) { return DenseRows(a); }, data.features);
}

NewtonScratch newton_scratch(const Dataset& data) {
  NewtonScratch out{dense_features(data), Eigen::VectorXd(), DenseRows()};
  const Eigen::Index p = out.features.cols();
  const Eigen::Index ld =
      (p + internal::kGramBlock - 1) / internal::kGramBlock * internal::kGramBlock;
  out.scaled = Eigen::VectorXd::Zero(out.features.rows() * ld);
  out.gram = DenseRows::Zero(ld, ld);
  return out;
}

/// Bytes of one pass over a dense copy of the features and the labels.
std::int64_t dense_bytes(const Objective& f) {
  return static_cast<std::int64_t>(sizeof(double)) * (f.rows() * f.dimension() + f.rows());
}

/// One pass.
double tolerance_at_zero(const Objective& f, double relative) {
  return relative * std::max(1.0, f.gradient(Eigen::VectorXd::Zero(f.dimension())).norm());
}

/// The solve's result at x, f and ‖∇f‖ recomputed by the objective itself (two more passes
/// after the solve's own `passes`).
Optimum finish(
    const Objective& f, Eigen::VectorXd x, std::string method, int iterations, int passes) {
  Optimum out;
  out.value = f.value(x);
  out.gradient_norm = f.gradient(x).norm();
  out.data_passes = passes + 2;
  out.x = std::move(x);
  out.method = std::move(method);
  out.iterations = iterations;
  return out;
}

Optimum failed(Optimum out, std::string why) {
  out.converged = false;
  out.failure = std::move(why);
  return out;
}

/// The last iterate of a solve whose budget ran out: failed unless it meets the certificate.
Optimum out_of_budget(Optimum out, double tolerance) {
  if (out.gradient_norm <= tolerance) {
    return out;
  }
  std::string why =
      fmt::format("{} did not reach ‖∇f‖ ≤ {:.3g} within {} iterations (‖∇f‖ = {:.3g})",
                  out.method,
                  tolerance,
                  out.iterations,
                  out.gradient_norm);
  return failed(std::move(out), std::move(why));
}

Optimum normal_equations(const Objective& f) {
  const Eigen::MatrixXd a = dense_features(f.data());
  const double m = static_cast<double>(f.rows());
  const Eigen::VectorXd& b = f.data().labels;
  // Three passes: the dense copy, AᵀA and Aᵀb (these two over the copy and the labels).
  count_data_bytes(f.data().stored_bytes() + 2 * dense_bytes(f));
  Eigen::MatrixXd gram = a.transpose() * a / m;
  gram.diagonal().array() += f.l2();
  const Eigen::VectorXd rhs = a.transpose() * b / m;
  return finish(
      f, gram.completeOrthogonalDecomposition().solve(rhs), "normal equations (COD)", 1, 3);
}

/// f(x) and ∇f(x) from one pass over the data, in kPassChunks fixed row chunks (run on `pool`
/// when given) summed in chunk order: the same bytes for every thread count.
double value_and_gradient(const Objective& f,
                          const Eigen::VectorXd& x,
                          Eigen::VectorXd& g,
                          WorkerPool* pool) {
  throw_if_stop_requested();
  const Eigen::Index m = f.rows();
  const int chunks = pass_chunks(m);
  Eigen::MatrixXd partial = Eigen::MatrixXd::Zero(f.dimension(), chunks);
  std::vector<double> sums(static_cast<std::size_t>(chunks), 0.0);
  run_tasks(pool, chunks, [&](int c) {
    sums[static_cast<std::size_t>(c)] =
        f.loss().accumulate(f.data(), partition_rows(m, chunks, c), x, partial.col(c));
  });
  g = partial.col(0);
  double sum = sums[0];
  for (int c = 1; c < chunks; ++c) {
    g += partial.col(c);
    sum += sums[static_cast<std::size_t>(c)];
  }
  const double rows = static_cast<double>(m);
  g = g / rows + f.l2() * x;
  return sum / rows + 0.5 * f.l2() * x.squaredNorm();
}

/// f(x) alone (a line-search trial), chunked as value_and_gradient.
double value_only(const Objective& f, const Eigen::VectorXd& x, WorkerPool* pool) {
  throw_if_stop_requested();
  const Eigen::Index m = f.rows();
  const int chunks = pass_chunks(m);
  std::vector<double> sums(static_cast<std::size_t>(chunks), 0.0);
  run_tasks(pool, chunks, [&](int c) {
    sums[static_cast<std::size_t>(c)] =
        f.loss().accumulate_value(f.data(), partition_rows(m, chunks, c), x);
  });
  double sum = 0.0;
  for (const double v : sums) {
    sum += v;
  }
  return sum / static_cast<double>(m) + 0.5 * f.l2() * x.squaredNorm();
}

/// The column ranges of a Hessian's tasks (ld a multiple of 8): up to kHessianTasks runs of whole
/// blocks of 8 columns with about equal shares of the lower triangle, first column first. Each
/// task reads the scaled data once, so fewer, wider tasks read less; which task computes an
/// entry changes none of its bytes.
std::vector<Eigen::Index> hessian_task_columns(Eigen::Index ld) {
  const Eigen::Index blocks = ld / internal::kGramBlock;
  const Eigen::Index total = blocks * (blocks + 1) / 2;  // block k holds blocks − k tiles' rows
  std::vector<Eigen::Index> bounds{0};
  Eigen::Index done = 0;
  for (Eigen::Index k = 0; k < blocks; ++k) {
    done += blocks - k;
    const auto tasks = static_cast<Eigen::Index>(bounds.size());
    if (done * kHessianTasks >= tasks * total || k + 1 == blocks) {
      bounds.push_back((k + 1) * internal::kGramBlock);
    }
  }
  return bounds;
}

/// The lower triangle of AᵀDA/m + λ₂I, D = diag ℓ''(a_iᵀx; b_i), as S = √(D/m)·A (zero-padded
/// to a multiple of 8 columns) and then SᵀS by dense_gram_columns, eight columns per task: each
/// entry is summed over the rows in order, so the bytes are the same for every thread count.
Eigen::MatrixXd newton_hessian(const Objective& f,
                               const Eigen::VectorXd& x,
                               NewtonScratch& scratch,
                               WorkerPool* pool) {
  const Eigen::Index m = f.rows();
  const Eigen::Index p = f.dimension();
  const Eigen::VectorXd& b = f.data().labels;
  const int chunks = pass_chunks(m);
  // One pass over the dense copy of the features and the labels (then SᵀS works in cache).
  count_data_bytes(static_cast<std::int64_t>(sizeof(double)) * (scratch.features.size() + m));
  run_tasks(pool, chunks, [&](int c) {
    const RowRange rows = partition_rows(m, chunks, c);
    const auto a = scratch.features.middleRows(rows.begin, rows.size());
    const Eigen::VectorXd z = a * x;
    Eigen::VectorXd scale(rows.size());
    for (Eigen::Index r = 0; r < rows.size(); ++r) {
      scale[r] =
          std::sqrt(f.loss().second_derivative(z[r], b[rows.begin + r]) / static_cast<double>(m));
    }
    // Written a block of four columns at a time over kPackRows rows (read from L1/L2 cache).
    for (Eigen::Index r0 = 0; r0 < rows.size(); r0 += kPackRows) {
      const Eigen::Index r1 = std::min(rows.size(), r0 + kPackRows);
      for (Eigen::Index col = 0; col < p; col += 4) {
        const Eigen::Index width = std::min<Eigen::Index>(4, p - col);
        double* out = scratch.scaled.data() + internal::gram_packed_index(m, rows.begin + r0, col);
        for (Eigen::Index r = r0; r < r1; ++r, out += 4) {
          for (Eigen::Index q = 0; q < width; ++q) out[q] = a(r, col + q) * scale[r];
        }
      }
    }
  });
  const std::vector<Eigen::Index> bounds = hessian_task_columns(scratch.gram.cols());
  scratch.gram.setZero();
  run_tasks(pool, static_cast<int>(bounds.size()) - 1, [&](int t) {
    throw_if_stop_requested();  // a wide Hessian takes seconds: honour a signal within it
    internal::dense_gram_columns(scratch.scaled.data(),
                                 m,
                                 scratch.gram.cols(),
                                 bounds[static_cast<std::size_t>(t)],
                                 bounds[static_cast<std::size_t>(t) + 1],
                                 scratch.gram.data());
  });
  Eigen::MatrixXd h = scratch.gram.topLeftCorner(p, p);
  h.diagonal().array() += f.l2() + 1e-12;
  return h;
}

/// Backtracking (Armijo) along −direction from (x, value): the accepted step, or 0 when no
/// decrease can be found. A trial whose predicted decrease t·λ² is below f's rounding cannot be
/// judged, so the search ends there instead of halving on noise.
double newton_step(const Objective& f,
                   const Eigen::VectorXd& x,
                   double value,
                   const Eigen::VectorXd& direction,
                   double decrement,
                   Optimum& out,
                   WorkerPool* pool) {
  const double scale = std::max(1.0, std::abs(value));
  for (double step = 1.0;; step *= 0.5) {
    const double trial = value_only(f, x - step * direction, pool);
    out.data_passes += 1;
    if (trial <= value - 1e-4 * step * decrement) {
      return step;
    }
    if (step * decrement <= kRoundingTolerance * scale) {
      return 0.0;
    }
  }
}

/// Why Newton stops at a point of decrement λ² (empty: go on), or fails (out.failure set).
std::string newton_stop(double decrement, double value, Optimum& out) {
  const double scale = std::max(1.0, std::abs(value));
  if (!(decrement >= 0.0) || !std::isfinite(decrement)) {
    out.failure = fmt::format(
        "newton: the Hessian solve gave λ² = {} at iteration {}", decrement, out.iterations);
    return "failed";
  }
  if (0.5 * decrement <= kNewtonTolerance * scale) {
    return "newton decrement";
  }
  if (out.iterations == kNewtonIterations) {
    out.failure =
        fmt::format("newton did not reach λ²/2 ≤ {:.3g} within {} iterations (λ²/2 = {:.3g})",
                    kNewtonTolerance * scale,
                    kNewtonIterations,
                    0.5 * decrement);
    return "failed";
  }
  return "";
}

/// Damped Newton from x = 0 (models/optimum.h).
Optimum newton(const Objective& f, WorkerPool* pool) {
  NewtonScratch scratch = newton_scratch(f.data());
  count_data_bytes(f.data().stored_bytes());  // the dense copy
  Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
  Eigen::VectorXd g;
  double value = value_and_gradient(f, x, g, pool);
  Optimum out;
  out.method = "newton";
  out.iteration_limit = kNewtonIterations;
  out.data_passes = 2;  // the copy, the first gradient
  for (;;) {
    const Eigen::MatrixXd h = newton_hessian(f, x, scratch, pool);
    const Eigen::VectorXd direction = Eigen::LDLT<Eigen::MatrixXd, Eigen::Lower>(h).solve(g);
    const double decrement = g.dot(direction);  // λ² = gᵀH⁻¹g
    out.newton_decrement = decrement;
    out.data_passes += 1;
    out.stop = newton_stop(decrement, value, out);
    if (!out.stop.empty()) {
      break;
    }
    const double step = newton_step(f, x, value, direction, decrement, out, pool);
    if (step == 0.0) {
      // No decrease left to find: converged if the decrement is within the loose certificate.
      if (0.5 * decrement <= kNewtonLooseTolerance * std::max(1.0, std::abs(value))) {
        out.stop = "no decrease";
      } else {
        out.stop = "failed";
        out.failure =
            fmt::format("newton's line search found no decrease at iteration {} (λ²/2 = {:.3g})",
                        out.iterations,
                        0.5 * decrement);
      }
      break;
    }
    x -= step * direction;
    value = value_and_gradient(f, x, g, pool);
    out.data_passes += 1;
    ++out.iterations;
  }
  // Reported as every other solver's: f and ‖∇f‖ recomputed by the objective itself.
  out.value = f.value(x);
  out.gradient_norm = f.gradient(x).norm();
  out.data_passes += 2;
  out.x = std::move(x);
  out.converged = out.failure.empty();
  return out;
}

/// (AᵀA/m + λ₂I)v without forming AᵀA.
Eigen::VectorXd normal_product(const Objective& f, const Eigen::VectorXd& v) {
  const double m = static_cast<double>(f.rows());
  count_data_bytes(2 * f.data().stored_bytes());  // Av, then Aᵀ(Av)
  return std::visit(
      [&](const auto& a) -> Eigen::VectorXd {
        const Eigen::VectorXd av = a * v;
        return (a.transpose() * av) / m + f.l2() * v;
      },
      f.data().features);
}

Optimum conjugate_gradient(const Objective& f, const OptimumOptions& options) {
  const Eigen::Index p = f.dimension();
  const double tolerance = tolerance_at_zero(f, options.relative_tolerance);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  // The residual c − Hx of the normal equations is −∇f(x) exactly (least squares).
  Eigen::VectorXd r = -f.gradient(x);
  int passes = 2;  // the two gradients at 0
  Eigen::VectorXd d = r;
  double rr = r.squaredNorm();
  for (int it = 0; it < options.max_iterations; ++it) {
    if (std::sqrt(rr) <= tolerance) {
      // The recursion's residual drifts from the true one: certify on the data.
      r = -f.gradient(x);
      ++passes;
      rr = r.squaredNorm();
      if (std::sqrt(rr) <= tolerance) {
        return finish(f, std::move(x), "conjugate gradient", it, passes);
      }
    }
    throw_if_stop_requested();
    const Eigen::VectorXd hd = normal_product(f, d);
    passes += 2;
    const double curvature = d.dot(hd);
    if (!(curvature > 0.0)) {
      return failed(finish(f, std::move(x), "conjugate gradient", it, passes),
                    fmt::format("conjugate gradient met a direction of curvature {} at iteration "
                                "{}",
                                curvature,
                                it));
    }
    const double alpha = rr / curvature;
    x += alpha * d;
    if ((it + 1) % kResidualRefresh == 0) {
      r = -f.gradient(x);
      ++passes;
    } else {
      r -= alpha * hd;
    }
    const double next = r.squaredNorm();
    d = r + (next / rr) * d;
    rr = next;
  }
  return out_of_budget(
      finish(f, std::move(x), "conjugate gradient", options.max_iterations, passes), tolerance);
}

struct CurvaturePair {
  Eigen::VectorXd s;
  Eigen::VectorXd y;
  double rho = 0.0;  ///< 1 / sᵀy
};

/// −H·g by the two-loop recursion, H the L-BFGS inverse-Hessian estimate.
Eigen::VectorXd lbfgs_direction(const std::deque<CurvaturePair>& pairs, const Eigen::VectorXd& g) {
  Eigen::VectorXd q = g;
  std::vector<double> alpha(pairs.size());
  for (std::size_t i = pairs.size(); i-- > 0;) {
    alpha[i] = pairs[i].rho * pairs[i].s.dot(q);
    q -= alpha[i] * pairs[i].y;
  }
  if (!pairs.empty()) {
    const auto& last = pairs.back();
    q *= 1.0 / (last.rho * last.y.squaredNorm());
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const double beta = pairs[i].rho * pairs[i].y.dot(q);
    q += (alpha[i] - beta) * pairs[i].s;
  }
  return -q;
}

/// Keeps the pair (s, y) when it shows clear curvature, dropping the oldest past kLbfgsMemory.
void remember_pair(std::deque<CurvaturePair>& pairs, Eigen::VectorXd s, Eigen::VectorXd y) {
  const double sy = s.dot(y);
  // A convex f gives sᵀy ≥ 0; a pair without clear curvature would spoil the estimate.
  if (sy > 1e-12 * s.norm() * y.norm()) {
    pairs.push_back(CurvaturePair{std::move(s), std::move(y), 1.0 / sy});
    if (pairs.size() > kLbfgsMemory) {
      pairs.pop_front();
    }
  }
}

Optimum lbfgs(const Objective& f, const OptimumOptions& options, WorkerPool* pool) {
  const Eigen::Index p = f.dimension();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd g;
  double value = value_and_gradient(f, x, g, pool);
  int passes = 1;
  const double tolerance = options.relative_tolerance * std::max(1.0, g.norm());
  std::deque<CurvaturePair> pairs;
  Eigen::VectorXd trial;
  Eigen::VectorXd trial_g;
  for (int it = 0; it < options.max_iterations; ++it) {
    const double gnorm = g.norm();
    if (gnorm <= tolerance) {
      return finish(f, std::move(x), "l-bfgs", it, passes);
    }
    Eigen::VectorXd d = lbfgs_direction(pairs, g);
    double slope = g.dot(d);
    if (!(slope < 0.0)) {
      pairs.clear();
      d = -g;
      slope = -gnorm * gnorm;
    }
    // Without curvature pairs the first step is scaled to length 1.
    double step = pairs.empty() ? std::min(1.0, 1.0 / gnorm) : 1.0;
    bool accepted = false;
    while (step > 1e-20) {
      trial = x + step * d;
      const double trial_value = value_and_gradient(f, trial, trial_g, pool);
      ++passes;
      // Armijo; near x* the decrease falls below f's rounding, where a smaller gradient decides.
      const bool armijo = trial_value <= value + 1e-4 * step * slope;
      const bool within_rounding =
          trial_value <= value + 1e-14 * std::abs(value) && trial_g.norm() < gnorm;
      if (armijo || within_rounding) {
        accepted = true;
        value = trial_value;
        break;
      }
      step *= 0.5;
    }
    if (!accepted) {
      return failed(finish(f, std::move(x), "l-bfgs", it, passes),
                    fmt::format("l-bfgs line search found no decrease at iteration {} "
                                "(‖∇f‖ = {:.3g}, certificate {:.3g})",
                                it,
                                gnorm,
                                tolerance));
    }
    remember_pair(pairs, trial - x, trial_g - g);
    x.swap(trial);
    g.swap(trial_g);
  }
  return out_of_budget(finish(f, std::move(x), "l-bfgs", options.max_iterations, passes),
                       tolerance);
}

}  // namespace

bool exact_solver_fits(const Objective& f) {
  const double p = static_cast<double>(f.dimension());
  // Newton's Hessian is built from per-row margins: the linear losses only.
  return f.loss().traits().scalar_margin && f.dimension() <= kDenseFeatureLimit &&
         static_cast<double>(f.rows()) * p * p <= kExactWorkLimit;
}

Optimum solve_optimum(const Objective& f, const OptimumOptions& options, WorkerPool* pool) {
  STRAGGLERSIM_ASSERT(options.max_iterations >= 1, "max_iterations must be >= 1");
  STRAGGLERSIM_ASSERT(
      options.solver != OptimumOptions::Solver::kExact || f.dimension() <= kDenseFeatureLimit,
      "the exact solvers need p <= 4000");
  const bool exact = options.solver == OptimumOptions::Solver::kExact ||
                     (options.solver == OptimumOptions::Solver::kAuto && exact_solver_fits(f));
  const bool quadratic = f.loss().traits().quadratic;
  if (exact) {
    return quadratic ? normal_equations(f) : newton(f, pool);
  }
  Optimum out = quadratic ? conjugate_gradient(f, options) : lbfgs(f, options, pool);
  out.iteration_limit = options.max_iterations;
  out.stop = out.converged ? "gradient norm" : "failed";
  return out;
}

}  // namespace stragglersim::models
